"""Texts in, one vector each out: an embedder (`build_embedder`, `load_embedder`) with the library's tokenizer and
packer, as sentence-transformers' `encode` computes them.

    embedder = TextEmbedder(kbl.load_embedder(path), Vocab.from_file(f"{path}/vocab.txt"), seq_length=256)
    vectors = embedder(["A man is eating food.", "A monkey is playing drums."])      # float32 [2, D]

(`kbl.load_text_embedder(path)` finds the vocabulary and seq_length of a checkpoint: `text_embedding`.)

Speed comes from padding little: the texts are tokenised once (in chunks, by one traced tokenizer), sorted by
token count and cut into batches, so each batch, padded to its longest text rounded up to 8, holds texts of
nearly one length; the vectors are put back in the input order. One `inference_function` trace (the batch split
across the CPU's cores) serves every batch size and padded length, and a `TextEmbedder` keeps it (and the
tokenizer's) across calls: keep one for repeated calls (a query after a corpus).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from keras_bert_lite.data.features import length_order, tokenize_texts
from keras_bert_lite.models.inference import inference_function
from keras_bert_lite.models.introspect import max_positions
from keras_bert_lite.text import BertPacker, BertTokenizer, Vocab
from keras_bert_lite.utils.bounds import check_argument

DEFAULT_BATCH_SIZE = 64
TOKENS_PER_TEXT = 32  # a batch holds at most batch_size * this many tokens, padding included


class TextEmbedder:
    """An embedder model with its tokenizer: `embedder(texts) -> float32 [n, D]`.

    Args:
        model: an embedder (`build_embedder`, `load_embedder`): the three encoder inputs to `[batch, D]`.
        vocab: the model's `Vocab`, or the path of its vocab.txt / tokenizer.json; its casing is the tokenizer's.
        seq_length: the longest input in tokens, [CLS] and [SEP] included: longer texts are cut (their first
            seq_length - 2 tokens count). Default: the model's position table (max_position_embeddings); a
            sentence-transformers checkpoint's is its `max_seq_length` (`checkpoints.embedding_settings`).
        batch_size: texts per model call.
        lower_case: overrides the vocabulary's casing; one that contradicts a recorded casing is refused.

    Raises:
        ValueError: seq_length or batch_size out of range; a casing that contradicts the vocabulary's.
    """

    def __init__(
        self,
        model,
        vocab: Vocab | str,
        seq_length: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        lower_case: bool | None = None,
    ):
        positions = max_positions(model.get_layer("encoder"))
        self.seq_length = seq_length or positions
        check_argument("seq_length", self.seq_length, minimum=3, maximum=positions)  # the model's positions
        check_argument("batch_size", batch_size, minimum=1)
        self.model, self.batch_size = model, batch_size
        self.tokenizer = BertTokenizer(vocab, lower_case=lower_case)
        self.packer = BertPacker(self.seq_length, vocab=self.tokenizer.vocab, dynamic=True)
        self.dimension = int(model.output.shape[-1])
        forward = inference_function(model)
        # One trace, packing included, for every batch size and padded length.
        self._step = tf.function(
            lambda ids: forward(self.packer(ids)),
            autograph=False,
            input_signature=[tf.RaggedTensorSpec([None, None], tf.int32, ragged_rank=1)],
        )

    def __call__(self, texts) -> np.ndarray:
        """float32 `[len(texts), D]`: the vector of each text (a list of str), in order."""
        return self.embed_ids(self.token_ids(texts))

    def token_ids(self, texts) -> tf.RaggedTensor:
        """The texts' WordPiece ids, whole (not cut to seq_length): int32 RaggedTensor `[n, (tokens)]`."""
        return tokenize_texts(self.tokenizer, list(texts))

    def embed_ids(self, ids: tf.RaggedTensor, on_batch=None) -> np.ndarray:
        """float32 `[n, D]`: the vectors of tokenised texts (`token_ids`), in their order.

        Args:
            ids: int RaggedTensor `[n, (tokens)]`; rows longer than seq_length - 2 are cut.
            on_batch: called with the number of texts after each batch (progress), or None.
        """
        vectors = np.zeros([int(ids.nrows()), self.dimension], np.float32)
        order = length_order(ids)
        ids = tf.gather(tf.cast(ids[:, : self.seq_length - 2], tf.int32), order)
        for start, end in self.batches(ids.row_lengths().numpy()):
            vectors[order[start:end]] = self._step(ids[start:end]).numpy()
            if on_batch is not None:
                on_batch(end - start)
        return vectors

    def batches(self, lengths: np.ndarray) -> list[tuple[int, int]]:
        """`(start, end)` of each batch of texts with these ascending token counts: at most `batch_size` texts and
        `batch_size * TOKENS_PER_TEXT` tokens as padded (so a batch of long texts holds fewer, of closer lengths).

        Padding is the waste, and the long tail of lengths makes most of it: a fixed number of texts per batch
        pads the few long texts of the tail, spread over a wide range of lengths, to the longest of each batch
        (and attention's work grows with the square of the padded length).
        """
        padded = np.asarray(self.packer.padded_lengths)[np.searchsorted(self.packer.padded_lengths, lengths + 2)]
        budget, bounds, start = self.batch_size * TOKENS_PER_TEXT, [], 0
        while start < len(lengths):
            fits = np.arange(1, self.batch_size + 1)[: len(lengths) - start] * padded[start : start + self.batch_size]
            end = start + max(1, int(np.sum(fits <= budget)))  # fits is ascending: the batches that fit lead
            bounds.append((start, end))
            start = end
        return bounds

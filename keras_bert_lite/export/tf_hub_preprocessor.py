"""`HubPreprocessor`: our tokenizer and packer as TF Hub's BERT preprocessor SavedModel
(`bert_en_uncased_preprocess/3`).

What TF Hub's preprocessors provide (tensorflow/models `official/nlp/tools/export_tfhub_lib.py`
`create_preprocessing` and `official/nlp/modeling/layers/text_layers.py` `BertPackInputs`; TF Hub's "Common
SavedModel APIs for Text", preprocessor for Transformer encoders), and this object does:

* `__call__(text)`: tf.string `[batch]` -> int32 `[batch, seq_length]` `input_word_ids`, `input_mask`,
  `input_type_ids` (`[CLS] tokens [SEP]`, padded; seq_length the export's default, 128 in TF Hub's).
* `tokenize(text)` -> int32 RaggedTensor `[batch, (words), (wordpieces)]`; `tokenize.get_special_tokens_dict()`
  -> `start_of_sequence_id`, `end_of_segment_id`, `padding_id`, `mask_id`, `vocab_size`.
* `tokenize_with_offsets(text)` -> (tokens, start_offsets, limit_offsets), each `[batch, (words), (wordpieces)]`,
  the offsets int64 byte positions in `text` (TF Hub's export tool adds this when asked).
* `bert_pack_inputs(segments, seq_length=<default>)`: a list of 1 or 2 int32 RaggedTensors, `[batch, (tokens)]` or
  `tokenize`'s `[batch, (words), (wordpieces)]` (flattened first) -> the three inputs `[batch, seq_length]`:
  `[CLS] A [SEP]` with input_type_ids 0, then `B [SEP]` with 1, padding 0. Segments that do not fit are
  truncated round-robin, TF Hub's `round_robin_truncate_inputs`: one token at a time to each segment that still
  has some, the first segment first, until seq_length minus the special tokens is used; for two segments that
  is google-research/bert's `_truncate_seq_pair` (text/packing.py's `truncated_lengths` is that closed form).
  More than two segments is an error there and here (no traced function takes three).
* `serving_default` signature: `sentences` -> `bert_pack_inputs` (input_mask), `bert_pack_inputs_1`
  (input_type_ids), `bert_pack_inputs_2` (input_word_ids): tf_keras's names for TF Hub's Keras model (the
  `BertPackInputs` layer's name, counted over the sorted output keys).

Differences: TF Hub's tokenizer is tf_text's BertTokenizer; ours is the reference BERT tokenizer
(`keras_bert_lite.text.BertTokenizer`), which the model was trained with. They agree on ordinary text; they can
differ on rare Unicode (control and format characters, some normalisation). With `variant="portable"` the
SavedModel runs on core TensorFlow ops alone, so `hub.load` needs no `import tensorflow_text` (TF Hub's does).
"""

from __future__ import annotations

import tensorflow as tf

from keras_bert_lite.models.encoder import INPUT_NAMES
from keras_bert_lite.text import BertPacker, BertTokenizer, Vocab
from keras_bert_lite.text.packing import pack_kept, truncated_lengths

SERVING_OUTPUT_LAYER = "bert_pack_inputs"


def pack_segments(segments, seq_length, cls_id: int, sep_id: int, pad_id: int) -> dict:
    """TF Hub's `BertPackInputs.bert_pack_inputs`: 1 or 2 ragged segments -> the three int32 encoder inputs.

    Args:
        segments: list of int RaggedTensors `[batch, (tokens)]` or `[batch, (words), (wordpieces)]`.
        seq_length: int or scalar int32 tensor.
        cls_id, sep_id, pad_id: the special tokens' ids.

    Returns:
        dict of int32 `[batch, seq_length]`. Below 3 (2 for one segment), only the special tokens that fit.
    """
    if not isinstance(segments, (list, tuple)):
        segments = [segments]
    if len(segments) not in (1, 2):
        raise ValueError(
            f"bert_pack_inputs takes 1 or 2 segments (as TF Hub's BERT preprocessors), got {len(segments)}."
        )
    segments = [tf.cast(s.merge_dims(1, -1) if s.ragged_rank > 1 else s, tf.int32) for s in segments]
    lengths = [tf.cast(segment.row_lengths(), tf.int32) for segment in segments]  # [batch] each
    seq_length = tf.cast(seq_length, tf.int32)
    tf.debugging.assert_non_negative(seq_length, message="bert_pack_inputs: seq_length must be 0 or more")
    if len(segments) == 1:
        kept = [tf.minimum(lengths[0], tf.maximum(seq_length - 2, 0))]
    else:
        kept = list(truncated_lengths(lengths[0], lengths[1], tf.maximum(seq_length - 3, 0)))
    packed = pack_kept(segments, kept, tf.maximum(seq_length, len(segments) + 1), cls_id, sep_id, pad_id)
    return {name: tensor[:, :seq_length] for name, tensor in packed.items()}


class _Callable(tf.train.Checkpoint):
    """A SavedModel sub-object whose `__call__` (and other attributes) are set by its owner."""


class HubPreprocessor(tf.train.Checkpoint):
    """The root object of a TF Hub preprocessor SavedModel; save it with `tf.saved_model.save(obj, dir,
    signatures=obj.signatures())`.

    Args:
        vocab: the `Vocab` (its casing decides lower-casing unless `lower_case` is given).
        seq_length: the default sequence length (`__call__`, and `bert_pack_inputs` without `seq_length`).
        lower_case: True for an uncased vocabulary; default the vocabulary's own.
        variant: the tokenizer's op set: "portable" (core TensorFlow only) or "default" (tf_text's
            FastWordpiece; loading needs `import tensorflow_text`).
    """

    def __init__(self, vocab: Vocab, seq_length: int = 128, lower_case: bool | None = None, variant: str = "portable"):
        super().__init__()
        self.seq_length = seq_length
        self.tokenizer = BertTokenizer(vocab, lower_case=lower_case, variant=variant)
        self.packer = BertPacker(seq_length, vocab=vocab)
        self._is_continuation = tf.constant(vocab.is_continuation)
        self._special = {
            "start_of_sequence_id": vocab.cls_id,
            "end_of_segment_id": vocab.sep_id,
            "padding_id": vocab.pad_id,
            "mask_id": vocab.mask_id,
            "vocab_size": len(vocab),
        }
        text = tf.TensorSpec([None], tf.string)

        # Graph code throughout (Python branches only): traced without autograph, which would rewrite the source
        # of the tokenizer and the packer first.
        self.__call__ = tf.function(self._preprocess, input_signature=[text], autograph=False)
        special_tokens = tf.function(lambda: dict(self._special), input_signature=[])
        self.tokenize = _Callable()
        self.tokenize.__call__ = tf.function(self._tokenize, input_signature=[text], autograph=False)
        self.tokenize.get_special_tokens_dict = _Callable()
        self.tokenize.get_special_tokens_dict.__call__ = special_tokens
        self.tokenize_with_offsets = _Callable()
        self.tokenize_with_offsets.__call__ = tf.function(
            self._tokenize_with_offsets, input_signature=[text], autograph=False
        )
        self.tokenize_with_offsets.get_special_tokens_dict = self.tokenize.get_special_tokens_dict

        # As TF Hub's wrapper: traced for 1 or 2 segments of ragged rank 1 or 2, seq_length a scalar tensor
        # with the export's default.
        self.bert_pack_inputs = _Callable()
        default_seq_length = seq_length

        def bert_pack_inputs(inputs, seq_length=default_seq_length):
            return pack_segments(inputs, seq_length, vocab.cls_id, vocab.sep_id, vocab.pad_id)

        self.bert_pack_inputs.__call__ = tf.function(bert_pack_inputs, autograph=False)
        for ragged_rank in (1, 2):
            for count in (1, 2):
                self.bert_pack_inputs.__call__.get_concrete_function(
                    [tf.RaggedTensorSpec([None] * (ragged_rank + 1), tf.int32) for _ in range(count)],
                    seq_length=tf.TensorSpec([], tf.int32),
                )
        self._serve = tf.function(
            self._serving_default, input_signature=[tf.TensorSpec([None], tf.string, name="sentences")], autograph=False
        )

    def _preprocess(self, inputs):
        return self.packer(self.tokenizer.tokenize(inputs))

    def _words(self, flat):
        """Regroups ragged `[batch, (tokens)]` as `[batch, (words), (wordpieces)]` (a word's first piece is
        never a "##" continuation, every later one is)."""
        begins = tf.logical_not(tf.gather(self._is_continuation, flat.flat_values))
        starts = tf.where(begins)[:, 0]
        pieces = tf.RaggedTensor.from_row_starts(flat.flat_values, starts, validate=False)
        words_before = tf.concat([[0], tf.cumsum(tf.cast(begins, tf.int64))], axis=0)
        return tf.RaggedTensor.from_row_splits(pieces, tf.gather(words_before, flat.row_splits), validate=False)

    def _tokenize(self, inputs):
        return self._words(self.tokenizer.tokenize(inputs))

    def _tokenize_with_offsets(self, inputs):
        ids, starts, ends, _ = self.tokenizer.tokenize_with_offsets(inputs)
        words = self._words(ids)
        return words, words.with_flat_values(starts.flat_values), words.with_flat_values(ends.flat_values)

    def _serving_default(self, sentences):
        out = self._preprocess(sentences)
        names = [SERVING_OUTPUT_LAYER] + [f"{SERVING_OUTPUT_LAYER}_{i}" for i in range(1, len(INPUT_NAMES))]
        return dict(zip(names, (out[k] for k in sorted(INPUT_NAMES))))

    def signatures(self) -> dict:
        return {"serving_default": self._serve.get_concrete_function()}

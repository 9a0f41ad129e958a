"""`embed`: one vector per text from a checkpoint or an embedder model, as sentence-transformers' `encode` gives
them (all-MiniLM-L6-v2: the same vectors to 1e-5).

    import keras_bert_lite as kbl
    vectors = kbl.embed("all-MiniLM-L6-v2/", ["A man is eating food.", "A monkey is playing drums."])  # [2, 384]
    embedder = kbl.load_text_embedder("all-MiniLM-L6-v2/")     # keep it for repeated calls: traced once
    query = embedder(["Who is eating?"])[0]

Command line: `kbl-embed`. The work itself (tokenising, batching by length, the model calls) is
`models.text_embedder.TextEmbedder`'s; this module finds what a checkpoint says: its pooling (`load_embedder`),
its vocabulary beside it and its sentence-transformers `max_seq_length`.
"""

from __future__ import annotations

import keras
import numpy as np

from keras_bert_lite import artifacts
from keras_bert_lite.checkpoints import embedding_settings, load_embedder
from keras_bert_lite.models.text_embedder import DEFAULT_BATCH_SIZE, TextEmbedder
from keras_bert_lite.text import Vocab


def load_text_embedder(
    model_or_path,
    *,
    vocab: Vocab | str | None = None,
    lower_case: bool | None = None,
    seq_length: int | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> TextEmbedder:
    """A `TextEmbedder` (`embedder(texts) -> float32 [n, D]`) for a checkpoint or an embedder model.

    Args:
        model_or_path: an embedder model (`build_embedder`), or anything `load_embedder` reads: a
            sentence-transformers directory (pooled and normalised as its files say), a Hugging Face directory or
            Hub name, an original TF1 checkpoint (mean-pooled), a keras_bert_lite run directory or `.keras` file.
        vocab: a `Vocab` or a vocab.txt / tokenizer.json path; default: the one beside `model_or_path` (a path).
        lower_case: overrides the vocabulary's casing; one that contradicts a recorded casing is refused.
        seq_length: the longest input in tokens (longer texts are cut); default: the checkpoint's
            sentence-transformers `max_seq_length`, else the model's position table.
        batch_size: texts per model call.

    Raises:
        ValueError: no vocabulary, or one that does not fit the model; seq_length or batch_size out of range.
    """
    is_path = not isinstance(model_or_path, keras.Model)
    model = load_embedder(model_or_path) if is_path else model_or_path
    vocab = artifacts.vocab_for(model_or_path, vocab, model.get_layer("encoder").get_layer("embeddings").vocab_size)
    settings = embedding_settings(model_or_path) if is_path and seq_length is None else None
    return TextEmbedder(
        model, vocab, seq_length or (settings and settings.max_seq_length) or None, batch_size, lower_case=lower_case
    )


def embed(
    model_or_path,
    texts,
    *,
    vocab: Vocab | str | None = None,
    lower_case: bool | None = None,
    seq_length: int | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> np.ndarray:
    """float32 `[len(texts), D]`: the vector of each text (a list of str), in order (`load_text_embedder`'s
    arguments). Each call loads and traces anew: for repeated calls, keep a `load_text_embedder`."""
    return load_text_embedder(
        model_or_path, vocab=vocab, lower_case=lower_case, seq_length=seq_length, batch_size=batch_size
    )(list(texts))

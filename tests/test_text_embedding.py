"""kbl.embed / kbl.load_text_embedder: a checkpoint's vocabulary, casing and sentence-transformers max_seq_length
found beside it, so that all-MiniLM-L6-v2's vectors of the golden texts (every length, 11 scripts, empty, blank,
cut at 256 tokens) equal sentence-transformers' `encode(normalize_embeddings=True)` to 1e-5."""

import numpy as np
import pytest

import keras_bert_lite as kbl
from tests.conftest import GOLDEN_DIR


def test_minilm_vectors_of_texts_equal_sentence_transformers(minilm_dir):
    golden = np.load(GOLDEN_DIR / "minilm_embeddings.npz")
    embedder = kbl.load_text_embedder(minilm_dir)
    assert embedder.seq_length == 256 and embedder.tokenizer.lower_case  # its max_seq_length, its casing
    vectors = embedder([str(text) for text in golden["texts"]])
    assert np.abs(vectors - golden["embeddings"]).max() <= 1e-5
    np.testing.assert_array_equal(
        kbl.embed(embedder.model, golden["texts"][:3], vocab=f"{minilm_dir}/vocab.txt", seq_length=256), vectors[:3]
    )


def test_a_model_object_needs_its_vocabulary(tiny_config):
    with pytest.raises(ValueError, match="a model object; pass vocab="):
        kbl.embed(kbl.build_embedder(tiny_config), ["a text"])

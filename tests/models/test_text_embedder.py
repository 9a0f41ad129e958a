"""TextEmbedder: texts batched by length give each text's own vector, in input order, from one trace for every
batch; a batch holds at most batch_size texts and batch_size * TOKENS_PER_TEXT tokens as padded."""

import numpy as np
import pytest

import keras_bert_lite as kbl
from keras_bert_lite.models.text_embedder import TOKENS_PER_TEXT, TextEmbedder
from keras_bert_lite.text import Vocab
from tests.conftest import GOLDEN_DIR

TINY = str(GOLDEN_DIR / "hf_tiny_masked_lm")  # L2 H32, 64 positions, 120 tokens


@pytest.fixture(scope="module")
def tiny():
    return kbl.load_embedder(TINY), Vocab.from_file(f"{TINY}/vocab.txt")


def varied_texts(count=13, seed=0):
    rng = np.random.default_rng(seed)
    words = ["the", "cat", "sat", "on", "mat", "paris", "walking", "unbelievably", "dog", "house", "big", "red"]
    return [" ".join(rng.choice(words, size=rng.integers(0, 40))) for _ in range(count)]


def test_batched_by_length_each_text_gets_its_own_vector_in_input_order(tiny):
    model, vocab = tiny
    embedder = TextEmbedder(model, vocab, batch_size=3)
    texts = varied_texts()
    alone = np.concatenate([embedder.model(embedder.packer(embedder.tokenizer.tokenize([t]))).numpy() for t in texts])
    vectors = embedder(texts)
    assert vectors.dtype == np.float32 and vectors.shape == (len(texts), 32)
    np.testing.assert_allclose(vectors, alone, atol=1e-5, rtol=0)
    assert len(embedder.batches(np.sort(embedder.token_ids(texts).row_lengths().numpy()))) > 4  # several batches


def test_one_trace_serves_every_batch_and_call(tiny):
    embedder = TextEmbedder(*tiny, batch_size=4)
    embedder(varied_texts(9, seed=1))
    embedder(["a", "the cat sat on the mat"])
    assert embedder._step.experimental_get_tracing_count() == 1


def test_a_batch_holds_at_most_batch_size_texts_and_its_token_budget(tiny):
    embedder = TextEmbedder(*tiny, batch_size=4)  # at most 4 texts and 4 * 32 = 128 padded tokens
    assert TOKENS_PER_TEXT == 32
    # Padded ([CLS], [SEP], to a multiple of 8): 8 x5, 32 x2, 64 x4.
    lengths = np.array([1, 1, 1, 1, 1, 30, 30, 62, 62, 62, 62])
    assert embedder.batches(lengths) == [(0, 4), (4, 7), (7, 9), (9, 11)]
    assert TextEmbedder(*tiny, batch_size=1).batches(lengths[-3:]) == [(0, 1), (1, 2), (2, 3)]  # over budget: 1


def test_no_texts_and_settings_out_of_range(tiny):
    assert TextEmbedder(*tiny)([]).shape == (0, 32)
    with pytest.raises(ValueError, match="seq_length must be .*<= 64, got 65"):
        TextEmbedder(*tiny, seq_length=65)
    with pytest.raises(ValueError, match="batch_size must be >= 1, got 0"):
        TextEmbedder(*tiny, batch_size=0)

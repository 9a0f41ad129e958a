"""SentencePooling computes sentence-transformers' Pooling (and Normalize) over the real tokens only."""

import numpy as np
import pytest

from keras_bert_lite.layers import SentencePooling

rng = np.random.default_rng(0)
X = rng.normal(size=(3, 6, 8)).astype("float32")
MASK = np.array([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1], [1, 0, 0, 0, 0, 0]], "int32")


def reference(mode, x, mask):
    """sentence-transformers' Pooling.forward, in numpy."""
    m = mask[:, :, None].astype("float32")
    count = np.maximum(m.sum(1), 1e-9)
    if mode == "cls":
        return x[:, 0]
    if mode == "max":
        return np.where(m > 0, x, -1e9).max(1)
    return (x * m).sum(1) / (count if mode == "mean" else np.sqrt(count))


@pytest.mark.parametrize("mode", ["cls", "mean", "max", "mean_sqrt_len"])
def test_each_mode_ignores_padding(mode):
    out = SentencePooling(mode)(X, MASK).numpy()
    np.testing.assert_allclose(out, reference(mode, X, MASK), rtol=1e-6, atol=1e-6)
    padded = X.copy()
    padded[MASK == 0] = 1e3  # garbage in the padding changes nothing
    np.testing.assert_array_equal(SentencePooling(mode)(padded, MASK).numpy(), out)


def test_modes_are_joined_in_order_and_normalised():
    out = SentencePooling(("max", "mean"), normalize=True)(X, MASK).numpy()
    joined = np.concatenate([reference("max", X, MASK), reference("mean", X, MASK)], axis=-1)
    np.testing.assert_allclose(out, joined / np.linalg.norm(joined, axis=1, keepdims=True), rtol=1e-6, atol=1e-6)
    assert out.shape == (3, 16) and out.dtype == np.float32


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="pooling modes must be among"):
        SentencePooling("weightedmean")

"""The activations BertConfig names: exact GELU (erf), the original BERT tanh GELU, ReLU."""

import math

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.layers.activations import get_activation

GRID = np.linspace(-12.0, 12.0, 4001, dtype=np.float32)


def _reference(name: str, x: float) -> float:
    if name == "gelu":                       # HF's "gelu": x * Phi(x)
        return 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0)))
    if name == "gelu_approx":                # google-research/bert modeling.py's gelu
        return 0.5 * x * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    return max(x, 0.0)


@pytest.mark.parametrize("name", ["gelu", "gelu_approx", "relu"])
@pytest.mark.parametrize("mode", ["eager", "graph", "xla"])
def test_activation_matches_its_formula_in_every_execution_mode(name, mode):
    fn = get_activation(name)
    if mode != "eager":
        fn = tf.function(fn, jit_compile=mode == "xla")
    got = np.asarray(fn(tf.constant(GRID)))
    want = np.array([_reference(name, float(x)) for x in GRID])
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


def test_exact_and_tanh_gelu_differ_where_the_parity_trap_is():
    # The two GELUs disagree by up to 4.7e-4 (at |x| ~ 2.7): importing an original checkpoint with the exact
    # form (or an HF one with the tanh form) gives wrong outputs, so the names must never be mixed up.
    x = tf.constant(GRID)
    gap = np.abs(np.asarray(get_activation("gelu")(x)) - np.asarray(get_activation("gelu_approx")(x)))
    assert 1e-4 < gap.max() < 1e-3


def test_unknown_activation_names_the_choices():
    with pytest.raises(ValueError, match="'gelu', 'gelu_approx' or 'relu'"):
        get_activation("swish")

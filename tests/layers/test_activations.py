"""The activations BertConfig names: exact GELU (erf), the original BERT tanh GELU, ReLU."""

import math

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.layers import TransformerEncoderBlock
from keras_bert_lite.layers.activations import get_activation, get_training_activation

GRID = np.linspace(-12.0, 12.0, 4001, dtype=np.float32)


def _reference(name: str, x: float) -> float:
    if name == "gelu":  # HF's "gelu": x * Phi(x)
        return 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0)))
    if name == "gelu_approx":  # google-research/bert modeling.py's gelu
        return 0.5 * x * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
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


@pytest.mark.parametrize("name", ["gelu", "gelu_approx"])
@pytest.mark.parametrize("dtype, tol", [("float32", 2e-6), ("bfloat16", 1e-2)])
def test_fused_training_gelu_has_the_plain_forms_value_and_gradient(name, dtype, tol):
    x = tf.cast(tf.constant(GRID), dtype)
    dy = tf.cast(tf.constant(np.cos(GRID)), dtype)  # a non-trivial upstream gradient

    def value_and_grad(fn):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        return y, tape.gradient(y, x, output_gradients=dy)

    plain, fused = get_activation(name), get_training_activation(name)
    for mode in ("eager", "graph"):
        run = value_and_grad if mode == "eager" else tf.function(value_and_grad)
        (want_y, want_dx), (got_y, got_dx) = run(plain), run(fused)
        assert got_y.dtype == got_dx.dtype == x.dtype
        np.testing.assert_allclose(
            np.asarray(tf.cast(got_y, tf.float32)), np.asarray(tf.cast(want_y, tf.float32)), rtol=tol, atol=tol
        )
        np.testing.assert_allclose(
            np.asarray(tf.cast(got_dx, tf.float32)), np.asarray(tf.cast(want_dx, tf.float32)), rtol=tol, atol=tol
        )


def test_relu_has_no_separate_training_form():
    assert get_training_activation("relu") is get_activation("relu")


@pytest.mark.parametrize("hidden_act", ["gelu", "gelu_approx"])
def test_encoder_block_uses_the_fused_gelu_in_training_only_and_computes_the_same(hidden_act):
    block = TransformerEncoderBlock(16, 2, 32, hidden_act=hidden_act, hidden_dropout=0.0, attention_dropout=0.0)
    x = tf.random.stateless_normal((2, 5, 16), seed=(1, 2))
    mask = tf.constant([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    outputs, grads = {}, {}
    for training in (False, True):
        with tf.GradientTape() as tape:
            y = block(x, mask, training=training)
            loss = tf.reduce_sum(y * tf.sin(y))
        outputs[training] = np.asarray(y)
        grads[training] = [np.asarray(g) for g in tape.gradient(loss, block.trainable_weights)]
    np.testing.assert_allclose(outputs[True], outputs[False], rtol=1e-5, atol=1e-5)
    for got, want in zip(grads[True], grads[False]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)

    calls = []
    block.training_activation = lambda h: calls.append(h) or get_activation(hidden_act)(h)
    block(x, mask, training=False)
    assert not calls
    block(x, mask, training=True)
    assert len(calls) == 1

"""FusedLayerNorm: Keras' LayerNormalization to float32 rounding, and the fused kernels TensorFlow runs for it."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.layers import FusedLayerNorm, TransformerEncoderBlock
from keras_bert_lite.utils import tf_internals
from keras_bert_lite.utils.tf_internals import onednn_enabled
from tests.layers.grappler import optimized_graph

H = 16


@pytest.fixture
def rng():
    """A fresh generator for each test: its inputs do not depend on the tests run before it on its worker."""
    return np.random.default_rng(0)


def pair(shape, rng):
    """(ours, Keras') with the same random gamma/beta, built for `shape`."""
    ours, theirs = FusedLayerNorm(epsilon=1e-12), keras.layers.LayerNormalization(epsilon=1e-12)
    for layer in (ours, theirs):
        layer.build(shape)
    weights = [rng.normal(size=(H,)).astype("float32") for _ in range(2)]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    return ours, theirs


def run(fn, x, how):
    if how == "eager":
        return fn(x)
    if how == "dynamic_shapes":  # as exports and Keras' predict trace it
        spec = tf.TensorSpec([None] * (len(x.shape) - 1) + [H], tf.float32)
        return tf.function(fn, input_signature=[spec])(x)
    return tf.function(fn, jit_compile=how == "xla")(x)


def exact(x, gamma, beta, eps=1e-12):
    """LayerNorm of float32 `x` in float64."""
    x = x.astype(np.float64)
    centered = x - x.mean(-1, keepdims=True)
    return centered / np.sqrt((centered**2).mean(-1, keepdims=True) + eps) * gamma + beta


@pytest.mark.parametrize("how", ["eager", "graph", "dynamic_shapes", "xla"])
@pytest.mark.parametrize("shape", [(24, H), (3, 8, H)])
def test_equals_keras_layer_normalization(shape, how, rng):
    ours, theirs = pair(shape, rng)
    gamma, beta = ours.get_weights()
    rows = shape[:-1] + (1,)
    x = (rng.normal(size=shape) * rng.choice([0.1, 1.0, 30.0], size=rows) + rng.normal(size=rows)).astype("float32")
    got = run(ours, tf.constant(x), how).numpy()
    np.testing.assert_allclose(got, run(theirs, tf.constant(x), how).numpy(), atol=1e-5)
    np.testing.assert_allclose(got, exact(x, gamma, beta), atol=5e-6)
    # Rows whose spread is tiny next to their mean lose digits in float32 whichever way LayerNorm is written
    # (~3e-3 here): ours must lose no more than Keras' does, on average over 512 rows (the largest error of a few
    # rows is too noisy to compare: either layer's can be the larger).
    many = (512, H) if len(shape) == 2 else (8, 64, H)
    x = (rng.normal(size=many) * 1e-3 + rng.normal(size=many[:-1] + (1,)) * 10).astype("float32")
    error = lambda layer: np.abs(run(layer, tf.constant(x), how).numpy() - exact(x, gamma, beta)).mean()  # noqa: E731
    assert error(ours) <= 1.5 * error(theirs)


@pytest.mark.parametrize("how", ["graph", "xla"])
def test_gradients_equal_keras(how, rng):
    ours, theirs = pair((3, 8, H), rng)
    x = tf.constant(rng.normal(size=(3, 8, H)).astype("float32") * 3 + 1)
    upstream = tf.constant(rng.normal(size=(3, 8, H)).astype("float32"))

    def grads(layer):
        def fn(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                loss = tf.reduce_sum(layer(x) * upstream)
            return tape.gradient(loss, [x, *layer.trainable_variables])

        return [g.numpy() for g in tf.function(fn, jit_compile=how == "xla")(x)]

    for got, expected in zip(grads(ours), grads(theirs)):
        np.testing.assert_allclose(got, expected, atol=5e-5, rtol=1e-4)


def optimized_ops(fn, *args) -> list:
    """Op types of `fn`'s graph after Grappler, from its first (tracing) call."""
    return [node.op for node in optimized_graph(fn, *args).node]


needs_onednn = pytest.mark.skipif(not onednn_enabled(), reason="TensorFlow's oneDNN kernels are off")


def cpu_flags() -> set:
    """The CPU's feature flags (Linux's /proc/cpuinfo; empty elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return next((set(line.split(":", 1)[1].split()) for line in f if line.startswith("flags")), set())
    except OSError:
        return set()


# TensorFlow's remapper fuses bfloat16 oneDNN kernels only where the CPU has AVX-512 (or AVX-NE-CONVERT): on an
# AVX2-only CPU the bfloat16 graph keeps its separate ops.
needs_onednn_bfloat16 = pytest.mark.skipif(
    not (onednn_enabled() and cpu_flags() & {"avx512f", "avx_ne_convert"}),
    reason="oneDNN fuses bfloat16 kernels only on AVX-512 CPUs",
)


@needs_onednn
@pytest.mark.parametrize("static", [True, False], ids=["static_shapes", "dynamic_shapes"])
def test_encoder_block_inference_runs_as_fused_kernels(static, rng):
    """An encoder block's forward pass: every projection one fused MatMul (with its bias; the attention output
    and FFN output also with the residual Add; the FFN input with the GELU), each LayerNorm one kernel."""
    block = TransformerEncoderBlock(H, 4, 32, hidden_dropout=0.0, attention_dropout=0.0)
    x, mask = tf.constant(rng.normal(size=(2, 8, H)).astype("float32")), tf.ones((2, 8), tf.int32)
    block(x, mask)
    signature = None if static else [tf.TensorSpec([None, None, H]), tf.TensorSpec([None, None], tf.int32)]
    ops = optimized_ops(tf.function(lambda x, m: block(x, m, training=False), input_signature=signature), x, mask)
    assert ops.count("_MklLayerNorm") == 2 and "FusedBatchNormV3" not in ops
    assert ops.count("_FusedMatMul") == 4 and "MatMul" not in ops and "BiasAdd" not in ops
    # With unknown dimensions Grappler cannot prove that the attention output and the residual have the same
    # number of rows (they come from different reshapes), so that one Add stays separate.
    assert ops.count("AddV2") == (0 if static else 1), ops


@needs_onednn_bfloat16
def test_bfloat16_encoder_block_runs_each_layer_norm_as_one_kernel(rng):
    """Under mixed_bfloat16 the LayerNorms take their bfloat16 inputs as they are: no cast to float32 in front of
    the kernel that would keep Grappler from fusing it (and gamma/beta) into one _MklLayerNorm."""
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    block = TransformerEncoderBlock(H, 4, 32, hidden_dropout=0.0, attention_dropout=0.0)
    x, mask = tf.constant(rng.normal(size=(2, 8, H)), tf.bfloat16), tf.ones((2, 8), tf.int32)
    block(x, mask)
    ops = optimized_ops(tf.function(lambda x, m: block(x, m, training=False)), x, mask)
    assert ops.count("_MklLayerNorm") == 2 and "FusedBatchNormV3" not in ops, ops


@needs_onednn
def test_keras_form_where_no_fused_kernel_exists(monkeypatch, rng):
    ours, _ = pair((4, H), rng)
    x = tf.ones((4, H))
    ops_of = lambda fn: {op.type for op in fn.get_concrete_function(x).graph.get_operations()}  # noqa: E731
    assert "FusedBatchNormV3" in ops_of(tf.function(ours))
    assert "FusedBatchNormV3" not in ops_of(tf.function(ours, jit_compile=True))  # XLA fuses Keras' form
    monkeypatch.setattr(tf_internals, "cpu_only", lambda: False)
    assert "FusedBatchNormV3" not in ops_of(tf.function(ours))  # a GPU is visible


def test_mixed_precision_computes_in_float32(rng):
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    ours = FusedLayerNorm(epsilon=1e-12)
    x = rng.normal(size=(4, H)).astype("float32") * 100 + 1000  # bfloat16 statistics would be far off
    y = tf.function(ours)(tf.constant(x, tf.bfloat16))
    assert y.dtype == tf.bfloat16 and ours.gamma.dtype == "float32"
    expected = keras.layers.LayerNormalization(epsilon=1e-12, dtype="float32")(
        tf.cast(tf.constant(x, tf.bfloat16), tf.float32)
    )
    np.testing.assert_allclose(tf.cast(y, tf.float32).numpy(), expected.numpy(), atol=0.05)

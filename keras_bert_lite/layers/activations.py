"""The three activations a BertConfig may name, and the GELUs' fused form for training."""

import functools
import math

import keras
import tensorflow as tf
from keras import ops


def gelu(x):
    """Exact GELU, `x * Phi(x) = 0.5 * x * (1 + erf(x / sqrt(2)))` (Hendrycks & Gimpel 2016).

    Written with `erf`, as Hugging Face's "gelu" is, not through `keras.activations.gelu`, whose TensorFlow
    form is `0.5 * x * erfc(-x / sqrt(2))`: the two agree to float32 rounding (max |diff| 1e-6 through a
    tiny encoder), but XLA:CPU expands `erfc` into two rational approximations joined by selects and `erf`
    into one, so under XLA the `erf` form is the cheaper one. In graph mode
    TensorFlow's oneDNN rewrite fuses either form with the preceding matmul into the same kernel.
    """
    return 0.5 * x * (1.0 + ops.erf(x * (1.0 / math.sqrt(2.0))))


def get_activation(name: str):
    """Returns the activation function for `name`.

    Args:
        name: "gelu" (exact, erf — Hugging Face's "gelu"), "gelu_approx" (tanh form — the original BERT
            code's "gelu") or "relu".
    """
    if name == "gelu":
        return gelu
    if name == "gelu_approx":
        return lambda x: keras.activations.gelu(x, approximate=True)
    if name == "relu":
        return keras.activations.relu
    raise ValueError(f"Unknown activation {name!r}; use 'gelu', 'gelu_approx' or 'relu'.")


def get_training_activation(name: str):
    """Returns the activation for `name` as the encoder block runs it in training: for the two GELUs, the
    value and the gradient each as one XLA kernel (`fused_gelu`); ReLU as it is.

    Inference keeps `get_activation`'s form, which TensorFlow's oneDNN rewrite fuses into the preceding
    matmul; in training that fusion does not apply (the gradient reads the GELU's intermediate tensors).
    """
    if name in ("gelu", "gelu_approx"):
        return functools.partial(fused_gelu, approximate=name == "gelu_approx")
    return get_activation(name)


def fused_gelu(x, approximate=False):
    """GELU (exact, or the tanh form with `approximate`) with its value and its gradient as one XLA kernel each.

    TensorFlow runs `gelu` as 5 element-wise ops and its gradient as 9 more (square, negate, exp and six
    products), each one pass over the `[b*s, I]` FFN activations. Here the forward pass is one kernel reading
    `x` and writing the output, and the backward pass one kernel reading `x` and `dy` and writing `dx`,
    recomputing `erf(x)` there rather than keeping it from the forward pass (which would write and read one
    more `[b*s, I]` tensor). Values and gradients equal the plain form's to float32 rounding; the math runs in
    float32 for bfloat16/float16 inputs.

    Args:
        x: any shape, float.
        approximate: the tanh form (google-research/bert's `gelu`) instead of the exact erf one.

    Returns:
        GELU(x), same shape and dtype.
    """
    # A plain function around the tf.custom_gradient one: autograph cannot convert that one when it is called
    # directly in a tf.function.
    return _FUSED_GELU[bool(approximate)](x)


def _fused_gelu_with(approximate: bool):
    @tf.custom_gradient
    def gelu_with_fused_gradient(x):
        return _gelu_value(x, approximate), lambda dy: _gelu_gradient(x, dy, approximate)

    return gelu_with_fused_gradient


def _gelu_and_slope(x, approximate):
    """float32 x -> (GELU(x), d GELU / dx)."""
    if approximate:  # 0.5 x (1 + tanh(k (x + a x^3)))
        k, a = math.sqrt(2.0 / math.pi), 0.044715
        t = tf.tanh(k * (x + a * x * x * x))
        return 0.5 * x * (1.0 + t), 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * a * x * x)
    cdf = 0.5 * (1.0 + tf.math.erf(x * (1.0 / math.sqrt(2.0))))  # Phi(x)
    pdf = tf.exp(-0.5 * x * x) * (1.0 / math.sqrt(2.0 * math.pi))  # phi(x)
    return x * cdf, cdf + x * pdf


@tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
def _gelu_value(x, approximate):
    value, _ = _gelu_and_slope(tf.cast(x, tf.float32), approximate)  # XLA drops the unused slope
    return tf.cast(value, x.dtype)


@tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
def _gelu_gradient(x, dy, approximate):
    _, slope = _gelu_and_slope(tf.cast(x, tf.float32), approximate)
    return tf.cast(tf.cast(dy, tf.float32) * slope, dy.dtype)


_FUSED_GELU = {False: _fused_gelu_with(False), True: _fused_gelu_with(True)}

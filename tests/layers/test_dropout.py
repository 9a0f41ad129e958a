"""Uint16MaskDropout: Keras' dropout with a 16-bit mask: drop rate, expected value, gradient, seeding, fallbacks."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.layers import Uint16MaskDropout

RATE = 0.1
THRESHOLD = round(RATE * 65536)  # 6554: P(drop) = 0.100006
SCALE = np.float32(65536 / (65536 - THRESHOLD))  # 1.1111193, not Keras' 1 / 0.9 = 1.1111112
KERAS_SCALE = np.float32(1 / (1 - RATE))


def test_config_is_keras_dropout_config():
    ours, theirs = Uint16MaskDropout(RATE, seed=3, name="d"), keras.layers.Dropout(RATE, seed=3, name="d")
    assert ours.get_config() == theirs.get_config()
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(ours))
    assert type(restored) is Uint16MaskDropout and restored.get_config() == ours.get_config()


@pytest.mark.parametrize("how", ["eager", "graph", "xla"])
def test_drop_rate_expected_value_and_scale(how):
    x = tf.ones([64, 128, 256])  # 2M elements: rate's std 0.0002
    layer = Uint16MaskDropout(RATE, seed=1)
    fn = (
        (lambda t: layer(t, training=True))
        if how == "eager"
        else tf.function(lambda t: layer(t, training=True), jit_compile=how == "xla")
    )
    y = fn(x).numpy()
    dropped = y == 0
    assert abs(dropped.mean() - THRESHOLD / 65536) < 0.001
    np.testing.assert_array_equal(y[~dropped], SCALE)  # the 16-bit path ran, with the exact scale
    assert abs(y.mean() - 1.0) < 0.002
    # Neighbouring elements come from the two halves of one uint32: they must still be independent.
    pair_both_dropped = (dropped[..., 0::2] & dropped[..., 1::2]).mean()
    assert abs(pair_both_dropped - RATE**2) < 0.001


def test_inference_is_identity_and_masks_change_per_call():
    layer = Uint16MaskDropout(RATE, seed=2)
    x = tf.random.normal([8, 16, 32])
    np.testing.assert_array_equal(layer(x, training=False), x)
    first, second = layer(x, training=True).numpy(), layer(x, training=True).numpy()
    assert not np.array_equal(first == 0, second == 0)


def test_same_seed_same_masks():
    x = tf.ones([4, 16, 32])
    a, b = Uint16MaskDropout(RATE, seed=7), Uint16MaskDropout(RATE, seed=7)
    for _ in range(2):
        np.testing.assert_array_equal(a(x, training=True), b(x, training=True))


def test_gradient_is_mask_times_scale():
    layer = Uint16MaskDropout(RATE, seed=4)
    x = tf.random.normal([16, 32, 64])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x, training=True)
        loss = tf.reduce_sum(y * 3.0)
    grad = tape.gradient(loss, x).numpy()
    kept = y.numpy() != 0
    np.testing.assert_array_equal(grad, np.where(kept, 3.0 * SCALE, 0.0).astype(np.float32))


def test_mixed_precision_keeps_dtype():
    layer = Uint16MaskDropout(RATE, seed=5, dtype="mixed_bfloat16")
    y = layer(tf.ones([32, 64, 128], tf.bfloat16), training=True)
    assert y.dtype == tf.bfloat16
    assert abs(float(tf.reduce_mean(tf.cast(y == 0, tf.float32))) - RATE) < 0.005


@pytest.mark.parametrize("shape,noise_shape", [((64, 64, 255), None), ((64, 64, 256), (64, 1, 256))])
def test_falls_back_to_keras(shape, noise_shape):
    """An odd last dimension or a noise_shape: Keras' implementation (its scale 1/(1-rate)) runs."""
    y = Uint16MaskDropout(RATE, noise_shape=noise_shape, seed=6)(tf.ones(shape), training=True).numpy()
    np.testing.assert_array_equal(y[y != 0], KERAS_SCALE)
    assert abs((y == 0).mean() - RATE) < 0.01


@pytest.mark.parametrize("rate", [0.0, 1.0, 1e-6])
def test_extreme_rates(rate):
    x = tf.random.normal([4, 8, 16])
    y = Uint16MaskDropout(rate, seed=8)(x, training=True).numpy()
    if rate == 1.0:
        np.testing.assert_array_equal(y, 0.0)
    else:  # 0, and 1e-6 (rounds to 0 of 65536 levels): Keras' path keeps all
        np.testing.assert_allclose(y, x.numpy() / (1 - rate), rtol=1e-6)

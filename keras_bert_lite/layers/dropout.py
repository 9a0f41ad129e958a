"""`Uint16MaskDropout`: dropout whose mask draws 16 random bits per element instead of a float32 uniform (half the
random-number work).
"""

import keras
import tensorflow as tf

from keras_bert_lite._cpu_kernels import cpu_only
from keras_bert_lite.utils.deprecation import renamed_attributes

_LEVELS = 1 << 16  # a mask element is one uint16: kept when it is >= round(rate * 65536)


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class Uint16MaskDropout(keras.layers.Dropout):
    """`keras.layers.Dropout` (same arguments, seed state and config) with a cheaper mask on TensorFlow CPUs: one
    uint16 per element.

    Keras draws one float32 uniform per element (`tf.nn.experimental.stateless_dropout`), and in a CPU
    training step the masks' random numbers are a visible share of the op time. Here one uint32 of the same
    stateless Philox stream covers two elements, 16 bits each, which halves the random-number work per mask.
    The masks mostly overlap other ops, so whole steps gain less than the masks do.

        bits  = stateless_uniform([..., n / 2], uint32) viewed as uint16 [..., n]
        keep  = bits >= t,  t = round(rate * 65536)          # P(keep) = 1 - t / 65536
        out   = where(keep, x * 65536 / (65536 - t), 0)      # E[out] = x exactly

    The drop rate is thus quantised to 1/65536 (0.1 -> 0.100006; Keras' own float32 uniform quantises it
    to 2^-23), and the scale uses the quantised rate so the expected output stays `x`. The mask draws its seed
    from the layer's `seed_generator` as Keras does, so seeding, `fit` resumption and per-step masks behave
    the same (the masks themselves differ from Keras').

    Keras' implementation runs instead where this form does not apply or does not pay: an odd or unknown last
    dimension, `noise_shape`, a rate that rounds to 0 or 65536 levels, a GPU present (the form is meant for CPUs),
    or another Keras backend.

    Call args:
        inputs: `[..., n]`, any float dtype.
        training: whether to drop.

    Returns:
        `inputs` with dropout applied when training, same shape and dtype.
    """

    def call(self, inputs, training=False):
        threshold = round(self.rate * _LEVELS)
        width = inputs.shape[-1]
        if not (
            training
            and 0 < threshold < _LEVELS
            and self.noise_shape is None
            and width is not None
            and width % 2 == 0
            and _cheap_mask_available()
        ):
            return super().call(inputs, training=training)
        shape = tf.shape(inputs)
        half_shape = tf.concat([shape[:-1], [width // 2]], axis=0)  # [..., n/2]
        seed = tf.cast(tf.math.floormod(self.seed_generator.next(), 2**31 - 1), tf.int32)
        bits = tf.random.stateless_uniform(half_shape, seed, minval=None, maxval=None, dtype=tf.uint32)
        bits = tf.reshape(tf.bitcast(bits, tf.uint16), shape)  # [..., n]
        keep = bits >= tf.constant(threshold, tf.uint16)
        scale = tf.cast(_LEVELS / (_LEVELS - threshold), inputs.dtype)
        return tf.where(keep, inputs * scale, tf.zeros_like(inputs))


def _cheap_mask_available() -> bool:
    """Whether the 16-bit mask is used: the TensorFlow backend and no GPU."""
    return keras.backend.backend() == "tensorflow" and cpu_only()


# The former name, for one release (files saved under it load: `former_names`).
__getattr__ = renamed_attributes(__name__, {"Dropout": "Uint16MaskDropout"})

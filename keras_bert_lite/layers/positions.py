"""Gathering the vectors at given positions of each sequence (masked-LM targets, the queries of a last block)."""

import tensorflow as tf


def gather_positions(sequence, positions):
    """`[b, s, H]`, int `[b, P]` -> `[b, P, H]`: the vectors at `positions` of each sequence.

    A row gather (`batch_dims=1`), whose gradient scatters b*P rows of H. `keras.ops.take_along_axis` computes
    the same values but gathers and, in the gradient, scatters b*P*H single elements, several times slower on
    CPU.
    """
    return tf.gather(sequence, tf.cast(positions, tf.int32), batch_dims=1)

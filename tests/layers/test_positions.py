"""gather_positions: the vectors at given positions of each sequence, and its gradient."""

import numpy as np
import tensorflow as tf

from keras_bert_lite.layers.positions import gather_positions


def test_gathers_each_sequences_rows_and_scatters_the_gradient_back_summing_repeats():
    rng = np.random.default_rng(0)
    sequence = tf.constant(rng.normal(size=(3, 7, 4)).astype("float32"))
    positions = np.array([[0, 6, 6], [3, 1, 0], [2, 2, 2]])  # repeats, as padded masked-LM positions are
    with tf.GradientTape() as tape:
        tape.watch(sequence)
        got = gather_positions(sequence, tf.constant(positions, tf.int64))
        loss = tf.reduce_sum(got * tf.range(1.0, 5.0))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(sequence)[np.arange(3)[:, None], positions])
    want = np.zeros((3, 7, 4), "float32")
    for i in range(3):
        for p in positions[i]:
            want[i, p] += np.arange(1.0, 5.0)
    np.testing.assert_array_equal(np.asarray(tape.gradient(loss, sequence)), want)

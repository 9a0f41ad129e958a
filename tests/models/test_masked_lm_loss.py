"""masked_lm_cross_entropy: Keras' sparse cross-entropy and accuracy, with its own gradient."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.models.masked_lm_loss import masked_lm_cross_entropy

rng = np.random.default_rng(0)


def keras_reference(labels, logits):
    ce = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
    hits = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels), tf.float32)
    return ce, hits


def loss_and_gradient(fn, labels, logits, weights, jit_compile=False):
    @tf.function(jit_compile=jit_compile)
    def run(logits):
        with tf.GradientTape() as tape:
            tape.watch(logits)
            ce, hits = fn(labels, logits)
            loss = tf.reduce_sum(ce * weights)
        return ce, hits, tape.gradient(loss, logits)

    return [t.numpy() for t in run(logits)]


@pytest.mark.parametrize("jit_compile", [False, True], ids=["graph", "xla"])
@pytest.mark.parametrize("scale", [1.0, 5.0, 200.0])
def test_equals_keras_cross_entropy_accuracy_and_gradient(scale, jit_compile):
    vocab, shape = 1000, (4, 7)
    labels = tf.constant(rng.integers(0, vocab, shape), tf.int32)
    logits = rng.normal(size=shape + (vocab,)) * scale
    # A third of the rows predict their label (hits), the rest mostly do not.
    logits[:, ::3][np.arange(4)[:, None], np.arange(3)[None], labels.numpy()[:, ::3]] += 10 * scale
    logits = tf.constant(logits.astype("float32"))
    weights = tf.constant(rng.integers(0, 2, shape).astype("float32"))  # padding predictions weigh 0

    ce, hits, grad = loss_and_gradient(masked_lm_cross_entropy, labels, logits, weights, jit_compile)
    ref_ce, ref_hits, ref_grad = loss_and_gradient(keras_reference, labels, logits, weights)
    assert ce.shape == hits.shape == shape and grad.shape == logits.shape
    np.testing.assert_allclose(ce, ref_ce, rtol=1e-5, atol=1e-4 * scale)
    np.testing.assert_array_equal(hits, ref_hits)
    assert 0 < hits.sum() < hits.size
    np.testing.assert_allclose(grad, ref_grad, atol=1e-6)
    np.testing.assert_array_equal(grad[weights.numpy() == 0], 0.0)


def test_stays_finite_where_the_label_probability_underflows():
    logits = tf.constant([[0.0, 200.0, -200.0]])  # p(label 2) = exp(-400): 0 in float32
    ce, hits = masked_lm_cross_entropy(tf.constant([2]), logits)
    np.testing.assert_allclose(ce.numpy(), [400.0], rtol=1e-6)
    assert hits.numpy().tolist() == [0.0]


def test_ties_for_the_highest_logit_count_as_hits():
    ce, hits = masked_lm_cross_entropy(tf.constant([0, 1, 2]), tf.zeros((3, 4)))
    np.testing.assert_allclose(ce.numpy(), np.log(4.0), rtol=1e-6)
    assert hits.numpy().tolist() == [1.0, 1.0, 1.0]

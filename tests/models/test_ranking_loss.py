"""MultipleNegativesRankingLoss against a NumPy reference: cross-entropy of scaled cosines, target the own pair;
under a strategy each replica takes whole pairs."""

import json
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_lite as kbl
from keras_bert_lite.models.ranking_loss import MultipleNegativesRankingLoss, in_batch_ranking_loss

rng = np.random.default_rng(0)


def numpy_reference(anchors, positives, scale):
    """-log softmax_j(scale * cos(a_i, p_j))[i], in float64."""
    a = anchors / np.linalg.norm(anchors, axis=1, keepdims=True)
    p = positives / np.linalg.norm(positives, axis=1, keepdims=True)
    logits = scale * a.astype(np.float64) @ p.T.astype(np.float64)
    log_softmax = logits - logits.max(1, keepdims=True)
    log_softmax -= np.log(np.exp(log_softmax).sum(1, keepdims=True))
    return -np.diag(log_softmax)


@pytest.mark.parametrize("scale", [1.0, 20.0, 100.0])
def test_equals_the_numpy_reference(scale):
    anchors, positives = rng.normal(size=(2, 7, 16)).astype("float32") * [[[3.0]], [[0.2]]]  # lengths matter not
    expected = numpy_reference(anchors, positives, scale)
    np.testing.assert_allclose(in_batch_ranking_loss(anchors, positives, scale).numpy(), expected, rtol=1e-5, atol=1e-5)


def test_the_keras_loss_reads_interleaved_pairs_and_averages():
    anchors, positives = rng.normal(size=(2, 5, 8)).astype("float32")
    rows = np.stack([anchors, positives], axis=1).reshape(10, 8)  # a0, p0, a1, p1, ...
    loss = MultipleNegativesRankingLoss(scale=20.0)
    value = loss(np.zeros(5, np.float32), rows)
    assert value.numpy() == pytest.approx(numpy_reference(anchors, positives, 20.0).mean(), rel=1e-5)
    assert loss(np.zeros(5), np.concatenate([anchors, positives])).numpy() != pytest.approx(value.numpy())
    config = loss.get_config()
    assert config == {"scale": 20.0, "name": "multiple_negatives_ranking", "reduction": "sum_over_batch_size"}
    assert keras.losses.deserialize(keras.losses.serialize(MultipleNegativesRankingLoss(5.0))).scale == 5.0
    assert kbl.MultipleNegativesRankingLoss is MultipleNegativesRankingLoss


def test_pairs_that_point_at_each_other_lose_little_and_the_gradient_pulls_pairs_together():
    anchors = np.eye(4, 8, dtype="float32")
    assert in_batch_ranking_loss(anchors, anchors, 20.0).numpy().max() < 1e-7  # exp(-20) * 3 is the rest
    positives = tf.Variable(np.roll(anchors, 1, axis=0) + 0.1)  # each positive nearest another anchor
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(in_batch_ranking_loss(anchors, positives, 20.0))
    step = positives - 0.01 * tape.gradient(loss, positives)
    assert tf.reduce_mean(in_batch_ranking_loss(anchors, step, 20.0)) < loss


MIRRORED = """
from keras_bert_lite.training.distribute import resolve_strategy, split_logical_cpus
split_logical_cpus(2)
import json, keras, numpy as np, tensorflow as tf
from keras_bert_lite.models.ranking_loss import MultipleNegativesRankingLoss
strategy = resolve_strategy("mirrored")
rows = np.array(json.loads(input()), np.float32)
with strategy.scope():
    inputs = keras.Input((rows.shape[1],))
    dense = keras.layers.Dense(rows.shape[1], use_bias=False, kernel_initializer="identity")
    model = keras.Model(inputs, dense(inputs))
    model.compile(loss=MultipleNegativesRankingLoss(20.0))
data = tf.data.Dataset.from_tensors((rows, np.zeros(len(rows) // 2, np.float32)))
print(json.dumps([strategy.num_replicas_in_sync, model.evaluate(data, verbose=0)]))
"""


def test_two_replicas_each_take_whole_pairs_and_their_own_negatives():
    """A batch of 4 pairs on 2 replicas (logical CPUs): each replica's loss is that of its 2 pairs, whole."""
    rows = rng.normal(size=(8, 6)).astype("float32")  # a0 p0 a1 p1 | a2 p2 a3 p3
    out = subprocess.run(
        [sys.executable, "-c", MIRRORED], input=json.dumps(rows.tolist()), capture_output=True, text=True, timeout=300
    )
    replicas, loss = json.loads(out.stdout.strip().splitlines()[-1])
    anchors, positives = rows[0::2], rows[1::2]
    shares = [numpy_reference(anchors[i : i + 2], positives[i : i + 2], 20.0).mean() for i in (0, 2)]
    assert replicas == 2 and loss == pytest.approx(np.mean(shares), rel=1e-5)

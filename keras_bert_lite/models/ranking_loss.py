"""MultipleNegativesRankingLoss: sentence-transformers' loss for (anchor, positive) pairs with in-batch negatives.

For a batch of n pairs, anchor i is to pick its own positive out of the batch's n positives: the loss is the
cross-entropy of the row `scale * cos(anchor_i, positive_j)` (j = 0..n-1) against the target j = i, averaged over
the n anchors. The other pairs' positives are the negatives, so a larger batch is a harder task.

A positive that occurs twice in a batch (two pairs share it, or two equal texts) is a false negative: each anchor
is pushed away from its own positive's copy. Batches drawn at random from distinct pairs rarely hold one; a
dataset with many repeated texts is worth deduplicating.
"""

import keras
from keras import ops


def in_batch_ranking_loss(anchors, positives, scale: float = 20.0):
    """The loss of each pair (module docstring).

    Args:
        anchors: float `[n, D]`.
        positives: float `[n, D]`, row i the positive of anchor i.
        scale: multiplies the cosine similarities (in [-1, 1]) before the softmax; 20 in sentence-transformers.

    Returns:
        float32 `[n]`: `-log softmax_j(scale * cos(anchor_i, positive_j))[i]`.
    """
    logits = scale * ops.matmul(_unit(anchors), ops.transpose(_unit(positives)))  # [n, n]
    targets = ops.arange(ops.shape(logits)[0])
    return keras.losses.sparse_categorical_crossentropy(targets, logits, from_logits=True)


def _unit(x):
    """Rows divided by their L2 norm (at least 1e-12, as `torch.nn.functional.normalize`)."""
    x = ops.cast(x, "float32")
    return x / ops.maximum(ops.sqrt(ops.sum(x * x, axis=-1, keepdims=True)), 1e-12)


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class MultipleNegativesRankingLoss(keras.losses.Loss):
    """`in_batch_ranking_loss` on an embedder's output for a batch of pairs packed as one batch of texts.

    `y_pred` is float `[2n, D]` with the rows anchor_0, positive_0, anchor_1, positive_1, ... (interleaved, so
    that a distribution strategy that splits the batch into equal consecutive shares of an even size keeps each
    pair whole); `y_true` is ignored. Under such a strategy each replica's negatives are its own share's.

    Args:
        scale: see `in_batch_ranking_loss`.
        name, reduction: as for `keras.losses.Loss` (the default averages over the n pairs).
    """

    def __init__(
        self, scale: float = 20.0, name: str = "multiple_negatives_ranking", reduction: str = "sum_over_batch_size"
    ):
        super().__init__(name=name, reduction=reduction)
        self.scale = scale

    def call(self, y_true, y_pred):
        del y_true
        pairs = ops.reshape(y_pred, (-1, 2, ops.shape(y_pred)[-1]))  # [n, 2, D]
        return in_batch_ranking_loss(pairs[:, 0], pairs[:, 1], self.scale)

    def get_config(self):
        return {"scale": self.scale, "name": self.name, "reduction": self.reduction}

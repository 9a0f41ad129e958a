"""Cross-entropy and top-1 hits of the masked-LM predictions, with a hand-written gradient."""

import tensorflow as tf


def masked_lm_cross_entropy(labels, logits):
    """Per-prediction cross-entropy and top-1 hits of `logits` against `labels`.

    The same cross-entropy and gradient as `keras.losses.sparse_categorical_crossentropy(from_logits=True)`
    (float32 rounding apart), and the same hits as `SparseCategoricalAccuracy` except on exact ties for the
    highest logit, which count as a hit here. It is written for the masked-LM head's `[b, P, V]` logits, where
    V ~ 30k makes every pass over the logits count: TensorFlow's `SparseSoftmaxCrossEntropyWithLogits` kernel
    and the metric's `ArgMax` each pass over them again, a large share of a small model's CPU pretraining step.
    Here:

        probs = softmax(logits)                      # one fused (oneDNN) kernel
        ce    = max(logits) - log(max(probs)) - logits[label]
              = logsumexp(logits) - logits[label]    # since max(probs) = 1 / sum(exp(logits - max))
        hit   = logits[label] >= max(logits)
        d ce / d logits = probs - one_hot(label)     # probs scaled, then P*b scattered subtractions

    `max(probs) >= 1/V` never underflows, so `ce` stays finite where `-log(probs[label])` would not.

    Args:
        labels: int `[...]` token ids in `[0, V)`.
        logits: float `[..., V]`.

    Returns:
        `(cross_entropy, hits)`, both float32 `[...]` (`hits` is 1.0 or 0.0 and has no gradient).
    """
    vocab_size = tf.shape(logits)[-1]
    ce, hits = _cross_entropy_and_hits(
        tf.reshape(tf.cast(logits, tf.float32), [-1, vocab_size]), tf.reshape(tf.cast(labels, tf.int32), [-1])
    )
    return tf.reshape(ce, tf.shape(labels)), tf.reshape(hits, tf.shape(labels))


@tf.custom_gradient
def _cross_entropy_and_hits(logits, labels):
    """logits `[n, V]`, labels `[n]` -> (cross-entropy `[n]`, hits `[n]`)."""
    probs = tf.nn.softmax(logits)  # [n, V]
    label_logit = tf.gather(logits, labels, batch_dims=1)  # [n]
    row_max = tf.reduce_max(logits, axis=-1)  # [n]
    ce = row_max - tf.math.log(tf.reduce_max(probs, axis=-1)) - label_logit
    hits = tf.cast(label_logit >= row_max, tf.float32)

    def grad(d_ce, d_hits):
        del d_hits  # a count: no gradient
        rows = tf.range(tf.shape(labels)[0])
        d_logits = probs * d_ce[:, None]  # [n, V]
        return tf.tensor_scatter_nd_sub(d_logits, tf.stack([rows, labels], axis=1), d_ce), None

    return (ce, hits), grad

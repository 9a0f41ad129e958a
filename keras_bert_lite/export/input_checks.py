"""In-graph checks of the ids a client sends to an ids-in signature (`encode`, a TF Hub encoder's serving_default).

A text-in signature makes its own ids, so they always fit the model. Ids from a request may not, and without a
check the model fails in an op deep inside (`Incompatible shapes: [1,512,768] vs. [1,600,768]`), or gives no error
at all: on a GPU a gather returns zeros for an id outside the table, and an `input_mask` of 2 turns the attention
mask into a bonus. Each check fails the call with InvalidArgumentError (gRPC INVALID_ARGUMENT) naming the input,
the first offending value, its [row, position] and the range the model takes:

    assertion failed: [input_word_ids holds] [30522] [at [row, position]] [[0 1]] [outside [0, 30522): ids in
    the vocabulary]
"""

from __future__ import annotations

import tensorflow as tf

from keras_bert_lite.models.introspect import encoder_config


def checked_encoder_inputs(encoder, input_word_ids, input_mask, input_type_ids) -> dict:
    """The three int32 `[batch, seq]` inputs, passed on only after the request's values are checked against
    `encoder`: the same shape for all three, at most max_position_embeddings positions, word ids in the
    vocabulary, type ids below type_vocab_size, mask values 0 or 1.

    Returns:
        {"input_word_ids", "input_mask", "input_type_ids"}: the inputs, each depending on the checks.
    """
    config = encoder_config(encoder)
    shape = tf.shape(input_word_ids)  # [2]: batch, seq
    same = [
        tf.debugging.Assert(
            tf.reduce_all(tf.equal(tf.shape(t), shape)),
            [
                f"{name} has shape",
                tf.shape(t),
                "and input_word_ids",
                shape,
                "; the three inputs must have one shape [batch, seq]",
            ],
        )
        for name, t in (("input_mask", input_mask), ("input_type_ids", input_type_ids))
    ]
    with tf.control_dependencies(same):  # the ranges below index with shape
        checks = [
            tf.debugging.Assert(
                shape[1] <= config.max_position_embeddings,
                [
                    "the inputs have",
                    shape[1],
                    f"positions; this model takes at most {config.max_position_embeddings} "
                    "(max_position_embeddings): cut the sequences",
                ],
            ),
            _in_range("input_word_ids", input_word_ids, config.vocab_size, "ids in the vocabulary"),
            _in_range("input_type_ids", input_type_ids, config.type_vocab_size, "segment types of this model"),
            _in_range("input_mask", input_mask, 2, "1 for a token, 0 for padding"),
        ]
    with tf.control_dependencies(checks):
        return {
            "input_word_ids": tf.identity(input_word_ids),
            "input_mask": tf.identity(input_mask),
            "input_type_ids": tf.identity(input_type_ids),
        }


def _in_range(name: str, values: tf.Tensor, limit: int, meaning: str) -> tf.Operation:
    """An Assert that every value is in [0, limit), showing the first one that is not and where."""
    outside = tf.logical_or(values < 0, values >= limit)
    first = tf.where(outside)[:1]  # [1, 2] int64 (row, position), or [0, 2]
    return tf.debugging.Assert(
        tf.logical_not(tf.reduce_any(outside)),
        [f"{name} holds", tf.gather_nd(values, first), "at [row, position]", first, f"outside [0, {limit}): {meaning}"],
    )

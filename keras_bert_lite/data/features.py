"""Text -> batches of encoder inputs for fine-tuning, with the library's in-graph tokenizer and packer.

Texts are tokenised once, in large batches, by `BertTokenizer` (the same op graph the exported models run);
each epoch then shuffles the token ids, batches them ragged and packs each batch with `BertPacker(dynamic=True)`,
which pads to the batch's longest sequence rounded up to a multiple of 8 (under XLA, to one of a few lengths:
`length_buckets`). No Python runs per example.

Training batches are grouped by length (like `group_by_length` in HF's Trainer): each epoch shuffles all
examples, sorts every window of `GROUP_BATCHES` batches by length, cuts it into batches and shuffles the order
of the batches. Batches of similar lengths carry little padding, so on real short text most of each batch's
work is real tokens, while every epoch still sees new batch compositions in a new order.
"""

from __future__ import annotations

import weakref

import numpy as np
import tensorflow as tf

TOKENIZE_CHUNK = 4096
GROUP_BATCHES = 16  # training batches sorted by length together (a larger window: less padding, less mixing)


def tokenize_texts(tokenizer, texts: list[str], max_tokens: int | None = None) -> tf.RaggedTensor:
    """Token ids of `texts`: int32 RaggedTensor `[len(texts), (tokens)]`, each row cut to `max_tokens`.

    Cutting to `max_tokens` (>= seq_length) never changes what `BertPacker` keeps, single or paired.
    """
    fn = tokenize_fn(tokenizer)
    parts = [fn(tf.constant(texts[i : i + TOKENIZE_CHUNK], tf.string)) for i in range(0, len(texts), TOKENIZE_CHUNK)]
    if not parts:
        return tf.RaggedTensor.from_row_lengths(tf.zeros([0], tf.int32), tf.zeros([0], tf.int64))
    ids = tf.concat(parts, axis=0)
    return ids[:, :max_tokens] if max_tokens else ids


_TRACED = weakref.WeakKeyDictionary()


def tokenize_fn(tokenizer, with_offsets: bool = False):
    """`tokenizer.tokenize` (or `tokenize_with_offsets`) as a tf.function over tf.string `[batch]`, traced once
    per tokenizer (the tokenizer is graph code: no autograph needed)."""
    functions = _TRACED.setdefault(tokenizer, {})
    if with_offsets not in functions:
        method = tokenizer.tokenize_with_offsets if with_offsets else tokenizer.tokenize
        functions[with_offsets] = tf.function(
            method, input_signature=[tf.TensorSpec([None], tf.string)], autograph=False
        )
    return functions[with_offsets]


def length_order(*segments: tf.RaggedTensor) -> np.ndarray:
    """Example indices sorted by token count (evaluation batches with little padding).

    Args:
        segments: int RaggedTensors `[n, (tokens)]`, or `[n, choices, (tokens)]` (the longest choice counts).
    """
    return np.argsort(token_counts(*segments), kind="stable")


def token_counts(*segments: tf.RaggedTensor) -> np.ndarray:
    """Tokens per example over all segments (for `[n, choices, (tokens)]`, of its longest choice): int `[n]`."""

    def lengths(s):
        counts = s.row_lengths(axis=s.ragged_rank)
        while counts.shape.rank > 1:
            counts = tf.reduce_max(counts, axis=-1)
        return np.asarray(counts)

    return sum(lengths(s) for s in segments)


def length_grouped_order(lengths: np.ndarray, batch_size: int, seed: int, first_epoch: int = 0) -> tf.data.Dataset:
    """Training batches of example indices, grouped by length, epoch after epoch without end.

    Epoch `e` (from `first_epoch`) draws a random permutation, sorts each window of `GROUP_BATCHES * batch_size`
    examples by length, cuts batches and shuffles their order. Its batches are a pure function of `(seed, e)`:
    a run resumed at epoch `e` (`first_epoch=e`) sees exactly the batches an uninterrupted run sees there.

    Returns:
        An endless `tf.data.Dataset` of int32 `[<= batch_size]` index batches: `ceil(n / batch_size)` per epoch,
        each example once per epoch.
    """
    n = len(lengths)
    window = GROUP_BATCHES * batch_size
    lengths = np.asarray(lengths, np.int64)
    max_length = int(lengths.max()) + 1 if n else 1
    num_batches = -(-n // batch_size)

    @tf.autograph.experimental.do_not_convert  # graph code: no source rewrite at each start
    def epoch_batches(epoch):
        permutation = tf.random.experimental.stateless_shuffle(
            tf.range(n, dtype=tf.int64), seed=tf.stack([epoch, tf.constant(seed, tf.int64)])
        )
        # Sort by (window, length), stably: windows keep their random membership, lengths ascend inside.
        keys = (tf.range(n, dtype=tf.int64) // window) * max_length + tf.gather(lengths, permutation)
        order = tf.cast(tf.gather(permutation, tf.argsort(keys, stable=True)), tf.int32)
        batch_order = tf.random.experimental.stateless_shuffle(
            tf.range(num_batches, dtype=tf.int64), seed=tf.stack([epoch, tf.constant(seed + 1, tf.int64)])
        )
        starts = batch_order * batch_size
        return tf.data.Dataset.from_tensor_slices(starts).map(
            lambda start: order[start : tf.minimum(start + batch_size, n)]
        )

    return tf.data.Dataset.counter(first_epoch).flat_map(epoch_batches)


def packed_dataset(
    segments: tuple[tf.RaggedTensor, ...],
    labels,
    packer,
    batch_size: int,
    *,
    shuffle_seed: int | None = None,
    order: np.ndarray | None = None,
    pack_labels=None,
    first_epoch: int = 0,
    group_by_length: bool = True,
) -> tf.data.Dataset:
    """Batches of `(encoder inputs, labels)` from one or two tokenised segments.

    Args:
        segments: (first,) or (first, second), int RaggedTensor `[n, (tokens)]`.
        labels: array-like `[n, ...]` (int class ids, float scores, ...), a dict of them, an int RaggedTensor
            `[n, (tokens)]` (with `pack_labels`), or None for zeros (unlabeled test).
        packer: a `BertPacker` (dynamic=True pads each batch to its longest, rounded to 8 or bucketed).
        batch_size: examples per batch.
        shuffle_seed: training: endless batches grouped by length, a new order each epoch from this seed
            (`length_grouped_order`); None: one pass in the given order.
        order: evaluate in this order of examples (e.g. `length_order`); the caller un-permutes outputs.
        pack_labels: `(packed inputs, batch of labels) -> labels` run after packing (token labels).
        first_epoch: training: the epoch the endless batches start at (a resumed run).
        group_by_length: training: batches of similar lengths (module docstring); False: batches of examples
            drawn at random, whatever their lengths (where a batch's composition is part of the task: the
            in-batch negatives of `models.ranking_loss`).

    Returns:
        A `tf.data.Dataset` of (dict of int32 `[b, seq]`, labels `[b, ...]`), prefetched.
    """
    n = int(segments[0].nrows())
    if labels is None:
        labels = np.zeros([n], np.int32)
    elif isinstance(labels, dict):  # the one structure of labels (e.g. span starts/ends)
        labels = {name: np.asarray(value) for name, value in labels.items()}
    elif not isinstance(labels, tf.RaggedTensor):  # one array-like: a list is `[n]`, not n scalars
        labels = np.asarray(labels)
    if order is not None:
        segments = tuple(tf.gather(s, order) for s in segments)
        labels = tf.nest.map_structure(
            lambda y: tf.gather(y, order) if isinstance(y, tf.RaggedTensor) else y[order],
            labels,
            expand_composites=False,
        )
    # The functions tf.data traces here are graph code: no autograph, which would rewrite their source (and the
    # packer's) at each start.
    if shuffle_seed is not None:  # training: shuffled batches of similar lengths (module docstring)

        @tf.autograph.experimental.do_not_convert
        def gather(index):
            return (
                tuple(tf.gather(s, index) for s in segments),
                tf.nest.map_structure(lambda y: tf.gather(y, index), labels),
            )

        lengths = token_counts(*segments) if group_by_length else np.zeros([n], np.int64)
        dataset = length_grouped_order(lengths, batch_size, shuffle_seed, first_epoch).map(gather)
    else:
        dataset = tf.data.Dataset.from_tensor_slices((segments, labels)).ragged_batch(batch_size)

    @tf.autograph.experimental.do_not_convert
    def pack(s, y):
        inputs = packer(*s)
        return inputs, (pack_labels(inputs, y) if pack_labels else y)

    dataset = dataset.map(pack, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)

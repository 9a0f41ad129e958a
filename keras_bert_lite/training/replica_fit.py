"""`replica_fit`: `model.fit`'s epochs, steps and callbacks, run as a `strategy.run` loop (for multi-worker).

Keras 3's `fit` crashes under `MultiWorkerMirroredStrategy` (keras-team/keras#20585). This loop runs the same
training step, the model's own `train_step` (its compiled loss, metrics and optimizer), in `strategy.run` inside a
`tf.function`, and calls the same Keras callbacks at the same points (`on_train_begin`, `on_epoch_begin`,
`on_train_batch_end` with the step's logs, `on_epoch_end`, `on_train_end`), so `BestDevCheckpoint`,
`StopOnNonFinite` and `TensorBoard` work unchanged. It works for any strategy; the fine-tuning runner uses it only
where `fit` cannot run.

Every worker reads the same global batches and keeps each of its replicas' share of every one (`replica_slice`),
so N replicas compute what one process computes with the same global batch (when the batch divides evenly).
"""

from __future__ import annotations

import logging

import keras
import tensorflow as tf

logger = logging.getLogger(__name__)


def replica_slice(batch, replica, replicas: int):
    """Rows `[replica * b // replicas, (replica + 1) * b // replicas)` of every tensor of a batch of `b` rows."""
    size = tf.shape(tf.nest.flatten(batch)[0])[0]
    replica = tf.cast(replica, tf.int32)
    start, end = size * replica // replicas, size * (replica + 1) // replicas
    return tf.nest.map_structure(lambda t: t[start:end], batch)


def replica_fit(
    model: keras.Model,
    batches_fn,
    strategy: tf.distribute.Strategy,
    *,
    epochs: int,
    steps_per_epoch: int,
    initial_epoch: int = 0,
    callbacks=(),
    log_epochs: bool = True,
) -> None:
    """Trains `model` (compiled, built in `strategy.scope()`) for `epochs` epochs of `steps_per_epoch` steps.

    Args:
        model: the compiled Keras model.
        batches_fn: `() -> tf.data.Dataset` of the global `(inputs, targets)` batches, endless, the same on every
            worker.
        strategy: the distribution strategy the model was built under.
        epochs, steps_per_epoch, initial_epoch: as for `fit`.
        callbacks: Keras callbacks.
        log_epochs: print one line per epoch (as `fit(verbose=2)`).
    """

    def dataset_fn(context: tf.distribute.InputContext):
        replicas = context.num_replicas_in_sync
        local = replicas // context.num_input_pipelines
        first = context.input_pipeline_id * local
        return batches_fn().flat_map(
            lambda *batch: tf.data.Dataset.range(local).map(lambda r: replica_slice(batch, first + r, replicas))
        )

    iterator = iter(strategy.distribute_datasets_from_function(dataset_fn))
    callback_list = keras.callbacks.CallbackList(
        list(callbacks),
        model=model,
        add_history=True,
        add_progbar=False,
        epochs=epochs,
        steps=steps_per_epoch,
        verbose=0,
    )

    @tf.function
    def train_step(iterator):
        strategy.run(model.train_step, args=(next(iterator),))
        return {m.name: m.result() for m in model.metrics}

    model.stop_training = False
    callback_list.on_train_begin()
    logs = {}
    for epoch in range(initial_epoch, epochs):
        model.reset_metrics()
        callback_list.on_epoch_begin(epoch)
        for step in range(steps_per_epoch):
            callback_list.on_train_batch_begin(step)
            logs = _flat(train_step(iterator))
            callback_list.on_train_batch_end(step, logs)
        callback_list.on_epoch_end(epoch, logs)
        if log_epochs:
            print(f"epoch {epoch + 1}/{epochs}: " + " - ".join(f"{k}: {v:.4f}" for k, v in logs.items()), flush=True)
        if model.stop_training:
            break
    callback_list.on_train_end(logs)


def _flat(results: dict) -> dict:
    """Metric results as Python floats (a dict-valued result, e.g. compile metrics, is spread)."""
    out = {}
    for name, value in results.items():
        if isinstance(value, dict):
            out.update({k: float(v) for k, v in value.items()})
        else:
            out[name] = float(value)
    return out

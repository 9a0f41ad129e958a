"""A custom training loop for any tf.distribute strategy, with exact resume.

Keras 3's `model.fit` crashes under MultiWorkerMirroredStrategy (keras-team/keras#20585) and cannot checkpoint
its input position. This loop runs `strategy.run` inside a `tf.function` with the model's own `compute_loss`
and a Keras optimizer, and checkpoints everything a resumed run needs to continue *exactly*: weights, optimizer
slots and step (so the LR schedule continues), the step counter, and the tf.data iterator state (the data
position). It works the same for OneDevice, Mirrored, MultiWorkerMirrored and TPU strategies.

Checkpoints are TensorFlow checkpoints managed by `tf.train.CheckpointManager`: the `checkpoint` index file is
replaced atomically after the data files are complete, so a kill -9 during a save leaves the previous
checkpoint as the latest. A resumed run restores the newest checkpoint it can read (`checkpointing`): a damaged
one is skipped, with a warning, for the one before it.

The loop stops at the first step whose loss or gradient norm is not finite (`non_finite`): it raises
`NonFiniteLossError` naming the step before the checkpoint that would follow, so every checkpoint kept holds
finite weights. Ctrl-C stops it before the next step (`interrupts`): it raises `TrainingInterrupted` naming the
step and the checkpoint a rerun resumes from, with no save begun.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
import time

import keras
import tensorflow as tf

from keras_bert_lite.training.checkpointing import (
    checkpoint_number,
    restore_latest,
    rng_state_variables,
    save_checkpoint,
)
from keras_bert_lite.training.distribute import is_chief
from keras_bert_lite.training.interrupts import (
    TrainingInterrupted,
    interrupted_message,
    on_request,
    requested,
    stop_requests,
)
from keras_bert_lite.training.non_finite import (
    GENERIC_ADVICE,
    NonFiniteLossError,
    check_finite_weights,
    gradient_norm_variable,
    non_finite_message,
)
from keras_bert_lite.xla import use_xla

logger = logging.getLogger(__name__)


class Trainer:
    """Trains `model` (which defines `compute_loss(x, y, y_pred)`) with `optimizer` under `strategy`.

    Create the model and optimizer inside `strategy.scope()`.

    Args:
        model: a Keras model whose `compute_loss` returns this replica's share of the global loss (as
            `BertPretrainer` does) and whose `metrics` are reported.
        optimizer: a Keras optimizer (a LossScaleOptimizer under mixed_float16).
        strategy: the tf.distribute strategy.
        model_dir: where checkpoints and TensorBoard logs go (`model_dir/train`).
        checkpoint_every: steps between checkpoints.
        steps_per_loop: steps run inside one tf.function call (less Python overhead); logging and
            checkpointing happen at loop boundaries.
        max_checkpoints: checkpoints kept.
        jit_compile: XLA-compile the forward and backward pass of each replica; default (None): on GPUs and
            TPUs, not on CPUs (`keras_bert_lite.xla`).
        before_save: called before each checkpoint is saved (e.g. to record the settings it is made with).
        divergence_advice: what a non-finite loss's error suggests trying, in the command's own terms.
    """

    def __init__(
        self,
        model,
        optimizer,
        strategy,
        model_dir: str,
        checkpoint_every: int = 1000,
        steps_per_loop: int = 100,
        max_checkpoints: int = 3,
        jit_compile: bool | None = None,
        before_save=None,
        divergence_advice: str = GENERIC_ADVICE,
    ):
        self.model = model
        self.optimizer = optimizer
        self.strategy = strategy
        self.model_dir = model_dir
        self.checkpoint_every = checkpoint_every
        self.steps_per_loop = steps_per_loop
        self.max_checkpoints = max_checkpoints
        self.jit_compile = use_xla(jit_compile)
        self.chief = is_chief(strategy)
        self.before_save = before_save or (lambda: None)
        self.divergence_advice = divergence_advice
        with strategy.scope():
            self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="train_step")
            optimizer.build(model.trainable_variables)
            # The first non-finite step (0: none yet) and its loss and gradient norm.
            self._bad_step = tf.Variable(0, dtype=tf.int64, trainable=False, name="non_finite_step")
            self._bad_values = tf.Variable([0.0, 0.0], dtype=tf.float32, trainable=False, name="non_finite_values")
        # Set from another thread on Ctrl-C (`interrupts`): the compiled loop stops before its next step.
        self._stop = tf.Variable(False, trainable=False, name="stop_requested")
        self._gradient_norm = gradient_norm_variable(optimizer)

    # ------------------------------------------------------------------ one step
    # Graph code (the model, the loss and the optimizer branch in Python only): the autograph-converted training
    # loop calls it unconverted, so autograph does not rewrite the source of everything it calls at each start.
    @tf.autograph.experimental.do_not_convert
    def _replica_step(self, batch):
        """One training step on this replica's batch; returns its share of the global loss."""
        x, y = batch
        model, optimizer = self.model, self.optimizer

        def loss_and_grads(x, y):
            with tf.GradientTape() as tape:
                y_pred = model(x, training=True)
                loss = model.compute_loss(x, y, y_pred, training=True)
                scaled = optimizer.scale_loss(loss)
            return loss, tape.gradient(scaled, model.trainable_variables)

        if self.jit_compile:
            loss_and_grads = tf.function(loss_and_grads, jit_compile=True)
        loss, grads = loss_and_grads(x, y)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    def _train_loop_fn(self, local_replicas: int, first_local_replica: int):
        strategy = self.strategy

        def distribute(batch):
            """This worker's batch -> one equal slice per local replica (a plain batch with one replica)."""
            if local_replicas == 1:
                return batch
            return strategy.experimental_distribute_values_from_function(
                lambda ctx: tf.nest.map_structure(
                    lambda t: tf.split(t, local_replicas)[ctx.replica_id_in_sync_group - first_local_replica], batch
                )
            )

        def gradient_norm():
            if self._gradient_norm is None:
                return tf.zeros([])
            return tf.cast(tf.convert_to_tensor(self._gradient_norm.value), tf.float32)

        @tf.function
        def train_loop(iterator, steps):
            for _ in tf.range(steps):
                if self._stop:
                    break
                shares = strategy.run(self._replica_step, args=(distribute(next(iterator)),))
                loss = tf.cast(strategy.reduce(tf.distribute.ReduceOp.SUM, shares, axis=None), tf.float32)
                self.step.assign_add(1)
                norm = gradient_norm()
                if not tf.math.logical_and(tf.math.is_finite(loss), tf.math.is_finite(norm)):
                    self._bad_step.assign(self.step)
                    self._bad_values.assign(tf.stack([loss, norm]))
                    break

        return train_loop

    # ------------------------------------------------------------------ the loop
    def train(
        self, dataset_fn, global_batch_size: int, total_steps: int, log_every: int | None = None, verbose: bool = True
    ):
        """Trains until `total_steps`, resuming from the latest checkpoint in `model_dir` if there is one.

        Args:
            dataset_fn: `tf.distribute.InputContext -> tf.data.Dataset` of unbatched `(x, y)` examples for this
                worker: the examples of shard `input_context.input_pipeline_id` of
                `input_context.num_input_pipelines` (one pipeline per worker). It must repeat indefinitely and
                be deterministic for exact resume. The trainer batches it (this worker's share of the global
                batch, split evenly over its replicas) and checkpoints the iterator.
            global_batch_size: examples per step over all replicas.
            total_steps: the step to stop at.
            log_every: steps between metric logs (default: steps_per_loop).
            verbose: show a progress bar when the output is a terminal (else, and without it, log lines).

        Returns:
            A list of `{"step": ..., metric: value}` dicts, one per log.

        Raises:
            NonFiniteLossError: a step's loss or gradient norm was not finite.
            TrainingInterrupted: Ctrl-C; raised before the next step, with no save begun.
        """
        self._stop.assign(False)
        with stop_requests(), on_request(lambda: self._stop.assign(True)):
            return self._train(dataset_fn, global_batch_size, total_steps, log_every, verbose)

    def _train(self, dataset_fn, global_batch_size: int, total_steps: int, log_every: int | None, verbose: bool):
        log_every = log_every or self.steps_per_loop
        workers, worker = _worker_count_and_index(self.strategy)
        replicas = self.strategy.num_replicas_in_sync
        if global_batch_size % replicas:
            raise ValueError(f"global_batch_size {global_batch_size} must be divisible by the {replicas} replicas.")
        local_replicas = replicas // workers
        context = tf.distribute.InputContext(
            num_input_pipelines=workers, input_pipeline_id=worker, num_replicas_in_sync=replicas
        )
        dataset = dataset_fn(context).batch(global_batch_size // workers, drop_remainder=True)
        iterator = iter(dataset.prefetch(2))
        checkpoint = tf.train.Checkpoint(
            model=self.model,
            optimizer=self.optimizer,
            step=self.step,
            data=iterator,
            rng_states=rng_state_variables(self.model),
        )
        # Every worker resumes from the chief's checkpoints; only the chief's saves are kept.
        shared_dir = os.path.join(self.model_dir, "checkpoints")
        restored = restore_latest(checkpoint, shared_dir, repair_state=self.chief)
        if restored:
            logger.info("Resumed from %s at step %d.", restored, int(self.step.numpy()))
        ckpt_dir = shared_dir if self.chief else tempfile.mkdtemp(prefix="ckpt")
        manager = tf.train.CheckpointManager(
            checkpoint, ckpt_dir, max_to_keep=self.max_checkpoints, checkpoint_name="ckpt"
        )
        writer = (
            tf.summary.create_file_writer(os.path.join(self.model_dir, "train"))
            if self.chief
            else tf.summary.create_noop_writer()
        )
        # A bar redrawn into a log file is unreadable: off a terminal, one log line per interval instead. The bar
        # shows each interval's own values (stateful), as the log lines and TensorBoard do.
        bar = verbose and self.chief and sys.stdout.isatty()
        progbar = keras.utils.Progbar(
            total_steps,
            verbose=1 if bar else 0,
            stateful_metrics=[m.name for m in self.model.metrics] + ["learning_rate", "gradient_norm"],
        )
        train_loop = self._train_loop_fn(local_replicas, worker * local_replicas)
        history = []
        step = int(self.step.numpy())
        progbar.update(step)
        last_log_step, last_log_time = step, time.perf_counter()
        while step < total_steps:
            boundary = min(
                total_steps,
                _next_multiple(step, self.steps_per_loop),
                _next_multiple(step, log_every),
                _next_multiple(step, self.checkpoint_every),
            )
            train_loop(iterator, tf.constant(boundary - step))
            step = int(self.step.numpy())
            if requested():
                writer.flush()
                raise TrainingInterrupted(interrupted_message(step, _resume_note(manager)))
            if int(self._bad_step.numpy()):
                writer.flush()
                loss, norm = self._bad_values.numpy().tolist()
                raise NonFiniteLossError(
                    non_finite_message(
                        step,
                        loss,
                        None if self._gradient_norm is None else norm,
                        _kept(manager),
                        self.divergence_advice,
                    )
                )
            if step % log_every == 0 or step == total_steps:
                now = time.perf_counter()
                logs = {m.name: float(m.result()) for m in self.model.metrics}
                logs["learning_rate"] = _current_lr(self.optimizer)
                if self._gradient_norm is not None:
                    logs["gradient_norm"] = float(keras.ops.convert_to_numpy(self._gradient_norm))
                logs["steps_per_second"] = (step - last_log_step) / max(now - last_log_time, 1e-9)
                last_log_step, last_log_time = step, now
                history.append({"step": step, **logs})
                with writer.as_default(step=step):
                    for name, value in logs.items():
                        tf.summary.scalar(name, value)
                for m in self.model.metrics:
                    m.reset_state()
                progbar.update(step, [(k, v) for k, v in logs.items() if k != "steps_per_second"])
                if not bar and self.chief:
                    logger.info("step %d: %s", step, ", ".join(f"{k} {v:.4g}" for k, v in logs.items()))
            if step % self.checkpoint_every == 0 or step == total_steps:
                check_finite_weights(self.model.weights, step, _kept(manager), self.divergence_advice)
                self.before_save()
                save_checkpoint(manager, step)
        writer.flush()
        if not self.chief:
            shutil.rmtree(ckpt_dir, ignore_errors=True)
        return history


def _worker_count_and_index(strategy) -> tuple[int, int]:
    resolver = getattr(strategy, "cluster_resolver", None)
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) or resolver is None:
        return 1, 0
    workers = len(resolver.cluster_spec().as_dict().get("worker", [])) or 1
    return workers, resolver.task_id or 0


def _kept(manager) -> str:
    """What a stopped run keeps, for its error message."""
    if not manager.latest_checkpoint:
        return "no checkpoint had been written yet"
    return (
        f"the latest checkpoint, {manager.latest_checkpoint}, holds the finite weights of step "
        f"{checkpoint_number(manager.latest_checkpoint)}"
    )


def _resume_note(manager) -> str:
    """What an interrupted run keeps, for its message."""
    if not manager.latest_checkpoint:
        return ""
    return f"the last checkpoint (step {checkpoint_number(manager.latest_checkpoint)}) is kept in {manager.directory}"


def _next_multiple(step: int, every: int) -> int:
    return (step // every + 1) * every


def _current_lr(optimizer) -> float:
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    lr = inner.learning_rate
    if callable(lr):
        lr = lr(inner.iterations)
    return float(keras.ops.convert_to_numpy(tf.convert_to_tensor(lr)))

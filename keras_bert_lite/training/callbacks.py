"""`BestDevCheckpoint`: evaluate the task's dev metrics after each epoch, keep the best epoch's model, and make
the run resumable after a crash at every epoch's end. `FitStepCallback`: the base of callbacks that name a step."""

from __future__ import annotations

import json
import logging
import math
import time

import keras
import tensorflow as tf

from keras_bert_lite.training.checkpointing import CheckpointError, restore_latest, rng_state_variables, save_checkpoint
from keras_bert_lite.utils.files import atomic_save_model

logger = logging.getLogger(__name__)

RESUME_CHECKPOINTS_KEPT = 2  # the newest, and the one before it in case the newest is unreadable


class BestDevCheckpoint(keras.callbacks.Callback):
    """After every epoch: computes dev metrics, logs them (and to TensorBoard under `log_dir/dev`), and when
    `main_metric` improves saves the model (architecture and weights, no optimizer state) atomically to `path`.
    At the end of training the best epoch's weights are put back into the model. A metric that is not a finite
    number ranks below every finite one (a NaN first epoch is replaced by the first finite one).

    With `resume_dir`, each epoch's end also saves a resume checkpoint there (weights, optimizer state, dropout
    RNG states and this callback's state), before `path` is written: call `restore(model)` before `fit` and
    pass what it returns as `fit`'s `initial_epoch`, with training data whose epochs do not depend on the ones
    before them (`length_grouped_order`). A run killed at any point then ends as the uninterrupted run does.

    The model must be functional (every builder here returns one): the file is a plain `keras.Model` of its
    inputs and outputs.

    Args:
        evaluate: `() -> dict of dev metrics` for the model's current weights.
        main_metric: the metric to maximise.
        path: the `.keras` file of the best model.
        log_dir: TensorBoard directory ("" for none).
        resume_dir: directory of the end-of-epoch resume checkpoints ("" for none).
        before_save: called before each resume checkpoint is saved (e.g. to record the settings it is made with).

    Attributes (after training):
        best_metrics, best_epoch (1-based), history (dev metrics per epoch), epoch_seconds (training time of
        each epoch, dev evaluation excluded).
    """

    def __init__(
        self, evaluate, main_metric: str, path: str, log_dir: str = "", resume_dir: str = "", before_save=None
    ):
        super().__init__()
        self.evaluate = evaluate
        self.main_metric = main_metric
        self.path = path
        self.resume_dir = resume_dir
        self.before_save = before_save or (lambda: None)
        self.writer = tf.summary.create_file_writer(f"{log_dir}/dev") if log_dir else None
        self.best_metrics, self.best_epoch, self.best_weights = None, 0, None
        self.history, self.epoch_seconds = [], []
        self._manager, self._state = None, None

    # ------------------------------------------------------------------ resume
    def restore(self, model, from_dir: str = "", from_path: str = "") -> int:
        """Restores `model` (weights, its optimizer, dropout RNGs) and this callback from the newest readable
        checkpoint in `resume_dir`; returns the number of epochs it had completed (0 for a new run).

        Call it after `model.compile` and after building the optimizer (`optimizer.build(model.trainable_variables)`,
        inside the distribution strategy's scope if there is one), outside that scope: the callback's own state is a
        string variable, which strategies do not mirror.

        Args:
            model: the compiled model.
            from_dir, from_path: restore from these instead of `resume_dir` and `path` (another worker's run
                directory, which only that worker writes).
        """
        model.optimizer.build(model.trainable_variables)
        self._state = tf.Variable("", dtype=tf.string, trainable=False, name="best_dev_state")
        checkpoint = tf.train.Checkpoint(
            model=model, optimizer=model.optimizer, rng_states=rng_state_variables(model), state=self._state
        )
        source = from_dir or self.resume_dir
        restored = restore_latest(checkpoint, source, repair_state=source == self.resume_dir)
        self._manager = tf.train.CheckpointManager(
            checkpoint, self.resume_dir, RESUME_CHECKPOINTS_KEPT, checkpoint_name="ckpt"
        )
        if not restored:
            return 0
        state = json.loads(self._state.numpy().decode("utf-8"))
        self.best_metrics, self.best_epoch = state["best_metrics"], state["best_epoch"]
        self.history, self.epoch_seconds = state["history"], state["epoch_seconds"]
        done = len(self.history)
        if self.best_epoch == done:
            # The best epoch is the checkpoint's: its weights are the restored ones, and `path` may not have been
            # written yet when the run was killed.
            self.best_weights = [w.numpy() for w in model.weights]
            self.set_model(model)
            atomic_save_model(self._plain_model(), self.path)
        else:
            # Written after the checkpoint that recorded it, and never again since: it holds the best epoch.
            best_file = from_path or self.path
            try:
                best = keras.saving.load_model(best_file, compile=False)
            except (OSError, ValueError) as error:
                raise CheckpointError(
                    f"{best_file}: cannot be read ({error}); it holds this run's best epoch "
                    f"({self.best_epoch}), which the resumed run ends with. Restore the file, or "
                    "start again in a new --model_dir."
                ) from None
            self.best_weights = [w.numpy() for w in best.weights]
        logger.info(
            "Resumed from %s: %d epoch(s) done, best dev %s %.4f at epoch %d.",
            restored,
            done,
            self.main_metric,
            self.best_metrics[self.main_metric],
            self.best_epoch,
        )
        return done

    # ------------------------------------------------------------------ epochs
    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.epoch_seconds.append(time.perf_counter() - self._start)
        metrics = {k: float(v) for k, v in self.evaluate().items()}
        if self.main_metric not in metrics:
            raise KeyError(f"BestDevCheckpoint: main metric {self.main_metric!r} not among {sorted(metrics)}.")
        self.history.append(metrics)
        if self.writer is not None:
            with self.writer.as_default(step=epoch + 1):
                for name, value in metrics.items():
                    tf.summary.scalar(name, value)
            self.writer.flush()
        improved = self.best_metrics is None or _better(metrics[self.main_metric], self.best_metrics[self.main_metric])
        print(
            f"\nepoch {epoch + 1} dev: "
            + ", ".join(f"{k} {v:.4f}" for k, v in metrics.items())
            + (" (best so far: saved)" if improved else ""),
            flush=True,
        )
        if improved:
            self.best_metrics, self.best_epoch = metrics, epoch + 1
            self.best_weights = [w.numpy() for w in self.model.weights]
        if self._manager is not None:  # first the checkpoint that records the best epoch, then its model file
            self._state.assign(
                json.dumps(
                    {
                        "best_metrics": self.best_metrics,
                        "best_epoch": self.best_epoch,
                        "history": self.history,
                        "epoch_seconds": self.epoch_seconds,
                    }
                )
            )
            self.before_save()
            save_checkpoint(self._manager, epoch + 1)
        if improved:
            atomic_save_model(self._plain_model(), self.path)

    def _plain_model(self):
        """The same layers and weights as an uncompiled model: the file holds no optimizer state (a third of
        the size) and loads without the training-time loss and optimizer classes."""
        return keras.Model(self.model.input, self.model.output, name=self.model.name)

    def on_train_end(self, logs=None):
        if self.best_weights is not None:
            for variable, value in zip(self.model.weights, self.best_weights):
                variable.assign(value)


class FitStepCallback(keras.callbacks.Callback):
    """A `fit` callback that knows the number of the step a batch ends (`fit_step`), counted over epochs."""

    def __init__(self):
        super().__init__()
        self._epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def fit_step(self, batch: int) -> int:
        """The 1-based step that batch `batch` of the current epoch is (exact with `steps_per_execution=1`)."""
        return self._epoch * (self.params.get("steps") or 0) + batch + 1


def _better(value: float, best: float) -> bool:
    """Whether `value` beats `best`: a finite number beats a non-finite one and any smaller number."""
    if not math.isfinite(value):
        return False
    return not math.isfinite(best) or value > best

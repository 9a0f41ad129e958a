"""`BestDevCheckpoint`: evaluate the task's dev metrics after each epoch, keep the best epoch's model."""

from __future__ import annotations

import logging
import time

import keras
import tensorflow as tf

from keras_bert_lite.utils.files import atomic_save_model

logger = logging.getLogger(__name__)


class BestDevCheckpoint(keras.callbacks.Callback):
    """After every epoch: computes dev metrics, logs them (and to TensorBoard under `log_dir/dev`), and when
    `main_metric` improves saves the model (architecture and weights, no optimizer state) atomically to `path`.
    At the end of training the best epoch's weights are put back into the model.

    The model must be functional (every builder here returns one): the file is a plain `keras.Model` of its
    inputs and outputs.

    Args:
        evaluate: `() -> dict of dev metrics` for the model's current weights.
        main_metric: the metric to maximise.
        path: the `.keras` file of the best model.
        log_dir: TensorBoard directory ("" for none).

    Attributes (after training):
        best_metrics, best_epoch (1-based), history (dev metrics per epoch), epoch_seconds (training time of
        each epoch, dev evaluation excluded).
    """

    def __init__(self, evaluate, main_metric: str, path: str, log_dir: str = ""):
        super().__init__()
        self.evaluate = evaluate
        self.main_metric = main_metric
        self.path = path
        self.writer = tf.summary.create_file_writer(f"{log_dir}/dev") if log_dir else None
        self.best_metrics, self.best_epoch, self.best_weights = None, 0, None
        self.history, self.epoch_seconds = [], []

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
        improved = self.best_metrics is None or metrics[self.main_metric] > self.best_metrics[self.main_metric]
        print(f"\nepoch {epoch + 1} dev: " + ", ".join(f"{k} {v:.4f}" for k, v in metrics.items())
              + (" (best so far: saved)" if improved else ""), flush=True)
        if improved:
            self.best_metrics, self.best_epoch = metrics, epoch + 1
            self.best_weights = [w.numpy() for w in self.model.weights]
            atomic_save_model(self._plain_model(), self.path)

    def _plain_model(self):
        """The same layers and weights as an uncompiled model: the file holds no optimizer state (a third of
        the size) and loads without the training-time loss and optimizer classes."""
        return keras.Model(self.model.input, self.model.output, name=self.model.name)

    def on_train_end(self, logs=None):
        if self.best_weights is not None:
            for variable, value in zip(self.model.weights, self.best_weights):
                variable.assign(value)

"""BestDevCheckpoint: keeps the best dev epoch's model on disk and in memory."""

import keras
import numpy as np
import pytest

from keras_bert_lite.training.callbacks import BestDevCheckpoint
from keras_bert_lite.training.checkpointing import CheckpointError


def test_best_dev_checkpoint_saves_and_restores_the_best_epoch(tmp_path):
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(1)(inputs))  # functional, like every model we build
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    scores, snapshots = iter([0.5, 0.7, 0.6]), []

    def evaluate():
        snapshots.append([w.numpy().copy() for w in model.weights])
        return {"score": next(scores), "other": 1.0}

    callback = BestDevCheckpoint(evaluate, "score", str(tmp_path / "model.keras"), str(tmp_path / "logs"))
    x, y = np.random.default_rng(0).normal(size=(16, 3)), np.ones((16, 1))
    model.fit(x, y, epochs=3, batch_size=4, verbose=0, callbacks=[callback])
    assert callback.best_epoch == 2 and callback.best_metrics == {"score": 0.7, "other": 1.0}
    assert [h["score"] for h in callback.history] == [0.5, 0.7, 0.6] and len(callback.epoch_seconds) == 3
    for restored, best in zip(model.weights, snapshots[1]):
        np.testing.assert_array_equal(restored.numpy(), best)  # the best epoch's weights are back
    saved = keras.saving.load_model(tmp_path / "model.keras")
    for on_disk, best in zip(saved.weights, snapshots[1]):
        np.testing.assert_array_equal(on_disk.numpy(), best)
    assert getattr(saved, "optimizer", None) is None
    assert (tmp_path / "logs" / "dev").is_dir()


def test_a_non_finite_dev_metric_never_stays_the_best(tmp_path):
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    scores = iter([float("nan"), 0.4, float("nan"), 0.3])  # e.g. a Pearson r of constant predictions is NaN
    callback = BestDevCheckpoint(lambda: {"score": next(scores)}, "score", str(tmp_path / "model.keras"))
    x, y = np.random.default_rng(0).normal(size=(16, 3)), np.ones((16, 1))
    model.fit(x, y, epochs=4, batch_size=4, verbose=0, callbacks=[callback])
    assert callback.best_epoch == 2 and callback.best_metrics == {"score": 0.4}


def test_resuming_without_a_readable_best_model_is_a_clear_error(tmp_path):
    def build():
        inputs = keras.Input((3,))
        model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        return model

    model, scores = build(), iter([0.7, 0.5])
    callback = BestDevCheckpoint(
        lambda: {"score": next(scores)},
        "score",
        str(tmp_path / "model.keras"),
        resume_dir=str(tmp_path / "checkpoints"),
    )
    callback.restore(model)
    x, y = np.random.default_rng(0).normal(size=(16, 3)), np.ones((16, 1))
    model.fit(x, y, epochs=2, batch_size=4, verbose=0, callbacks=[callback])  # the best epoch (1) is not the last
    (tmp_path / "model.keras").write_bytes((tmp_path / "model.keras").read_bytes()[:100])  # truncated
    again = BestDevCheckpoint(
        lambda: {}, "score", str(tmp_path / "model.keras"), resume_dir=str(tmp_path / "checkpoints")
    )
    with pytest.raises(CheckpointError, match=r"model.keras: cannot be read .*this run's best epoch \(1\)"):
        again.restore(build())

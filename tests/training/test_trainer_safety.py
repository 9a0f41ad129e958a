"""The Trainer loop at its boundaries: a non-finite loss or gradient stops it at that step with every kept
checkpoint finite; a damaged checkpoint or state file falls back to the newest readable checkpoint; a checkpoint
that cannot be written (a full disk) is one error, its partial files removed."""

import logging
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.training.checkpointing import CheckpointError, CheckpointWriteError, checkpoint_paths
from keras_bert_lite.training.non_finite import NonFiniteLossError
from keras_bert_lite.training.optimization import create_optimizer
from keras_bert_lite.training.trainer import Trainer


@tf.custom_gradient
def poison_gradient(x, poison):
    """Identity; its gradient is NaN where `poison` is set (a finite loss with a non-finite gradient)."""

    def grad(upstream):
        return upstream * tf.where(poison > 0, np.nan, 1.0), tf.zeros_like(poison)

    return x, grad


class Regressor(keras.Model):
    """y ~ x @ w, with `compute_loss` as the Trainer wants it; rows can carry a NaN loss or a NaN gradient."""

    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1)
        self.loss_metric = keras.metrics.Mean(name="loss")

    def call(self, inputs, training=None):
        return poison_gradient(self.dense(inputs["x"]), inputs["poison_gradient"][:, None])

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        loss = tf.reduce_mean(tf.square(y_pred[:, 0] - y)) + tf.reduce_sum(x["poison_loss"])
        self.loss_metric.update_state(loss)
        return loss


def dataset_fn(bad_step=None, bad="loss", batch=4):
    """Endless examples; the examples of 1-based step `bad_step` carry the poison."""

    def fn(context):
        n = 10_000
        x = np.random.default_rng(0).normal(size=(n, 3)).astype("float32")
        poison = np.zeros(n, np.float32)
        if bad_step:
            poison[(bad_step - 1) * batch : bad_step * batch] = 1.0
        features = {
            "x": x,
            "poison_loss": np.where(poison > 0, np.nan, 0).astype("float32")
            if bad == "loss"
            else np.zeros(n, np.float32),
            "poison_gradient": poison if bad == "gradient" else 0 * poison,
        }
        return tf.data.Dataset.from_tensor_slices((features, x.sum(axis=1))).repeat()

    return fn


def trainer(model_dir, **kwargs):
    model = Regressor()
    model({"x": tf.zeros([1, 3]), "poison_gradient": tf.zeros([1]), "poison_loss": tf.zeros([1])})
    optimizer = create_optimizer(learning_rate=1e-2, total_steps=1000)
    return Trainer(
        model, optimizer, tf.distribute.get_strategy(), str(model_dir), checkpoint_every=10, steps_per_loop=5, **kwargs
    )


@pytest.mark.parametrize("bad", ["loss", "gradient"])
def test_non_finite_step_stops_the_run_and_keeps_the_finite_checkpoints(tmp_path, bad):
    run = trainer(tmp_path)
    with pytest.raises(NonFiniteLossError, match=r"step 23: loss (nan|[\d.]+), gradient norm (nan|[\d.]+)") as error:
        run.train(dataset_fn(bad_step=23, bad=bad), global_batch_size=4, total_steps=60, verbose=False)
    assert "ckpt-20" in str(error.value)
    assert [os.path.basename(p) for p in checkpoint_paths(str(tmp_path / "checkpoints"))] == ["ckpt-20", "ckpt-10"]
    reader = tf.train.load_checkpoint(str(tmp_path / "checkpoints" / "ckpt-20"))
    floats = [name for name, dtype in reader.get_variable_to_dtype_map().items() if dtype.is_floating]
    assert len(floats) >= 4  # the kernel, the bias and their Adam moments at least
    for name in floats:
        assert np.isfinite(reader.get_tensor(name)).all(), name


def test_an_update_that_overflows_the_weights_is_never_checkpointed(tmp_path):
    model = Regressor()
    model({"x": tf.zeros([1, 3]), "poison_gradient": tf.zeros([1]), "poison_loss": tf.zeros([1])})
    optimizer = create_optimizer(learning_rate=1e39, total_steps=1000, warmup_steps=0)  # inf in float32
    run = Trainer(model, optimizer, tf.distribute.get_strategy(), str(tmp_path), checkpoint_every=1, steps_per_loop=1)
    with pytest.raises(
        NonFiniteLossError,
        match=r"step 1: the updates since the last save made \d+ weight\(s\) "
        r"non-finite .*no checkpoint had been written yet",
    ):
        run.train(dataset_fn(), global_batch_size=4, total_steps=5, verbose=False)  # step 1's loss was finite
    assert checkpoint_paths(str(tmp_path / "checkpoints")) == []


def test_gradient_norm_is_logged(tmp_path):
    history = trainer(tmp_path).train(dataset_fn(), global_batch_size=4, total_steps=10, verbose=False)
    assert all(np.isfinite(h["gradient_norm"]) and h["gradient_norm"] > 0 for h in history)


def test_a_damaged_latest_checkpoint_falls_back_to_the_one_before(tmp_path, caplog):
    trainer(tmp_path).train(dataset_fn(), global_batch_size=4, total_steps=30, verbose=False)
    with open(tmp_path / "checkpoints" / "ckpt-30.data-00000-of-00001", "wb") as f:
        f.write(b"\0" * 10)
    run = trainer(tmp_path)
    with caplog.at_level(logging.WARNING):
        history = run.train(dataset_fn(), global_batch_size=4, total_steps=40, verbose=False)
    assert [h["step"] for h in history] == [25, 30, 35, 40]  # resumed at 20
    assert "ckpt-30 cannot be restored" in caplog.text and "older checkpoint" in caplog.text


def test_a_damaged_state_file_does_not_restart_from_step_0(tmp_path, caplog):
    trainer(tmp_path).train(dataset_fn(), global_batch_size=4, total_steps=30, verbose=False)
    (tmp_path / "checkpoints" / "checkpoint").write_text("model_checkpoint_path: {{{ garbage")
    with caplog.at_level(logging.WARNING):
        history = trainer(tmp_path).train(dataset_fn(), global_batch_size=4, total_steps=40, verbose=False)
    assert [h["step"] for h in history] == [35, 40]  # resumed at 30
    state = tf.train.get_checkpoint_state(str(tmp_path / "checkpoints"))
    assert os.path.basename(state.model_checkpoint_path) == "ckpt-40" and "rewritten" in caplog.text
    assert len(state.all_model_checkpoint_paths) == 3  # the found ones are rotated again


def test_no_readable_checkpoint_is_an_error_naming_each(tmp_path):
    trainer(tmp_path).train(dataset_fn(), global_batch_size=4, total_steps=20, verbose=False)
    for name in ("ckpt-10", "ckpt-20"):
        (tmp_path / "checkpoints" / f"{name}.index").write_bytes(b"junk")
    with pytest.raises(CheckpointError, match="ckpt-20: .*; ckpt-10: "):
        trainer(tmp_path).train(dataset_fn(), global_batch_size=4, total_steps=30, verbose=False)


def test_a_full_disk_during_a_save_is_one_error_and_the_run_resumes(tmp_path, monkeypatch):
    trainer(tmp_path).train(dataset_fn(), global_batch_size=4, total_steps=10, verbose=False)
    save = tf.train.CheckpointManager.save

    def full_disk(manager, checkpoint_number=None, **kwargs):  # what TensorFlow leaves when a write fails
        os.makedirs(os.path.join(manager.directory, f"ckpt-{checkpoint_number}_temp"))
        open(os.path.join(manager.directory, f"ckpt-{checkpoint_number}.index"), "wb").close()
        raise tf.errors.ResourceExhaustedError(None, None, "ckpt-20_temp/part-00000: No space left on device")

    monkeypatch.setattr(tf.train.CheckpointManager, "save", full_disk)
    with pytest.raises(
        CheckpointWriteError,
        match=r"ckpt-20: the checkpoint could not be written \(.*No space "
        r"left on device\); its partial files were removed, and the "
        r"latest checkpoint, .*ckpt-10, is complete",
    ) as error:
        trainer(tmp_path).train(dataset_fn(), global_batch_size=4, total_steps=20, verbose=False)
    assert isinstance(error.value, OSError)  # the commands' one-line kind
    assert sorted(os.listdir(tmp_path / "checkpoints")) == [
        "checkpoint",
        "ckpt-10.data-00000-of-00001",
        "ckpt-10.index",
    ]
    monkeypatch.setattr(tf.train.CheckpointManager, "save", save)
    history = trainer(tmp_path).train(dataset_fn(), global_batch_size=4, total_steps=20, verbose=False)
    assert [h["step"] for h in history] == [15, 20]


def test_the_partial_files_of_a_killed_save_are_removed_on_resume(tmp_path, caplog):
    trainer(tmp_path).train(dataset_fn(), global_batch_size=4, total_steps=10, verbose=False)
    partial = tmp_path / "checkpoints" / "ckpt-20_temp"
    partial.mkdir()
    (partial / "part-00000-of-00001.data-00000-of-00001").write_bytes(b"\0" * 1000)
    with caplog.at_level(logging.WARNING):
        history = trainer(tmp_path).train(dataset_fn(), global_batch_size=4, total_steps=20, verbose=False)
    assert [h["step"] for h in history] == [15, 20] and not partial.exists()
    assert "ckpt-20_temp: the partial files of a save that did not complete" in caplog.text

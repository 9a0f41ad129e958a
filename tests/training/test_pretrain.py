"""run_pretraining end to end: outputs, kill -9 and resume, multi-worker == single process."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import keras
import numpy as np
import pytest

from keras_bert_lite import BertConfig
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.runners.pretrain import PretrainingJob, run

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def tiny_json(tmp_path_factory):
    def write(name, **overrides):
        path = tmp_path_factory.mktemp("cfg") / name
        BertConfig(
            vocab_size=30522,
            hidden_size=32,
            num_layers=2,
            num_heads=4,
            intermediate_size=64,
            max_position_embeddings=64,
            **overrides,
        ).to_json(path)
        return str(path)

    return write


def job_args(corpus, vocab, config, model_dir, steps=30, **extra):
    args = [
        "--input_files",
        corpus,
        "--vocab",
        vocab,
        "--config",
        config,
        "--model_dir",
        model_dir,
        "--seq_length",
        "64",
        "--batch_size",
        "8",
        "--steps",
        str(steps),
        "--checkpoint_every",
        "10",
        "--log_every",
        "5",
        "--window_docs",
        "16",
        "--shuffle_buffer",
        "200",
        "--quiet",
    ]
    for key, value in extra.items():
        args += [f"--{key}"] + ([] if value is True else [str(value)])
    return args


def pretrain_cmd(args):
    return [sys.executable, os.path.join(REPO, "tasks", "run_pretraining.py"), *args]


def final_weights(model_dir):
    model = keras.saving.load_model(os.path.join(model_dir, "pretrainer.keras"))
    return [w.numpy() for w in model.weights]


def max_diff(a, b):
    return max(float(np.abs(x - y).max()) for x, y in zip(a, b))


@pytest.mark.slow
def test_outputs_and_metrics(tmp_path, pydoc_corpus, uncased_vocab_path, tiny_json):
    from keras_bert_lite.runners.pretrain import parse_args

    model_dir = str(tmp_path / "run")
    job = parse_args(job_args(pydoc_corpus[0], uncased_vocab_path, tiny_json("c.json"), model_dir, steps=20))
    history = run(job)
    assert [h["step"] for h in history] == [5, 10, 15, 20]
    assert {"mlm_loss", "nsp_loss", "mlm_accuracy", "nsp_accuracy", "learning_rate"} <= set(history[0])
    assert history[-1]["learning_rate"] == 0.0 and np.isfinite([h["mlm_loss"] for h in history]).all()
    for name in ("pretrainer.keras", "encoder.keras", "vocab.txt", "flags.json", "checkpoints/checkpoint"):
        assert os.path.exists(os.path.join(model_dir, name)), name
    assert any(f.startswith("events.out.tfevents") for f in os.listdir(os.path.join(model_dir, "train")))
    assert json.load(open(os.path.join(model_dir, "flags.json")))["steps"] == 20
    assert not [f for f in os.listdir(model_dir) if f.startswith(".")], "temporary files left behind"
    encoder = keras.saving.load_model(os.path.join(model_dir, "encoder.keras"))
    assert (
        encoder.count_params()
        == keras.saving.load_model(os.path.join(model_dir, "pretrainer.keras")).encoder.count_params()
    )
    # Continuing in the same model_dir resumes at the last step: nothing more to do.
    assert run(job) == []


def test_bad_flags_are_explained(tmp_path, uncased_vocab_path):
    with pytest.raises(SettingsError, match="--input_files"):
        PretrainingJob(model_dir=str(tmp_path), vocab=uncased_vocab_path, preset="tiny")


@pytest.mark.slow
def test_kill_9_and_resume_equals_uninterrupted(tmp_path, pydoc_corpus, uncased_vocab_path, tiny_json):
    config = tiny_json("dropout.json")  # dropout on: its random state must resume too
    reference_dir, resumed_dir = str(tmp_path / "reference"), str(tmp_path / "resumed")
    subprocess.run(
        pretrain_cmd(job_args(pydoc_corpus[0], uncased_vocab_path, config, reference_dir)),
        check=True,
        capture_output=True,
        timeout=600,
    )

    proc = subprocess.Popen(
        pretrain_cmd(job_args(pydoc_corpus[0], uncased_vocab_path, config, resumed_dir)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    index = os.path.join(resumed_dir, "checkpoints", "checkpoint")
    deadline = time.time() + 300
    while not (os.path.exists(index) and "ckpt-10" in open(index).read()):
        assert proc.poll() is None and time.time() < deadline, "the run ended before its first checkpoint"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not os.path.exists(os.path.join(resumed_dir, "pretrainer.keras")), "killed too late"
    done = subprocess.run(
        pretrain_cmd(job_args(pydoc_corpus[0], uncased_vocab_path, config, resumed_dir)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert max_diff(final_weights(reference_dir), final_weights(resumed_dir)) <= 1e-5


def _free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.mark.slow
def test_two_workers_equal_one_process(tmp_path, pydoc_corpus, uncased_vocab_path, tiny_json):
    # No dropout: each worker draws its own dropout masks, so only the dropout-free math can be identical.
    config = tiny_json("nodrop.json", hidden_dropout=0.0, attention_dropout=0.0)
    single_dir, multi_dir = str(tmp_path / "single"), str(tmp_path / "multi")
    args = dict(steps=20)
    subprocess.run(
        pretrain_cmd(job_args(pydoc_corpus[0], uncased_vocab_path, config, single_dir, strategy="cpu", **args)),
        check=True,
        capture_output=True,
        timeout=600,
    )
    cluster = {"worker": [f"127.0.0.1:{p}" for p in _free_ports(2)]}
    workers = []
    for index in range(2):
        env = dict(os.environ, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}}))
        workers.append(
            subprocess.Popen(
                pretrain_cmd(
                    job_args(pydoc_corpus[0], uncased_vocab_path, config, multi_dir, strategy="multi_worker", **args)
                ),
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for w in workers:
        _, err = w.communicate(timeout=600)
        assert w.returncode == 0, err[-3000:]
    assert max_diff(final_weights(single_dir), final_weights(multi_dir)) <= 1e-5


_MIRRORED = """
import json, sys
from keras_bert_lite.training.distribute import split_logical_cpus
split_logical_cpus(2)
from keras_bert_lite.runners.pretrain import parse_args, run
history = run(parse_args(json.loads(sys.argv[1])))
print("HISTORY " + json.dumps(history))
"""


@pytest.mark.slow
def test_two_replicas_follow_the_one_replica_loss_trajectory(tmp_path, pydoc_corpus, uncased_vocab_path, tiny_json):
    config = tiny_json("nodrop2.json", hidden_dropout=0.0, attention_dropout=0.0)
    histories = {}
    for strategy in ("cpu", "mirrored"):
        args = job_args(
            pydoc_corpus[0], uncased_vocab_path, config, str(tmp_path / strategy), steps=20, strategy=strategy
        )
        out = subprocess.run(
            [sys.executable, "-c", _MIRRORED, json.dumps(args)], capture_output=True, text=True, timeout=600
        )
        assert out.returncode == 0, out.stderr[-3000:]
        histories[strategy] = json.loads(out.stdout.split("HISTORY ")[-1])
    for one, two in zip(histories["cpu"], histories["mirrored"]):
        assert one["step"] == two["step"]
        for key in ("mlm_loss", "nsp_loss", "mlm_accuracy", "nsp_accuracy"):
            assert abs(one[key] - two[key]) <= 1e-5, (one, two)
    assert max_diff(final_weights(str(tmp_path / "cpu")), final_weights(str(tmp_path / "mirrored"))) <= 1e-5


# fp16, LAMB, whole-word masking and accumulation: each held to its effect in test_pretrain_flags.py.
@pytest.mark.parametrize("flags", [{"xla": True, "mixed_precision": "bf16"}], ids=["xla-bf16"])
def test_training_flags(tmp_path, pydoc_corpus, uncased_vocab_path, tiny_json, flags, monkeypatch):
    from keras_bert_lite import xla

    # As on a GPU for the compile settings only (the layers still see this CPU): the command sets them, keeping
    # the user's own flags. XLA already read XLA_FLAGS in this process, so the run itself is unchanged.
    monkeypatch.setattr(xla, "visible_device_types", lambda: frozenset({"CPU", "GPU"}))
    monkeypatch.setenv("XLA_FLAGS", "--xla_dump_hlo_as_text=false")
    monkeypatch.setenv("KERAS_BERT_LITE_CACHE", str(tmp_path / "cache"))
    history = run(
        __import__("keras_bert_lite.runners.pretrain", fromlist=["parse_args"]).parse_args(
            job_args(pydoc_corpus[0], uncased_vocab_path, tiny_json("f.json"), str(tmp_path / "run"), steps=10, **flags)
        )
    )
    assert len(history) == 2 and np.isfinite([h["mlm_loss"] + h["nsp_loss"] for h in history]).all()
    assert os.environ["XLA_FLAGS"].startswith("--xla_dump_hlo_as_text=false --xla_gpu_enable_llvm_module")

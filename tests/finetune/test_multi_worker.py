"""kbl-glue --strategy multi_worker: two worker processes on 127.0.0.1 end with the weights of one process with
the same global batch (the strategy.run loop in training/replica_fit.py; Keras 3's fit crashes there)."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_bert_lite import BertConfig, build_encoder
from keras_bert_lite.utils.files import atomic_save_model
from tests.finetune.conftest import review_flags
from tests.finetune.test_custom import reviews, write_csv
from tests.training.test_pretrain import _free_ports

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def no_dropout_init(tmp_path, uncased_vocab_path):
    """Dropout off (each worker would draw its own masks): only the dropout-free math can be identical."""
    directory = tmp_path / "init"
    config = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_layers=2,
        num_heads=4,
        intermediate_size=64,
        max_position_embeddings=128,
        hidden_dropout=0.0,
        attention_dropout=0.0,
    )
    atomic_save_model(build_encoder(config), str(directory / "encoder.keras"))
    (directory / "vocab.txt").write_text(open(uncased_vocab_path).read())
    return str(directory)


def glue_command(args):
    return [sys.executable, os.path.join(REPO, "tasks", "run_glue.py"), *args]


def weights(model_dir):
    return [w.numpy() for w in keras.saving.load_model(os.path.join(model_dir, "model.keras")).weights]


# Windows (issue 58): --seq_length 8 cuts each 7-token review into 2 windows of 6 tokens, 16 global batches an epoch.
@pytest.mark.slow
@pytest.mark.parametrize(
    "long_texts",
    [(), ("--long_documents", "windows", "--seq_length", "8"), ("--task_type", "multi_label")],
    ids=["truncate", "windows", "multi_label"],
)
def test_two_workers_equal_one_process(no_dropout_init, tmp_path, long_texts):
    train = write_csv(tmp_path / "train.csv", reviews(64, 0))  # 8 global batches of 8 per epoch
    dev = write_csv(tmp_path / "dev.csv", reviews(16, 1))

    def args(name, strategy):
        return review_flags(
            no_dropout_init, tmp_path / name, train, dev, *long_texts, epochs=2, learning_rate="1e-3", strategy=strategy
        )

    single = subprocess.run(glue_command(args("single", "cpu")), capture_output=True, text=True, timeout=600)
    assert single.returncode == 0, single.stderr[-3000:]
    cluster = {"worker": [f"127.0.0.1:{p}" for p in _free_ports(2)]}
    workers = [
        subprocess.Popen(
            glue_command(args("multi", "multi_worker")),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(
                os.environ, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
            ),
        )
        for index in range(2)
    ]
    outputs = []
    for worker in workers:
        out, err = worker.communicate(timeout=600)
        assert worker.returncode == 0, err[-3000:]
        outputs.append(out)
    assert "epoch 2/2: " in outputs[0] and "epoch 2/2: " not in outputs[1]  # the strategy.run loop; chief logs
    for a, b in zip(weights(tmp_path / "single"), weights(tmp_path / "multi")):
        np.testing.assert_allclose(a, b, atol=1e-5)
    single_metrics = json.loads((tmp_path / "single" / "metrics.json").read_text())["metrics"]
    multi_metrics = json.loads((tmp_path / "multi" / "metrics.json").read_text())["metrics"]
    assert multi_metrics == pytest.approx(single_metrics, abs=1e-6)

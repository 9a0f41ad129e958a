"""The TPU branch of `resolve_strategy`, with TensorFlow's TPU entry points faked: the resolver is made for the
given TPU name, the cluster connected and the TPU system initialised with that resolver, in that order, and the
TPUStrategy built on it; `--strategy tpu --tpu NAME` of kbl-pretrain and of the fine-tuning runners reaches it."""

from __future__ import annotations

import pytest
import tensorflow as tf

from keras_bert_lite.runners import glue as glue_runner
from keras_bert_lite.training.distribute import resolve_strategy
from tests.training import probes


class FakeTPU:
    """Stands in for TPUClusterResolver, experimental_connect_to_cluster, initialize_tpu_system and TPUStrategy,
    recording each call; the strategy built is `make_strategy(resolver)`."""

    def __init__(self, monkeypatch, make_strategy):
        self.calls = []
        fake = self

        class Resolver:
            def __init__(self, tpu=None, **kwargs):
                self.tpu = tpu
                fake.calls.append(("resolver", tpu, kwargs))

        def connect(resolver, *args, **kwargs):
            self.calls.append(("connect", resolver))

        def initialize(resolver, *args, **kwargs):
            self.calls.append(("initialize", resolver))

        def strategy(resolver, *args, **kwargs):
            self.calls.append(("strategy", resolver))
            self.strategy = make_strategy(resolver)
            return self.strategy

        monkeypatch.setattr(tf.distribute.cluster_resolver, "TPUClusterResolver", Resolver)
        monkeypatch.setattr(tf.config, "experimental_connect_to_cluster", connect)
        monkeypatch.setattr(tf.tpu.experimental, "initialize_tpu_system", initialize)
        monkeypatch.setattr(tf.distribute, "TPUStrategy", strategy)

    def check(self, tpu_name):
        """The four calls, in order, all with the one resolver made for `tpu_name`."""
        assert [c[0] for c in self.calls] == ["resolver", "connect", "initialize", "strategy"], self.calls
        resolver = self.calls[1][1]
        assert isinstance(resolver, tf.distribute.cluster_resolver.TPUClusterResolver)
        assert resolver.tpu == tpu_name and self.calls[0][1] == tpu_name
        assert all(call[1] is resolver for call in self.calls[1:])


class Built(Exception):
    """Raised by the fake TPUStrategy to stop a runner once its strategy is built."""


@pytest.mark.parametrize(
    "name, expected", [("grpc://10.1.2.3:8470", "grpc://10.1.2.3:8470"), ("my-tpu", "my-tpu"), (None, ""), ("", "")]
)
def test_tpu_strategy_is_built_with_a_resolver_for_the_name(monkeypatch, name, expected):
    fake = FakeTPU(monkeypatch, lambda resolver: ("TPUStrategy", resolver))
    strategy = resolve_strategy("tpu", name)
    fake.check(expected)  # "" or None: the local TPU VM
    assert strategy == ("TPUStrategy", fake.calls[-1][1])


def test_pretrain_runs_on_the_strategy_built_for_its_tpu_flag(monkeypatch, tmp_path):
    # The fake TPUStrategy is a real one-device strategy, so the run trains on it.
    fake = FakeTPU(monkeypatch, lambda resolver: tf.distribute.OneDeviceStrategy("/cpu:0"))
    trainers = probes.install_probe(monkeypatch)
    history = probes.pretrain(
        probes.run_args(
            probes.random_words_corpus(tmp_path / "corpus.txt", docs=20),
            probes.write_vocab(tmp_path),
            probes.write_config(tmp_path),
            str(tmp_path / "run"),
            steps=2,
            strategy="tpu",
            tpu="grpc://10.1.2.3:8470",
        )
    )
    fake.check("grpc://10.1.2.3:8470")
    assert trainers[-1].strategy is fake.strategy
    assert [h["step"] for h in history] == [2]


def test_finetune_builds_the_strategy_for_its_tpu_flag(monkeypatch, tmp_path):
    def stop(resolver):
        raise Built(resolver)

    fake = FakeTPU(monkeypatch, stop)
    job = glue_runner.parse_args(
        [
            "--train_file",
            "train.tsv",
            "--dev_file",
            "dev.tsv",
            "--preset",
            "tiny",
            "--vocab",
            "vocab.txt",
            "--model_dir",
            str(tmp_path),
            "--strategy",
            "tpu",
            "--tpu",
            "my-tpu",
        ]
    )
    with pytest.raises(Built):
        glue_runner.run(job)
    fake.check("my-tpu")

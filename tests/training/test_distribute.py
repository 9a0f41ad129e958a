"""Strategy selection: one device is TensorFlow's default strategy (fast dynamic-shape `fit`), not
OneDeviceStrategy."""

import subprocess
import sys

import pytest
import tensorflow as tf

from keras_bert_lite.training.distribute import is_chief, resolve_strategy


@pytest.mark.parametrize("name", ["auto", "cpu"])
def test_one_device_is_the_default_strategy(name, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    strategy = resolve_strategy(name)
    assert strategy is tf.distribute.get_strategy()
    assert strategy.num_replicas_in_sync == 1
    assert is_chief(strategy)


def test_unknown_strategy_names_the_choices():
    with pytest.raises(ValueError, match="auto.*cpu.*mirrored"):
        resolve_strategy("gpu0")


def test_multi_worker_without_tf_config_says_what_to_set(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError, match="TF_CONFIG"):
        resolve_strategy("multi_worker")


def test_mirrored_uses_the_logical_cpus_without_a_gpu():
    code = (
        "from keras_bert_lite.training.distribute import resolve_strategy, split_logical_cpus\n"
        "split_logical_cpus(2)\n"
        "s = resolve_strategy('mirrored')\n"
        "print(type(s).__name__, s.num_replicas_in_sync)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[-2:] == ["MirroredStrategy", "2"]

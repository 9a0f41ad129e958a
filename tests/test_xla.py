"""keras_bert_lite.xla: XLA by default on accelerators only, and the entry points that follow it."""

import os
import re
import subprocess
import sys

import keras
import pytest

import keras_bert_lite as kbl
from keras_bert_lite import xla
from keras_bert_lite.models import inference
from keras_bert_lite.runners import finetune, glue, pretrain
from keras_bert_lite.text import Vocab
from keras_bert_lite.utils.files import writable_dir

GPU_MACHINE, CPU_MACHINE = frozenset({"CPU", "GPU"}), frozenset({"CPU"})


@pytest.fixture
def with_gpu(monkeypatch):
    """As if TensorFlow saw a GPU, whatever this machine has (the decision reads the devices through
    `keras_bert_lite.xla`)."""
    monkeypatch.setattr(xla, "visible_device_types", lambda: GPU_MACHINE)


@pytest.fixture
def cpus_only(monkeypatch):
    """As if TensorFlow saw CPUs alone, whatever this machine has."""
    monkeypatch.setattr(xla, "visible_device_types", lambda: CPU_MACHINE)


@pytest.mark.parametrize(
    "devices, expected",
    [({"CPU"}, False), ({"CPU", "GPU"}, True), ({"GPU"}, True), ({"CPU", "TPU"}, False), (set(), False)],
)
def test_xla_by_default_on_gpus_only(devices, expected):
    assert xla.xla_by_default(devices) is expected


@pytest.mark.parametrize("devices", [CPU_MACHINE, GPU_MACHINE])
def test_use_xla_follows_the_devices_and_explicit_choices_win(devices, monkeypatch):
    monkeypatch.setattr(xla, "visible_device_types", lambda: devices)
    assert xla.use_xla() is xla.xla_by_default(devices)
    assert xla.use_xla(True) is True and xla.use_xla(False) is False


def test_the_devices_are_the_ones_tensorflow_sees():
    import tensorflow as tf

    assert xla.visible_device_types() == {device.device_type for device in tf.config.list_logical_devices()}


@pytest.fixture
def jit_choices(monkeypatch):
    """The `jit_compile` of every tf.function `inference_function` makes (tf.function itself still runs)."""
    import tensorflow as tf

    choices, function = [], tf.function

    def spy(*args, jit_compile=None, **kwargs):
        choices.append(jit_compile)
        return function(*args, jit_compile=jit_compile, **kwargs)

    monkeypatch.setattr(inference.tf, "function", spy)
    return choices


@pytest.mark.parametrize("devices", ["with_gpu", "cpus_only"])
def test_inference_function_follows_the_default(tiny_config, devices, jit_choices, request):
    request.getfixturevalue(devices)
    encoder = kbl.build_encoder(tiny_config)
    inference.inference_function(encoder)
    inference.inference_function(encoder, jit_compile=False)
    inference.inference_function(encoder, jit_compile=True)
    assert jit_choices == [devices == "with_gpu", False, True]


def test_trainer_follows_the_default(tiny_config, tmp_path, with_gpu):
    import tensorflow as tf

    from keras_bert_lite.training.trainer import Trainer

    model = kbl.build_pretrainer(tiny_config)
    strategy = tf.distribute.get_strategy()
    make = lambda **kw: Trainer(model, keras.optimizers.Adam(), strategy, str(tmp_path), **kw)  # noqa: E731
    assert make().jit_compile is True and make(jit_compile=False).jit_compile is False


@pytest.mark.parametrize("flags, expected", [([], None), (["--xla"], True), (["--no-xla"], False)])
def test_xla_flags_default_to_none_and_take_both_forms(flags, expected):
    model = ["--model_dir", "m", "--preset", "tiny"]
    assert pretrain.parse_args([*model, "--input_files", "corpus.txt", *flags]).xla is expected
    assert glue.parse_args([*model, "--task", "mrpc", *flags]).xla is expected


def test_fine_tuning_pads_to_few_lengths_where_it_compiles(uncased_vocab_path, monkeypatch):
    vocab = Vocab.from_file(uncased_vocab_path)
    # Which packer each choice gets; the lengths each pads to are test_packing's.
    monkeypatch.setattr(xla, "visible_device_types", lambda: CPU_MACHINE)
    assert finetune.dynamic_packer(128, vocab, None).length_buckets is False  # CPU: graph mode
    assert finetune.dynamic_packer(128, vocab, True).length_buckets is True
    monkeypatch.setattr(xla, "visible_device_types", lambda: GPU_MACHINE)
    assert finetune.dynamic_packer(128, vocab, None).length_buckets is True
    assert finetune.dynamic_packer(128, vocab, False).length_buckets is False


def test_gpu_compile_flags_add_only_what_the_user_did_not_set():
    flags = xla.gpu_compile_flags("", "/c", 16).split()
    assert flags == [
        "--xla_gpu_enable_llvm_module_compilation_parallelism=true",
        "--xla_gpu_force_compilation_parallelism=16",
        "--xla_gpu_per_fusion_autotune_cache_dir=/c",
    ]
    mine = "--xla_gpu_force_compilation_parallelism=1 --xla_dump_to=/d"
    assert xla.gpu_compile_flags(mine, "/c", 16).split() == [
        "--xla_gpu_force_compilation_parallelism=1",
        "--xla_dump_to=/d",
        "--xla_gpu_enable_llvm_module_compilation_parallelism=true",
        "--xla_gpu_per_fusion_autotune_cache_dir=/c",
    ]


def test_gpu_compile_flags_exist_in_this_tensorflow(tmp_path):
    """XLA aborts the process on an XLA_FLAGS entry it does not know: a TensorFlow that renamed one fails here.
    The cache folder's name has a space, which XLA reads only quoted. The flags are set as the commands set them:
    after TensorFlow has started and listed its devices; the dump folder shows that XLA still read them."""
    flags = xla.gpu_compile_flags(f"--xla_dump_to={tmp_path / 'dump'}", str(tmp_path / "autotune cache"), 2)
    assert '--xla_gpu_per_fusion_autotune_cache_dir="' in flags
    code = (
        "import os, sys, tensorflow as tf; tf.config.list_logical_devices(); "
        "os.environ['XLA_FLAGS'] = sys.argv[1]; "
        "print(tf.function(lambda x: x + 1, jit_compile=True)(tf.constant(1)).numpy())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, flags],
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "XLA_FLAGS"},
    )
    assert out.returncode == 0 and out.stdout.strip() == "2", out.stderr[-2000:]
    assert any((tmp_path / "dump").iterdir())


def test_an_unwritable_cache_folder_is_left_out(tmp_path):
    (tmp_path / "file").write_text("")
    assert writable_dir(str(tmp_path / "file" / "cache")) is None
    assert writable_dir(str(tmp_path / "new" / "cache")) == str(tmp_path / "new" / "cache")
    assert "autotune" not in xla.gpu_compile_flags("", None, 2)


def test_configure_gpu_compiles_only_where_a_gpu_is_seen(monkeypatch, tmp_path):
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    monkeypatch.setenv("KERAS_BERT_LITE_CACHE", str(tmp_path))
    monkeypatch.setattr(xla, "visible_device_types", lambda: CPU_MACHINE)
    xla.configure_gpu_compiles()
    assert "XLA_FLAGS" not in os.environ
    monkeypatch.setattr(xla, "visible_device_types", lambda: GPU_MACHINE)
    xla.configure_gpu_compiles()
    assert f"--xla_gpu_per_fusion_autotune_cache_dir={tmp_path / xla.AUTOTUNE_CACHE}" in os.environ["XLA_FLAGS"]


def test_configure_gpu_compiles_leaves_an_unwritable_cache_out(monkeypatch, tmp_path, with_gpu):
    (tmp_path / "file").write_text("")
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    monkeypatch.setenv("KERAS_BERT_LITE_CACHE", str(tmp_path / "file"))
    xla.configure_gpu_compiles()
    assert "compilation_parallelism" in os.environ["XLA_FLAGS"] and "autotune" not in os.environ["XLA_FLAGS"]


def test_the_gpu_script_sets_the_commands_compile_flags():
    """bench/gpu/run.sh gives the step stage's processes (which do not go through the commands) the same
    settings by hand: a flag added to or renamed in gpu_compile_flags must change there too."""
    script = open(os.path.join(os.path.dirname(__file__), "..", "bench", "gpu", "run.sh")).read()
    in_script = set(re.findall(r"--(xla_gpu_\w+)=", script))
    ours = {flag.split("=")[0].lstrip("-") for flag in xla.gpu_compile_flags("", "/c", 2).split()}
    assert in_script == ours

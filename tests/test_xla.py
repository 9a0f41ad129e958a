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


@pytest.fixture
def with_gpu(monkeypatch):
    """As if TensorFlow saw a GPU (the decision reads `cpu_only` through `keras_bert_lite.xla`)."""
    monkeypatch.setattr(xla, "cpu_only", lambda: False)


def test_use_xla_is_off_on_cpus_on_with_a_gpu_and_explicit_choices_win(monkeypatch):
    assert xla.use_xla() is False                     # the test machines have no GPU
    assert xla.use_xla(True) is True and xla.use_xla(False) is False
    monkeypatch.setattr(xla, "cpu_only", lambda: False)
    assert xla.use_xla() is True and xla.use_xla(False) is False


def test_inference_function_follows_the_default(tiny_config, with_gpu):
    encoder = kbl.build_encoder(tiny_config)
    assert inference.inference_function(encoder)._jit_compile is True
    assert inference.inference_function(encoder, jit_compile=False)._jit_compile is False


def test_inference_function_default_is_graph_mode_on_cpus(tiny_config):
    assert inference.inference_function(kbl.build_encoder(tiny_config))._jit_compile is False


def test_trainer_follows_the_default(tiny_config, tmp_path, with_gpu):
    from keras_bert_lite.training.trainer import Trainer

    import tensorflow as tf

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
    assert finetune.dynamic_packer(128, vocab, None).length_buckets is False    # CPU: graph mode
    assert finetune.dynamic_packer(128, vocab, True).length_buckets is True
    monkeypatch.setattr(xla, "cpu_only", lambda: False)
    assert finetune.dynamic_packer(128, vocab, None).length_buckets is True
    assert finetune.dynamic_packer(128, vocab, False).length_buckets is False


def test_gpu_compile_flags_add_only_what_the_user_did_not_set():
    flags = xla.gpu_compile_flags("", "/c", 16).split()
    assert flags == ["--xla_gpu_enable_llvm_module_compilation_parallelism=true",
                     "--xla_gpu_force_compilation_parallelism=16", "--xla_gpu_per_fusion_autotune_cache_dir=/c"]
    mine = "--xla_gpu_force_compilation_parallelism=1 --xla_dump_to=/d"
    assert xla.gpu_compile_flags(mine, "/c", 16).split() == [
        "--xla_gpu_force_compilation_parallelism=1", "--xla_dump_to=/d",
        "--xla_gpu_enable_llvm_module_compilation_parallelism=true", "--xla_gpu_per_fusion_autotune_cache_dir=/c"]


def test_gpu_compile_flags_exist_in_this_tensorflow(tmp_path):
    """XLA aborts the process on an XLA_FLAGS entry it does not know: a TensorFlow that renamed one fails here.
    The cache folder's name has a space, which XLA reads only quoted. The flags are set as the commands set them:
    after TensorFlow has started and listed its devices; the dump folder shows that XLA still read them."""
    flags = xla.gpu_compile_flags(f"--xla_dump_to={tmp_path / 'dump'}", str(tmp_path / "autotune cache"), 2)
    assert '--xla_gpu_per_fusion_autotune_cache_dir="' in flags
    code = ("import os, sys, tensorflow as tf; tf.config.list_logical_devices(); "
            "os.environ['XLA_FLAGS'] = sys.argv[1]; "
            "print(tf.function(lambda x: x + 1, jit_compile=True)(tf.constant(1)).numpy())")
    out = subprocess.run([sys.executable, "-c", code, flags], capture_output=True, text=True, timeout=300,
                         env={k: v for k, v in os.environ.items() if k != "XLA_FLAGS"})
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
    xla.configure_gpu_compiles()
    assert "XLA_FLAGS" not in os.environ                  # the test machines have no GPU
    monkeypatch.setattr(xla, "cpu_only", lambda: False)
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

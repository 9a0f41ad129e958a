"""Shared fine-tuning flags: seeds, validation, multi-worker rejection, --init as a pretraining model_dir, and
models that cannot take the inputs (too few positions or segment types), refused before training."""

import shutil

import pytest

from keras_bert_lite import BertConfig, artifacts, build_encoder
from keras_bert_lite.runners import pretrain
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.runners.glue import parse_args, run
from keras_bert_lite.utils.files import atomic_save_model
from tests.finetune.conftest import review_flags


def test_seed_flags(capsys):
    base = ["--task", "rte", "--model_dir", "x", "--preset", "tiny"]
    assert parse_args(base).seeds == (0,)
    assert parse_args(base + ["--seed", "7"]).seeds == (7,)
    assert parse_args(base + ["--seeds", "1,2,3"]).seeds == (1, 2, 3)
    for seeds, message in (("1,1", "give distinct comma-separated integers"), ("a,b", "give comma-separated integers")):
        with pytest.raises(SystemExit):
            parse_args(base + ["--seeds", seeds])
        assert f"argument --seeds/--seed: '{seeds}': {message}" in capsys.readouterr().err
    job = parse_args(base)
    assert (job.batch_size, job.epochs, job.learning_rate, job.warmup_proportion) == (32, 3, 2e-5, 0.1)


def test_job_validation(tiny_init, tmp_path, capsys, monkeypatch):
    with pytest.raises(SystemExit):
        parse_args(["--task", "rte", "--model_dir", str(tmp_path), "--preset", "tiny", "--init", tiny_init])
    assert "error: Give exactly one of --init" in capsys.readouterr().err
    (tmp_path / "a_file").write_text("mine")
    with pytest.raises(SettingsError, match=r"--model_dir .*a_file: is a file; the run's directory goes there"):
        run(parse_args(["--task", "rte", "--model_dir", str(tmp_path / "a_file"), "--init", tiny_init]))
    assert (tmp_path / "a_file").read_text() == "mine"
    for tf_config, problem in (("", "--strategy multi_worker needs TF_CONFIG"), ("{oops", "TF_CONFIG is not a JSON")):
        monkeypatch.setenv("TF_CONFIG", tf_config)
        with pytest.raises(SystemExit):
            parse_args(
                [
                    "--task",
                    "rte",
                    "--model_dir",
                    str(tmp_path / "run"),
                    "--init",
                    tiny_init,
                    "--strategy",
                    "multi_worker",
                ]
            )
        assert problem in capsys.readouterr().err and not (tmp_path / "run").exists()


def test_init_model_dir_and_vocab(tiny_init, tmp_path):
    assert artifacts.require_keras_file(tiny_init).endswith("encoder.keras")
    job = parse_args(["--task", "rte", "--model_dir", "x", "--init", tiny_init])
    assert artifacts.vocab_given_or_beside(job.vocab, job.init).endswith("vocab.txt")
    with pytest.raises(FileNotFoundError, match="--vocab is required"):
        artifacts.vocab_given_or_beside("", str(tmp_path))


def test_seq_length_beyond_the_models_positions_is_refused_before_training(tiny_init, tmp_path):
    train, dev = _files(tmp_path)
    run_dir = tmp_path / "run"
    with pytest.raises(
        SettingsError,
        match=r"--seq_length 200 is longer than the 128 positions of the model "
        rf"\(--init {tiny_init}: .*pass --seq_length 128 or less",
    ):
        run(parse_args(review_flags(tiny_init, run_dir, train, dev, seq_length=200)))
    assert not (run_dir / artifacts.TASK_MODEL_FILE).exists() and not (run_dir / artifacts.CHECKPOINTS_DIR).exists()


def test_text_pairs_on_a_model_with_one_segment_type_are_refused_before_training(uncased_vocab_path, tmp_path):
    one_type = tmp_path / "one_type"
    one_type.mkdir()
    config = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_layers=1,
        num_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        type_vocab_size=1,
    )
    atomic_save_model(build_encoder(config), str(one_type / "encoder.keras"))
    shutil.copy(uncased_vocab_path, one_type / "vocab.txt")
    train, dev = _files(tmp_path)
    with pytest.raises(
        SettingsError,
        match=r"The task's text pairs give the second text segment id 1, but the model "
        rf"\(--init {one_type}: type_vocab_size\) has 1 segment type",
    ):
        run(parse_args(review_flags(str(one_type), tmp_path / "pairs", train, dev, text_b="review")))
    assert not (tmp_path / "pairs" / artifacts.CHECKPOINTS_DIR).exists()
    with pytest.raises(SettingsError, match="Next-sentence pairs give the second text segment id 1"):
        pretrain.run(
            pretrain.parse_args(
                [
                    "--input_files",
                    train,
                    "--init",
                    str(one_type),
                    "--model_dir",
                    str(tmp_path / "pretrain"),
                    "--seq_length",
                    "32",
                ]
            )
        )


_MIRRORED = """
import json, sys
from keras_bert_lite.training.distribute import split_logical_cpus
split_logical_cpus(2)
from keras_bert_lite.runners.glue import parse_args, run
print("SUMMARY " + json.dumps(run(parse_args(json.loads(sys.argv[1])))["metrics"]))
"""


def _files(tmp_path):
    from tests.finetune.test_custom import reviews, write_csv

    return write_csv(tmp_path / "train.csv", reviews(24, 0)), write_csv(tmp_path / "dev.csv", reviews(8, 1))


@pytest.mark.slow
def test_mirrored_strategy_on_two_logical_cpus(tiny_init, tmp_path):
    import json
    import os
    import subprocess
    import sys

    train, dev = _files(tmp_path)
    args = review_flags(tiny_init, tmp_path / "run", train, dev, strategy="mirrored")
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run(
        [sys.executable, "-c", _MIRRORED, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=repo,
        env=dict(os.environ, PYTHONPATH=repo),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    metrics = json.loads(out.stdout.split("SUMMARY ")[-1])
    assert set(metrics) == {"accuracy", "f1", "matthews_corrcoef"}
    assert (tmp_path / "run" / "model.keras").exists()


@pytest.mark.parametrize(
    "flags", [["--xla", "--mixed_precision", "bf16"], ["--mixed_precision", "fp16"]], ids=["xla-bf16", "fp16"]
)
def test_precision_and_xla_flags(tiny_init, tmp_path, flags, monkeypatch):
    import os

    import numpy as np

    from keras_bert_lite import xla

    train, dev = _files(tmp_path)
    gpu = "--xla" in flags  # as on a GPU for the compile settings only (see test_pretrain's test_training_flags)
    if gpu:
        monkeypatch.setattr(xla, "visible_device_types", lambda: frozenset({"CPU", "GPU"}))
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    monkeypatch.setenv("KERAS_BERT_LITE_CACHE", str(tmp_path / "cache"))
    summary = run(parse_args(review_flags(tiny_init, tmp_path / "run", train, dev, *flags)))
    assert np.isfinite(summary["metrics"]["accuracy"])
    assert ("--xla_gpu_per_fusion_autotune_cache_dir=" in os.environ.get("XLA_FLAGS", "")) == gpu


@pytest.mark.parametrize("flag, buckets", [("--xla", True), ("--no-xla", False)])
def test_the_task_gets_the_packer_of_the_compile_mode(tiny_init, tmp_path, flag, buckets):
    """Under XLA every new padded length is a compile: the fine-tuning flow packs to few lengths there."""
    from keras_bert_lite.runners import finetune

    class Stop(Exception):
        pass

    packers = []

    def make_task(tokenizer, packer):
        packers.append(packer)
        raise Stop

    job = parse_args(review_flags(tiny_init, tmp_path / "run", "train.csv", "dev.csv", flag))
    with pytest.raises(Stop):
        finetune.run_finetuning(job, make_task)
    assert packers[0].dynamic and packers[0].length_buckets is buckets and packers[0].seq_length == 32

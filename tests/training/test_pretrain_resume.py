"""kbl-pretrain resumed in the same --model_dir: only with the run's settings and architecture; a non-finite
loss stops it with a one-line error and the finite checkpoints kept, and so does Ctrl-C."""

import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.runners.flags import build_parser
from keras_bert_lite.runners.pretrain import PretrainingJob, main, parse_args, run
from tests.sigint import interrupt_when
from tests.training.test_pretrain import job_args, pretrain_cmd, tiny_json  # noqa: F401 - a fixture


@pytest.fixture(scope="module")
def ten_steps(tmp_path_factory, pydoc_corpus, uncased_vocab_path, tiny_json):  # noqa: F811
    """A run of 10 steps (one checkpoint), made once: (its directory, its config file, its corpus: this module's
    copy of the pydoc corpus, so that a test may edit it in place; a test that does restores it)."""
    directory = tmp_path_factory.mktemp("ten_steps")
    corpus = directory / "corpus.txt"
    shutil.copyfile(pydoc_corpus[0], corpus)
    config, run_dir = tiny_json("r.json"), str(directory / "run")
    run(parse_args(job_args(str(corpus), uncased_vocab_path, config, run_dir, steps=10)))
    return run_dir, config, str(corpus)


@pytest.fixture
def started(ten_steps, tmp_path, uncased_vocab_path):
    """Each test's own copy of the 10-step run, in `tmp_path / "run"`, and the arguments that resume it
    (`args.config`, `args.corpus`: its config and corpus files, shared by the copies: a test that edits one restores
    it). A run directory moved is the same run (test_the_run_directory_spelt_another_way_resumes)."""
    run_dir, config, corpus = ten_steps
    shutil.copytree(run_dir, tmp_path / "run")

    def args(steps=10, **extra):
        return job_args(corpus, uncased_vocab_path, config, str(tmp_path / "run"), steps=steps, **extra)

    args.config, args.corpus = config, corpus
    return args


def test_changed_settings_are_refused_by_name(started):
    with pytest.raises(SettingsError) as error:
        run(parse_args(started(learning_rate=5e-5, seq_length=32)))
    message = str(error.value)
    assert "--learning_rate 0.0001 then, 5e-05 now" in message and "--seq_length 64 then, 32 now" in message
    assert "--allow_flag_change learning_rate." in message  # seq_length cannot be accepted:
    assert "--seq_length cannot change in a resumed run" in message  # the data position holds its batches


def test_a_batch_shape_change_is_refused_even_when_allowed(started):
    with pytest.raises(
        SettingsError,
        match=r"--batch_size 8 then, 4 now\. Run with the same values, use a new "
        r"--model_dir \(--init .*run starts from its weights\)\. --batch_size "
        "cannot change in a resumed run",
    ):
        run(parse_args(started(steps=20, batch_size=4, allow_flag_change="batch_size")))


@pytest.mark.slow
def test_the_run_directory_spelt_another_way_resumes(started, tmp_path, monkeypatch):
    args = started(steps=20)
    args[args.index("--model_dir") + 1] = str(tmp_path / "run") + "/"  # a trailing slash
    assert [h["step"] for h in run(parse_args(args))] == [15, 20]
    monkeypatch.chdir(tmp_path)  # relative, with a relative data path too
    args = started(steps=30)
    args[args.index("--model_dir") + 1] = "run"
    args[args.index("--config") + 1] = os.path.relpath(started.config, tmp_path)
    assert [h["step"] for h in run(parse_args(args))] == [25, 30]
    os.rename(tmp_path / "run", tmp_path / "moved")  # and after a move
    args = started(steps=40)
    args[args.index("--model_dir") + 1] = str(tmp_path / "moved")
    assert [h["step"] for h in run(parse_args(args))] == [35, 40]


def test_fewer_steps_than_done_are_refused(started):
    with pytest.raises(SettingsError, match=r"--steps 5: the run in .*run has done 10 already\. Pass --steps 10"):
        run(parse_args(started(steps=5)))


def test_a_damaged_model_config_is_one_line(started, tmp_path):
    (tmp_path / "run" / "model_config.json").write_text("{not json")
    with pytest.raises(SystemExit, match=r"error: .*model_config.json: unreadable .*Restore it"):
        main(started(steps=20))


def test_another_architecture_is_refused_by_field(started):
    with open(started.config, encoding="utf-8") as f:
        original = f.read()
    try:
        with open(started.config, "w", encoding="utf-8") as f:  # the same path, edited
            json.dump({**json.loads(original), "num_layers": 3}, f)
        with pytest.raises(SettingsError, match=r"\(--config: r.json changed\)"):
            run(parse_args(started()))
        with pytest.raises(SettingsError, match="another model architecture \\(num_layers 2 then, 3 now\\)"):
            run(parse_args(started(allow_flag_change="config")))  # a change accepted, but not this one
    finally:
        with open(started.config, "w", encoding="utf-8") as f:
            f.write(original)


def test_a_corpus_changed_in_place_is_refused(started):
    with open(started.corpus, "rb") as f:  # bytes: restored exactly, whatever its line ends
        original = f.read()
    try:
        with open(started.corpus, "a", encoding="utf-8") as f:
            f.write("\nA sentence added to the corpus after the run started.\n")
        with pytest.raises(
            SettingsError,
            match=r"\(--input_files: corpus.txt changed\)\..* --allow_flag_change "
            "input_files",
        ):
            run(parse_args(started(steps=20)))
        assert [h["step"] for h in run(parse_args(started(steps=20, allow_flag_change="input_files")))] == [15, 20]
    finally:
        with open(started.corpus, "wb") as f:
            f.write(original)


def test_more_steps_continue_the_run(started, caplog):
    history = run(parse_args(started(steps=20)))
    assert [h["step"] for h in history] == [15, 20]
    assert "learning-rate schedule is now computed for the new length" in caplog.text


@pytest.mark.slow
def test_a_non_finite_loss_stops_with_one_line_and_the_finite_checkpoint_kept(started, tmp_path):
    # The run diverges once the learning rate becomes absurd: accepted by name, then stopped at the first NaN.
    args = started(steps=40, learning_rate=1e30, allow_flag_change="learning_rate")
    final_model = (tmp_path / "run" / "pretrainer.keras").read_bytes()
    done = subprocess.run(pretrain_cmd(args), capture_output=True, text=True, timeout=600)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: Training stopped at step 1") and "not finite" in last, done.stderr[-2000:]
    assert "ckpt-10" in last and "Traceback" not in done.stderr
    options = {o for action in build_parser(PretrainingJob, "")._actions for o in action.option_strings}
    assert set(re.findall(r"--\w+", last)) <= options and "--warmup_steps" in last  # kbl-pretrain's own flags
    checkpoints = tmp_path / "run" / "checkpoints"
    assert sorted(p for p in os.listdir(checkpoints) if p.endswith(".index")) == ["ckpt-10.index"]
    reader = tf.train.load_checkpoint(str(checkpoints / "ckpt-10"))
    for name, dtype in reader.get_variable_to_dtype_map().items():
        if dtype.is_floating:
            assert np.isfinite(reader.get_tensor(name)).all(), name
    assert (tmp_path / "run" / "pretrainer.keras").read_bytes() == final_model  # the 10-step model, untouched
    # The accepted change made no checkpoint: flags.json still holds the settings of ckpt-10, which resumes as it was.
    assert json.loads((tmp_path / "run" / "flags.json").read_text())["learning_rate"] == 1e-4
    assert [h["step"] for h in run(parse_args(started(steps=20)))] == [15, 20]


def test_flag_errors_exit_with_one_line(started):
    with pytest.raises(SystemExit, match="--allow_flag_change nonsense: no such setting"):
        main(started(allow_flag_change="nonsense"))


@pytest.mark.slow
def test_ctrl_c_stops_with_one_line_keeping_the_last_checkpoint_and_the_run_resumes(started, tmp_path):
    # One compiled loop of 990 steps after the resume: Ctrl-C stops it at the next step, not at its end.
    long_loop = started(
        steps=1000, checkpoint_every=1000, log_every=1000, allow_flag_change="steps,checkpoint_every,log_every"
    )
    code, output, _ = interrupt_when(pretrain_cmd(long_loop), lambda text: "Resumed from" in text)
    assert code == 130 and "Traceback" not in output, output[-3000:]
    last = output.strip().splitlines()[-1]
    checkpoints = tmp_path / "run" / "checkpoints"
    stopped = re.fullmatch(
        rf"interrupted at step (\d+): the last checkpoint \(step 10\) is kept in {checkpoints}; "
        "run the same command to resume",
        last,
    )
    assert stopped and int(stopped[1]) < 1000, last
    assert sorted(os.listdir(checkpoints)) == ["checkpoint", "ckpt-10.data-00000-of-00001", "ckpt-10.index"]
    assert not [name for name in os.listdir(tmp_path / "run") if ".tmp-" in name]
    done = subprocess.run(
        pretrain_cmd(started(steps=15, allow_flag_change="steps")), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0 and "ckpt-10 at step 10" in done.stderr, done.stderr[-3000:]

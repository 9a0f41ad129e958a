"""Fine-tuning resumes: killed mid-epoch (kill -9) and run again, it ends as the uninterrupted run; run again
after it finished, it only rewrites its files; with other settings it is refused; a NaN stops it, and so does
Ctrl-C, each naming only the files it keeps."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import keras
import numpy as np
import pytest

from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.runners.flags import build_parser
from keras_bert_lite.runners.glue import GlueJob, main, parse_args, run
from keras_bert_lite.training.non_finite import NonFiniteLossError
from tests.finetune.conftest import review_flags
from tests.finetune.test_custom import reviews, write_csv
from tests.sigint import interrupt_when

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def review_run_flags(init, directory):
    """kbl-glue flags for 3 epochs of 48 batches on keyword reviews (written into `directory`), into
    `directory/<name>` (dropout on)."""
    train = write_csv(directory / "train.csv", reviews(384, 0))
    dev = write_csv(directory / "dev.csv", reviews(24, 1))

    def make(name, *extra):
        return review_flags(init, directory / name, train, dev, *extra, epochs=3, learning_rate=1e-3)

    return make


@pytest.fixture
def flags(tiny_init, tmp_path):
    """`review_run_flags` in the test's own `tmp_path`."""
    return review_run_flags(tiny_init, tmp_path)


def glue(args, **kwargs):
    return subprocess.Popen(
        [sys.executable, os.path.join(REPO, "tasks", "run_glue.py"), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def weights(model_dir):
    return [w.numpy() for w in keras.saving.load_model(os.path.join(model_dir, "model.keras")).weights]


# Windows (issue 58): --seq_length 8 cuts each 7-token review into 2 windows of 6 tokens, 96 batches an epoch.
# Multi-label (issue 58): each review's label a set of one, the threshold tuned each epoch (task.json's the best's).
@pytest.mark.slow
@pytest.mark.parametrize(
    "long_texts",
    [(), ("--long_documents", "windows", "--seq_length", "8"), ("--task_type", "multi_label", "--tune_threshold")],
    ids=["truncate", "windows", "multi_label"],
)
def test_killed_mid_epoch_and_resumed_equals_uninterrupted(flags, tmp_path, long_texts):
    reference = glue(flags("reference", *long_texts))
    assert reference.wait(timeout=600) == 0, reference.stderr.read()[-3000:]

    killed = glue(flags("resumed", *long_texts))
    first_epoch = tmp_path / "resumed" / "checkpoints" / "ckpt-1.index"
    deadline = time.time() + 300
    while not first_epoch.exists():
        assert killed.poll() is None and time.time() < deadline, "the run ended before its first epoch's end"
        time.sleep(0.02)
    killed.send_signal(signal.SIGKILL)  # during epoch 2 (an epoch is 48 steps)
    killed.wait()
    assert not (tmp_path / "resumed" / "checkpoints" / "ckpt-3.index").exists(), "killed too late"

    resumed = glue(flags("resumed", *long_texts))
    _, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err[-3000:]
    assert "ckpt-1: 1 epoch(s) done" in err  # it resumed (a fresh start would end the same)
    ref = json.loads((tmp_path / "reference" / "metrics.json").read_text())
    res = json.loads((tmp_path / "resumed" / "metrics.json").read_text())
    assert res["per_seed"]["0"]["best_epoch"] == ref["per_seed"]["0"]["best_epoch"]
    for a, b in zip(ref["per_seed"]["0"]["epochs"], res["per_seed"]["0"]["epochs"]):
        assert b == pytest.approx(a, abs=1e-6)  # every epoch's dev metrics, the resumed ones included
    for a, b in zip(weights(tmp_path / "reference"), weights(tmp_path / "resumed")):
        np.testing.assert_allclose(a, b, atol=1e-5)
    for name in ("dev_predictions.tsv", "task.json"):
        assert (tmp_path / "reference" / name).read_text() == (tmp_path / "resumed" / name).read_text()


@pytest.fixture(scope="module")
def one_then_two_epochs(tiny_init, tmp_path_factory):
    """A run of 1 epoch, then the same run with --epochs 2: (flags, run directory, first summary, second summary).
    Tests may run it again; one that changes its files restores them."""
    directory = tmp_path_factory.mktemp("one_then_two_epochs")
    flags = review_run_flags(tiny_init, directory)
    first = run(parse_args(flags("run", "--epochs", "1")))
    more = run(parse_args(flags("run", "--epochs", "2")))
    return flags, directory / "run", first, more


def test_a_finished_run_run_again_only_rewrites_its_files(one_then_two_epochs):
    flags, run_dir, _, finished = one_then_two_epochs  # a run of 2 epochs, done
    (run_dir / "dev_predictions.tsv").unlink()
    again = run(parse_args(flags("run", "--epochs", "2", "--xla")))  # how it runs may change
    assert again["per_seed"] == finished["per_seed"]  # the same epochs: none trained again
    assert (run_dir / "dev_predictions.tsv").exists()
    with pytest.raises(SettingsError, match="--learning_rate 0.001 then, 0.002 now"):
        run(parse_args(flags("run", "--epochs", "2", "--learning_rate", "2e-3")))
    train = run_dir.parent / "train.csv"  # shared with the other tests of the run: restored below
    original = train.read_bytes()  # bytes: the CSV's lines end in \r\n
    rows = original.splitlines(keepends=True)
    try:
        train.write_bytes(b"".join(rows + rows[1:2]))  # the same path, another content
        with pytest.raises(SettingsError, match=r"\(--train_file: train.csv changed\)"):
            run(parse_args(flags("run", "--epochs", "2")))
    finally:
        train.write_bytes(original)


def test_more_epochs_continue_from_the_last_one(one_then_two_epochs):
    _, _, first, more = one_then_two_epochs
    assert more["per_seed"]["0"]["epochs"][0] == first["per_seed"]["0"]["epochs"][0]
    # Carried over from the first run's state, not measured again: epoch 1 was not trained again.
    assert more["per_seed"]["0"]["train_seconds_per_epoch"][0] == first["per_seed"]["0"]["train_seconds_per_epoch"][0]
    assert len(more["per_seed"]["0"]["epochs"]) == 2


@pytest.mark.slow
def test_a_run_from_before_a_flag_existed_resumes_with_its_default(flags, tmp_path):
    run(parse_args(flags("run", "--epochs", "1")))
    path = tmp_path / "run" / "flags.json"
    saved = json.loads(path.read_text())
    for name in ("long_documents", "doc_stride", "window_pooling"):  # what a run made before issue 58 lacks
        del saved[name]
    path.write_text(json.dumps(saved))
    with pytest.raises(SettingsError, match="--long_documents None then, windows now"):  # not what it did
        run(parse_args(flags("run", "--epochs", "2", "--long_documents", "windows")))
    assert len(run(parse_args(flags("run", "--epochs", "2")))["per_seed"]["0"]["epochs"]) == 2


def test_fewer_epochs_than_done_are_refused(one_then_two_epochs):
    flags, run_dir, _, _ = one_then_two_epochs  # a run that has done 2 epochs
    with pytest.raises(SettingsError, match=r"--epochs 1: the run in .*run has done 2 already\. Pass --epochs 2"):
        run(parse_args(flags("run", "--epochs", "1")))
    assert json.loads((run_dir / "flags.json").read_text())["epochs"] == 2  # not rewritten


def unknown_names(message):
    """The --flags in `message` that kbl-glue does not have, and the paths in it that do not exist."""
    options = {o for action in build_parser(GlueJob, "")._actions for o in action.option_strings}
    paths = re.findall(r"(/\S+?)[,;.]?(?:\s|$)", message)
    return sorted(set(re.findall(r"--\w+", message)) - options) + [p for p in paths if not os.path.exists(p)]


def test_a_non_finite_loss_before_any_save_names_no_file(flags, tmp_path):
    with pytest.raises(
        NonFiniteLossError,
        match=r"Training stopped at step \d+: loss nan\b.*\. Nothing was saved, "
        r"before it or after\. Usual fixes: a lower --learning_rate or more "
        r"--warmup_proportion, or",
    ) as error:
        run(parse_args(flags("run", "--learning_rate", "1e30")))
    assert not (tmp_path / "run" / "checkpoints").exists() or not os.listdir(tmp_path / "run" / "checkpoints")
    assert not (tmp_path / "run" / "model.keras").exists() and "model.keras" not in str(error.value)
    assert unknown_names(str(error.value)) == []


@pytest.mark.slow
def test_a_non_finite_loss_after_a_saved_epoch_names_its_files(flags, tmp_path):
    run(parse_args(flags("run", "--epochs", "1")))
    with pytest.raises(NonFiniteLossError) as error:
        run(
            parse_args(flags("run", "--epochs", "2", "--learning_rate", "1e30", "--allow_flag_change", "learning_rate"))
        )
    run_dir = tmp_path / "run"
    assert re.search(
        rf"Nothing was saved after it; the last checkpoint \(epoch 1\) is kept in {run_dir}/checkpoints, "
        rf"and {run_dir}/model.keras holds the best epoch so far\.",
        str(error.value),
    ), str(error.value)
    assert unknown_names(str(error.value)) == []


def test_an_epoch_whose_last_update_diverged_saves_nothing(flags, tmp_path):
    # One step per epoch: its loss is finite, its update blows the weights up (inf/NaN at 3e38; finite but huge at
    # 1e30, with outputs that overflow). The dev predictions show it before anything is saved.
    for rate in ("3e38", "1e30"):
        with pytest.raises(NonFiniteLossError, match="The model's predictions are not finite: training diverged"):
            run(
                parse_args(
                    flags(
                        f"run{rate}",
                        "--learning_rate",
                        rate,
                        "--batch_size",
                        "384",
                        "--epochs",
                        "1",
                        "--warmup_proportion",
                        "0",
                    )
                )
            )
        assert not (tmp_path / f"run{rate}" / "model.keras").exists()
        checkpoints = tmp_path / f"run{rate}" / "checkpoints"
        assert not checkpoints.exists() or not os.listdir(checkpoints)


def test_the_command_reports_a_non_finite_loss_in_one_line(flags):
    with pytest.raises(SystemExit) as exit_info:
        main(flags("run", "--learning_rate", "1e30", "--epochs", "1"))
    assert str(exit_info.value.code).startswith("error: Training stopped at step ")


@pytest.mark.slow
def test_ctrl_c_stops_fine_tuning_with_one_line_and_the_run_resumes(flags, tmp_path):
    args, run_dir = flags("run"), tmp_path / "run"
    command = [sys.executable, os.path.join(REPO, "tasks", "run_glue.py"), *args]
    code, output, _ = interrupt_when(command, lambda _: (run_dir / "checkpoints" / "ckpt-1.index").exists())
    assert code == 130 and "Traceback" not in output, output[-3000:]
    last = output.strip().splitlines()[-1]
    stopped = re.fullmatch(
        rf"interrupted at step (\d+): the last checkpoint \(epoch 1\) is kept in {run_dir}/"
        rf"checkpoints, and {run_dir}/model.keras holds the best epoch so far; run the same "
        "command to resume",
        last,
    )
    assert stopped and 48 < int(stopped[1]) < 96, last  # in epoch 2, of 48 steps
    assert sorted(os.listdir(run_dir / "checkpoints")) == ["checkpoint", "ckpt-1.data-00000-of-00001", "ckpt-1.index"]
    assert not [name for name in os.listdir(run_dir) if ".tmp-" in name]
    resumed = glue(args)
    _, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0 and "ckpt-1: 1 epoch(s) done" in err, err[-3000:]

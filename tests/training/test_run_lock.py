"""One command at a time in a run directory (`runners.run_lock`): a second one is refused, naming the holder;
the lock goes with its process, even after kill -9; only the chief of a multi-worker job takes it; a command that
fails before writing a file removes the directories it created."""

import os
import signal
import subprocess
import sys

import pytest

from keras_bert_lite.runners import glue, pretrain
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.runners.run_lock import holds_run_dir, run_dir_lock
from keras_bert_lite.utils.files import dirs_removed_on_failure

HOLD = """
import sys
from keras_bert_lite.runners.run_lock import run_dir_lock
with run_dir_lock(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.read()
"""


def test_a_second_holder_is_refused_until_the_first_ends(tmp_path):
    with run_dir_lock(str(tmp_path / "run")):
        with pytest.raises(
            SettingsError,
            match=rf"run is in use by process {os.getpid()} on .*, since .*: two "
            "runs in one directory would overwrite each other's checkpoints",
        ):
            with run_dir_lock(str(tmp_path / "run")):
                pass
    with run_dir_lock(str(tmp_path / "run")):
        pass


def test_the_lock_goes_with_a_killed_process(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(SettingsError, match=f"in use by process {holder.pid} "):
            with run_dir_lock(str(tmp_path)):
                pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with run_dir_lock(str(tmp_path)):
        pass


def test_training_commands_are_refused_in_a_directory_in_use(tmp_path):
    with run_dir_lock(str(tmp_path / "run")):
        with pytest.raises(SettingsError, match="run is in use by process"):
            pretrain.run(
                pretrain.parse_args(
                    [
                        "--input_files",
                        "none.txt",
                        "--preset",
                        "tiny",
                        "--vocab",
                        "none.txt",
                        "--model_dir",
                        str(tmp_path / "run"),
                    ]
                )
            )
        with pytest.raises(SettingsError, match="run is in use by process"):
            glue.run(
                glue.parse_args(
                    [
                        "--task",
                        "sst2",
                        "--data_dir",
                        str(tmp_path),
                        "--preset",
                        "tiny",
                        "--vocab",
                        "none.txt",
                        "--model_dir",
                        str(tmp_path / "run"),
                    ]
                )
            )


def test_only_the_chief_takes_the_lock(tmp_path, monkeypatch):
    class Job:
        model_dir = str(tmp_path / "run")

    ran = holds_run_dir(lambda job: "ran")
    with run_dir_lock(Job.model_dir):
        monkeypatch.setenv(
            "TF_CONFIG", '{"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 1}}'
        )
        assert ran(Job()) == "ran"
        monkeypatch.setenv(
            "TF_CONFIG", '{"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 0}}'
        )
        with pytest.raises(SettingsError, match="in use"):
            ran(Job())


class Refused(Exception):
    """What a command raises when it refuses to go on."""


def _fail_inside(run_dir, *, file="", folder=""):
    """Runs a command in `run_dir` that makes `folder`, writes `file` (paths inside it), then fails."""
    with pytest.raises(Refused):
        with run_dir_lock(str(run_dir)):
            if folder:
                (run_dir / folder).mkdir(parents=True)
            if file:
                (run_dir / file).parent.mkdir(parents=True, exist_ok=True)
                (run_dir / file).write_text("of value")
            raise Refused


def test_a_failed_command_removes_the_directories_it_created(tmp_path):
    _fail_inside(tmp_path / "new" / "runs" / "run", folder="seed_1/logs")
    assert os.listdir(tmp_path) == []  # the run directory, its lock, empty folders, the parents made
    (tmp_path / "runs" / "other").mkdir(parents=True)
    _fail_inside(tmp_path / "runs" / "new" / "run")
    assert os.listdir(tmp_path / "runs") == ["other"]  # parents that existed stay


def test_a_failed_command_keeps_a_directory_with_files_or_made_before(tmp_path):
    _fail_inside(tmp_path / "run", file="checkpoints/ckpt-1.index")
    assert (tmp_path / "run" / "checkpoints" / "ckpt-1.index").read_text() == "of value"
    (tmp_path / "mine").mkdir()
    _fail_inside(tmp_path / "mine")  # the user's own directory, even empty
    assert os.listdir(tmp_path / "mine") == ["run.lock"]


def test_a_refused_command_leaves_the_holders_directory_and_a_file_in_its_place(tmp_path):
    with run_dir_lock(str(tmp_path / "run")):
        with pytest.raises(SettingsError, match="in use"):
            with run_dir_lock(str(tmp_path / "run")):
                pass
        assert (tmp_path / "run" / "run.lock").exists()
    (tmp_path / "a_file").write_text("mine")
    with pytest.raises(SettingsError, match=r"--model_dir .*a_file: is a file; the run's directory goes there"):
        with run_dir_lock(str(tmp_path / "a_file")):
            pass
    assert (tmp_path / "a_file").read_text() == "mine"


def test_an_export_that_fails_removes_the_directories_it_created(tmp_path):
    # kbl-export's --model_base_path (`dirs_removed_on_failure`): the same rule without a lock file.
    with pytest.raises(Refused), dirs_removed_on_failure(tmp_path / "exports" / "m"):
        (tmp_path / "exports" / "m" / "encoder").mkdir(parents=True)
        raise Refused
    assert os.listdir(tmp_path) == []
    with pytest.raises(Refused), dirs_removed_on_failure(tmp_path / "m"):
        (tmp_path / "m" / "1").mkdir(parents=True)
        (tmp_path / "m" / "1" / "saved_model.pb").write_text("of value")
        raise Refused
    assert (tmp_path / "m" / "1" / "saved_model.pb").exists()

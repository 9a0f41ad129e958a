"""The kbl-* commands are quiet and plain: none of TensorFlow's log lines (at start-up or later) and no terminal escape
codes in a log file, unless --verbose asks for TensorFlow's lines; what else reaches stderr is kept, in order."""

import os
import signal
import subprocess
import sys

import pytest

from keras_bert_lite.runners.flags import build_parser
from keras_bert_lite.runners.pretrain import PretrainingJob
from keras_bert_lite.runners.squad import SquadJob

BIN = os.path.dirname(sys.executable)
ENV = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}


def run_logged(tmp_path, command):
    log = tmp_path / "log.txt"
    with open(log, "w") as f:
        done = subprocess.run(command, stdout=f, stderr=subprocess.STDOUT, env=ENV, timeout=600)
    return done.returncode, log.read_text()


@pytest.mark.parametrize("command", ["kbl-serve", "kbl-client", "kbl-export"])
def test_every_command_starts_quietly(tmp_path, command):
    code, text = run_logged(tmp_path, [os.path.join(BIN, command), "--help"])
    assert code == 0 and "usage:" in text and "I0000" not in text and "absl::InitializeLog" not in text


def test_help_is_quiet_and_shows_each_default_once(tmp_path):
    code, text = run_logged(tmp_path, [os.path.join(BIN, "kbl-glue"), "--help"])
    assert code == 0 and "--lower_case true|false" in text
    assert "I0000" not in text and "absl::InitializeLog" not in text and "\x1b" not in text
    assert "(default: )" not in text and "(default: 32)" in text and text.count("(default: 2e-05)") == 1


@pytest.mark.parametrize(
    "job, dest, shown",
    [
        (PretrainingJob, "seed", "(default: 0)"),
        (SquadJob, "null_score_diff_threshold", "(default: 0.0)"),
        (SquadJob, "seeds", "(default: 0)"),
        (SquadJob, "epochs", "(default: 2)"),
    ],
)
def test_help_shows_a_default_of_zero_once(job, dest, shown):
    # 0 == False: a check by `in (None, "", (), False)` hid these defaults.
    helps = {action.dest: action.help for action in build_parser(job, "")._actions}
    assert helps[dest].count("default:") == 1 and helps[dest].endswith(shown), helps[dest]
    assert "default" not in helps["whole_word_masking" if job is PretrainingJob else "skip_bad_rows"]
    assert "default:" not in helps["init"] and "default:" not in helps["lower_case"]


@pytest.mark.slow
def test_a_redirected_pretraining_log_is_plain(tmp_path, pydoc_corpus, uncased_vocab_path):
    command = [
        os.path.join(BIN, "kbl-pretrain"),
        "--input_files",
        pydoc_corpus[0],
        "--vocab",
        uncased_vocab_path,
        "--preset",
        "tiny",
        "--model_dir",
        str(tmp_path / "run"),
        "--seq_length",
        "32",
        "--batch_size",
        "4",
        "--steps",
        "4",
        "--log_every",
        "2",
    ]
    code, text = run_logged(tmp_path, command)
    assert code == 0, text[-3000:]
    assert "I0000" not in text and "\x1b" not in text and "\b" not in text, text[:3000]
    assert "cuInit" not in text and "Sharding callback" not in text, text[:3000]  # TensorFlow's, after start-up
    assert "step 4: mlm_loss" in text  # off a terminal: one log line per interval
    code, text = run_logged(tmp_path, command + ["--verbose", "--steps", "6"])
    assert code == 0 and "I0000" in text and "Sharding callback" in text  # --verbose shows TensorFlow's lines


# What a command's process writes to fd 2 as TensorFlow's C++ side does, and then how it ends.
FILTERED = r"""
import os, sys
from keras_bert_lite.runners.cli import filtered_stderr
with filtered_stderr():
    os.write(2, b"I0000 00:00:1795.1 7 service.cc:153] XLA service 0x1 initialized for platform Host\n")
    os.write(2, b"E0000 00:00:1795.2 7 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error\n")
    os.write(2, b"E0000 00:00:1795.3 7 some_kernel.cc:9] a real error\n")
    print("a line of Python's", file=sys.stderr)
    if sys.argv[1] == "abort":
        os.abort()
    raise SystemExit("error: the command's last line")
"""


@pytest.mark.parametrize("ending", ["error", "abort"])
def test_stderr_is_filtered_for_the_whole_run_and_drained_however_it_ends(tmp_path, ending):
    code, text = run_logged(tmp_path, [sys.executable, "-c", FILTERED, ending])
    assert "service.cc" not in text and "cuInit" not in text
    assert "E0000 00:00:1795.3 7 some_kernel.cc:9] a real error\n" in text and "a line of Python's\n" in text
    if ending == "abort":  # the filter outlives the process: the lines before a crash are kept
        assert code == -signal.SIGABRT
    else:  # the last line comes after everything the filter passed on
        assert code == 1 and text.endswith("error: the command's last line\n")
        assert text.index("a real error") < text.index("error: the command's last line")

"""The kbl-* commands are quiet and plain: no TensorFlow start-up lines and no terminal escape codes in a log file,
unless --verbose asks for TensorFlow's lines."""

import os
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


@pytest.mark.parametrize("job, dest, shown", [(PretrainingJob, "seed", "(default: 0)"),
                                               (SquadJob, "null_score_diff_threshold", "(default: 0.0)"),
                                               (SquadJob, "seeds", "(default: 0)"), (SquadJob, "epochs", "(default: 2)")])
def test_help_shows_a_default_of_zero_once(job, dest, shown):
    # 0 == False: a check by `in (None, "", (), False)` hid these defaults.
    helps = {action.dest: action.help for action in build_parser(job, "")._actions}
    assert helps[dest].count("default:") == 1 and helps[dest].endswith(shown), helps[dest]
    assert "default" not in helps["whole_word_masking" if job is PretrainingJob else "skip_bad_rows"]
    assert "default:" not in helps["init"] and "default:" not in helps["lower_case"]


@pytest.mark.slow
def test_a_redirected_pretraining_log_is_plain(tmp_path, pydoc_corpus, uncased_vocab_path):
    command = [os.path.join(BIN, "kbl-pretrain"), "--input_files", pydoc_corpus[0], "--vocab", uncased_vocab_path,
               "--preset", "tiny", "--model_dir", str(tmp_path / "run"), "--seq_length", "32", "--batch_size", "4",
               "--steps", "4", "--log_every", "2"]
    code, text = run_logged(tmp_path, command)
    assert code == 0, text[-3000:]
    assert "I0000" not in text and "\x1b" not in text and "\b" not in text, text[:3000]
    assert "step 4: mlm_loss" in text                  # off a terminal: one log line per interval
    code, text = run_logged(tmp_path, command + ["--verbose", "--steps", "6"])
    assert code == 0 and "I0000" in text               # --verbose shows TensorFlow's lines

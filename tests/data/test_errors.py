"""A command's expected errors (bad data, a diverged run, unreadable checkpoints) are one line on stderr (exit
status 1), never a traceback; other errors keep theirs."""

import pytest

from keras_bert_lite.data.errors import DataError
from keras_bert_lite.runners.errors import exit_on_expected_error
from keras_bert_lite.training.checkpointing import CheckpointError
from keras_bert_lite.training.non_finite import NonFiniteLossError
from keras_bert_lite.utils.errors import InputFileError


@pytest.mark.parametrize("error", [DataError, NonFiniteLossError, CheckpointError])
def test_an_expected_error_becomes_one_line(error):
    with pytest.raises(SystemExit) as exit_info, exit_on_expected_error():
        raise error("train.csv:7: the label is missing (null);\nfix it.")
    assert exit_info.value.code == "error: train.csv:7: the label is missing (null); fix it."
    assert exit_info.value.__suppress_context__


@pytest.mark.parametrize(
    "error",
    [
        PermissionError(13, "Permission denied", "runs/x/flags.json"),
        OSError(30, "Read-only file system", "runs/x/checkpoints"),
        InputFileError("vocab.txt:3: empty token line."),
    ],
)
def test_file_system_and_input_file_errors_are_one_line(error):
    with pytest.raises(SystemExit) as exit_info, exit_on_expected_error():
        raise error
    assert exit_info.value.code == f"error: {error}"


def test_other_errors_pass_through():
    with pytest.raises(KeyError), exit_on_expected_error():
        raise KeyError("a bug keeps its traceback")

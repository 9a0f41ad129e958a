"""A command's expected errors (bad data, a diverged run, unreadable checkpoints) are one line on stderr (exit
status 1), never a traceback; other errors keep theirs."""

import pytest

from keras_bert_lite.data.errors import DataError
from keras_bert_lite.training.checkpointing import CheckpointError
from keras_bert_lite.runners.errors import exit_on_expected_error
from keras_bert_lite.training.non_finite import NonFiniteLossError


@pytest.mark.parametrize("error", [DataError, NonFiniteLossError, CheckpointError])
def test_an_expected_error_becomes_one_line(error):
    with pytest.raises(SystemExit) as exit_info, exit_on_expected_error():
        raise error("train.csv:7: the label is missing (null);\nfix it.")
    assert exit_info.value.code == "error: train.csv:7: the label is missing (null); fix it."
    assert exit_info.value.__suppress_context__


def test_other_errors_pass_through():
    with pytest.raises(KeyError), exit_on_expected_error():
        raise KeyError("a bug keeps its traceback")

"""A command's `DataError` is one line on stderr (exit status 1), never a traceback."""

import pytest

from keras_bert_lite.data.errors import DataError, exit_on_data_error


def test_a_data_error_becomes_one_line():
    with pytest.raises(SystemExit) as exit_info, exit_on_data_error():
        raise DataError("train.csv:7: the label is missing (null);\nfix it.")
    assert exit_info.value.code == "error: train.csv:7: the label is missing (null); fix it."
    assert exit_info.value.__suppress_context__


def test_other_errors_pass_through():
    with pytest.raises(KeyError), exit_on_data_error():
        raise KeyError("a bug keeps its traceback")

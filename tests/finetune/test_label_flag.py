"""kbl-glue --labels names classes by the readers' label rule (data/labels.py)."""

import pytest

from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.runners.glue_job import _label_flag


def test_labels_flag_follows_the_label_rule():
    assert _label_flag("1.0, 2 ,neg ") == ["1", "2", "neg"]
    with pytest.raises(SettingsError, match=r"--labels '1,1.0' names a class twice"):
        _label_flag("1,1.0")
    with pytest.raises(SettingsError, match=r"--labels 'a,,b': the label is empty"):
        _label_flag("a,,b")

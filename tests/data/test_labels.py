"""Labels: one normalisation for every format (strip; numbers by value; JSON booleans as true/false), missing
labels refused or skipped, non-finite regression targets refused with file:line."""

import json

import numpy as np
import pytest

from keras_bert_lite.data.errors import DataError
from keras_bert_lite.data.labels import class_label, regression_label
from keras_bert_lite.data.sentences import encode_labels, float_labels, read_sentence_file, sorted_labels


@pytest.mark.parametrize(
    "value, name",
    [
        ("neg ", "neg"),
        (" neg\t", "neg"),
        ("True", "True"),
        ("B-PER", "B-PER"),
        (1, "1"),
        (1.0, "1"),
        ("1", "1"),
        (" 1.0 ", "1"),
        ("+1", "1"),
        ("1e0", "1"),
        (-0.0, "0"),
        ("-0", "0"),
        (0.5, "0.5"),
        ("0.50", "0.5"),
        (10**30, "1" + "0" * 30),
        ("1e999999", "1E+999999"),
        (True, "true"),
        (False, "false"),
        ("true", "true"),
    ],
)
def test_class_names(value, name):
    assert class_label(value) == name


@pytest.mark.parametrize(
    "value, reason",
    [
        (None, "missing"),
        ("", "empty"),
        ("  ", "empty"),
        ([1], "a JSON list"),
        ({"a": 1}, "a JSON dict"),
        ("neg\nfine film,pos", "spans several lines"),
        (float("nan"), "not a finite number"),
        ("1e99999999999999999999", "a number too large to compare"),
    ],
)
def test_class_labels_refused(value, reason):
    with pytest.raises(ValueError, match=reason):
        class_label(value)


@pytest.mark.parametrize(
    "value, reason",
    [
        ("nan", "not a finite number"),
        ("inf", "not a finite number"),
        (float("-inf"), "not a finite number"),
        (True, "a boolean"),
        ("high", "not a number"),
        (None, "missing"),
        ("1_000", "not a number"),
        ("1_0.5", "not a number"),  # float() reads them as 1000.0 and 10.5
    ],
)
def test_regression_labels_refused(value, reason):
    with pytest.raises(ValueError, match=reason):
        regression_label(value)


def test_regression_labels():
    assert regression_label(" 2.5 ") == 2.5 and regression_label(3) == 3.0 and regression_label("1e1") == 10.0


def write_jsonl(path, labels):
    path.write_text("".join(json.dumps({"text": f"t{i}", "label": v}) + "\n" for i, v in enumerate(labels)))
    return str(path)


def test_jsonl_scalars_by_value_and_csv_whitespace(tmp_path):
    data = read_sentence_file(
        write_jsonl(tmp_path / "a.jsonl", [1, 1.0, "1", " 1 ", 2, True, "true"]), text_a="text", label="label"
    )
    assert sorted_labels(data) == ["1", "2", "true"]
    np.testing.assert_array_equal(encode_labels(data, ["1", "2", "true"]), [0, 0, 0, 0, 1, 2, 2])
    (tmp_path / "a.csv").write_text("text,label\na,neg \nb,neg\nc, pos\n")
    csv_data = read_sentence_file(str(tmp_path / "a.csv"), text_a="text", label="label")
    assert sorted_labels(csv_data) == ["neg", "pos"]
    np.testing.assert_array_equal(encode_labels(csv_data, ["neg", "pos"]), [0, 0, 1])
    # A label list given as text (--labels) follows the same rule: "1.0" is the class "1".
    np.testing.assert_array_equal(encode_labels(data, ["1.0", "2", "true"]), [0, 0, 0, 0, 1, 2, 2])


def test_numbers_sort_numerically(tmp_path):
    data = read_sentence_file(write_jsonl(tmp_path / "a.jsonl", ["10", 2, "1.5", -1]), text_a="text", label="label")
    assert sorted_labels(data) == ["-1", "1.5", "2", "10"]


@pytest.mark.parametrize(
    "content, line, reason",
    [
        ('{"text": "a", "label": "x"}\n{"text": "b", "label": null}\n{"text": "c", "label": "y"}\n', 2, "missing"),
        ('{"text": "a", "label": "x"}\n{"text": "b", "label": "  "}\n{"text": "c", "label": "y"}\n', 2, "empty"),
        ('{"text": "a", "label": "x"}\n{"text": "b", "label": [1]}\n{"text": "c", "label": "y"}\n', 2, "a JSON list"),
    ],
)
def test_a_missing_label_is_a_bad_row_never_a_class(tmp_path, content, line, reason):
    path = tmp_path / "a.jsonl"
    path.write_text(content)
    with pytest.raises(DataError, match=rf"^{path}:{line}: the label .*{reason}.*--skip_bad_rows"):
        read_sentence_file(str(path), text_a="text", label="label")
    data = read_sentence_file(str(path), text_a="text", label="label", skip_bad_rows=True)
    assert data.text_a == ["a", "c"] and data.skipped == 1 and sorted_labels(data) == ["x", "y"]
    # Unlabeled files (a test set) are read without looking at labels.
    assert len(read_sentence_file(str(path), text_a="text")) == 3


def test_a_label_a_later_quote_closed_is_refused_at_its_line(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text('text,label\ngreat film,"neg\nfine film,pos\nawful,neg"\nok,pos\n')
    with pytest.raises(
        DataError,
        match=rf"^{path}:2: the label 'neg\\nfine film,pos\\nawful,neg'... spans several "
        "lines: is a quote left open",
    ):
        read_sentence_file(str(path), text_a="text", label="label")


@pytest.mark.parametrize("score", ["nan", "inf", "-Infinity"])
def test_non_finite_regression_labels_name_file_and_line(tmp_path, score):
    path = tmp_path / "a.csv"
    path.write_text(f"text,score\na,1.5\nb,{score}\n")
    with pytest.raises(DataError, match=rf"^{path}:3: the label '{score}' is not a finite number"):
        float_labels(read_sentence_file(str(path), text_a="text", label="score"))
    json_path = tmp_path / "a.jsonl"
    json_path.write_text('{"text": "a", "score": 1}\n{"text": "b", "score": NaN}\n')
    with pytest.raises(DataError, match=rf"^{json_path}:2: the label nan is not a finite number"):
        float_labels(read_sentence_file(str(json_path), text_a="text", label="score"))

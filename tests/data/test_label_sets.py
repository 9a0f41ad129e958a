"""Multi-label fields (`labels.LabelSets`): a JSON list or separated text, each label by the single-label rule;
refusals name file:line and the fix."""

import json

import numpy as np
import pytest

from keras_bert_lite.data.errors import DataError
from keras_bert_lite.data.labels import LabelSets
from keras_bert_lite.data.sentences import encode_label_sets, read_sentence_file, sorted_labels

SETS = LabelSets("|")


def write_jsonl(path, labels):
    path.write_text("".join(json.dumps({"text": f"t{i}", "labels": v}) + "\n" for i, v in enumerate(labels)))
    return str(path)


def test_a_jsonl_list_and_separated_csv_text_read_as_the_same_sets(tmp_path):
    jsonl = read_sentence_file(
        write_jsonl(tmp_path / "a.jsonl", [["sports", "politics"], ["arts"], "arts|sports", [1.0, "sports", "sports"]]),
        text_a="text",
        label="labels",
        label_sets=SETS,
    )
    (tmp_path / "a.csv").write_text("text,labels\nt0,sports|politics\nt1, arts \nt2,arts|sports\nt3,1|sports\n")
    csv_data = read_sentence_file(str(tmp_path / "a.csv"), text_a="text", label="labels", label_sets=SETS)
    names = sorted_labels(jsonl, SETS)
    assert names == sorted_labels(csv_data, SETS) == ["1", "arts", "politics", "sports"]
    want = [[0, 0, 1, 1], [0, 1, 0, 0], [0, 1, 0, 1], [1, 0, 0, 1]]  # a label twice is the label once
    np.testing.assert_array_equal(encode_label_sets(jsonl, names, SETS), want)
    np.testing.assert_array_equal(encode_label_sets(csv_data, names, SETS), want)
    assert encode_label_sets(jsonl, names, SETS).dtype == np.float32


def test_an_empty_set_is_refused_unless_allowed(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [["arts"], [], ["sports"]])
    with pytest.raises(
        DataError,
        match=rf"^{path}:2: the example has no labels \(an empty list\); if examples may "
        "have none, pass --allow_no_labels",
    ):
        read_sentence_file(path, text_a="text", label="labels", label_sets=SETS)
    allowed = LabelSets("|", allow_empty=True)
    data = read_sentence_file(path, text_a="text", label="labels", label_sets=allowed)
    np.testing.assert_array_equal(encode_label_sets(data, ["arts", "sports"], allowed), [[1, 0], [0, 0], [0, 1]])
    (tmp_path / "a.tsv").write_text("text\tlabels\nt0\tarts\nt1\t \n")  # a blank field: no labels
    with pytest.raises(DataError, match=rf"^{tmp_path / 'a.tsv'}:3: the example has no labels"):
        read_sentence_file(str(tmp_path / "a.tsv"), text_a="text", label="labels", label_sets=SETS)
    data = read_sentence_file(str(tmp_path / "a.tsv"), text_a="text", label="labels", label_sets=allowed)
    np.testing.assert_array_equal(encode_label_sets(data, ["arts"], allowed), [[1], [0]])


@pytest.mark.parametrize(
    "value, reason",
    [
        (None, r"the label is missing \(null\)"),
        ({"a": 1}, "the labels are a JSON object; give a list of labels"),
        (["a", ["b"]], "a label in the list is a JSON list; give a flat list"),
        (["a", None], r"the label is missing \(null\)"),
        (
            ["a|b"],
            "the label 'a|b' holds the separator '|', which the prediction files put between labels; rename the "
            "label or choose another --label_separator",
        ),
        ("a||b", "the label is empty"),
    ],
)
def test_refused_fields_name_the_line(tmp_path, value, reason):
    path = write_jsonl(tmp_path / "a.jsonl", [["a"], value])
    with pytest.raises(DataError, match=rf"^{path}:2: {reason}.*--skip_bad_rows"):
        read_sentence_file(path, text_a="text", label="labels", label_sets=SETS)
    assert len(read_sentence_file(path, text_a="text", label="labels", label_sets=SETS, skip_bad_rows=True)) == 1


def test_a_list_in_a_single_label_file_points_to_multi_label(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", ["a", ["a", "b"]])
    with pytest.raises(
        DataError,
        match=rf"^{path}:2: the label is a JSON list, not a single value \(several labels "
        r"per example: --task_type multi_label\)",
    ):
        read_sentence_file(path, text_a="text", label="labels")


def test_an_unknown_label_names_its_line(tmp_path):
    data = read_sentence_file(
        write_jsonl(tmp_path / "dev.jsonl", [["a"], ["b", "c"]]), text_a="text", label="labels", label_sets=SETS
    )
    with pytest.raises(DataError, match=r"dev.jsonl:2: unknown label 'c'; the known labels are \['a', 'b'\]"):
        encode_label_sets(data, ["a", "b"], SETS)

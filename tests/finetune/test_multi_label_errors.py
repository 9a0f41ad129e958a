"""kbl-glue's multi-label input refused with one `error:` line naming the file:line or the flag, and the fix."""

import json

import pytest

from keras_bert_lite.runners import glue as run_glue
from tests.finetune.test_reader_errors_cli import error_line, flags, usage_error_line


def jsonl(path, labels):
    path.write_text("".join(json.dumps({"text": f"text {i}", "label": v}) + "\n" for i, v in enumerate(labels)))
    return str(path)


def files(tmp_path, train, dev=(["a"], ["b"])):
    return ["--train_file", jsonl(tmp_path / "train.jsonl", train), "--dev_file", jsonl(tmp_path / "dev.jsonl", dev)]


MULTI = ("--task_type", "multi_label")


@pytest.mark.parametrize(
    "train, dev, extra, line, message",
    [
        (
            ["a", ["a", "b"]],
            ["a"],
            (),
            "train.jsonl:2",
            "the label is a JSON list, not a single value (several labels "
            "per example: --task_type multi_label); give the row a label in column 'label', or pass --skip_bad_rows",
        ),
        (
            [["a"], ["b"]],
            [["a"], ["b"], ["c", "a"]],
            MULTI,
            "dev.jsonl:3",
            "unknown label 'c'; the known labels are ['a', 'b'] (from the training data or --labels)",
        ),
        (
            [["a"], []],
            [["a"]],
            MULTI,
            "train.jsonl:2",
            "the example has no labels (an empty list); if examples may have none, pass --allow_no_labels",
        ),
        (
            [["a"], ["b"]],
            [["a|b"]],
            MULTI,
            "dev.jsonl:1",
            "the label 'a|b' holds the separator '|', which the "
            "prediction files put between labels; rename the label or choose another --label_separator",
        ),
        ([["a"], ["b", None]], [["a"]], MULTI, "train.jsonl:2", "the label is missing (null)"),
    ],
)
def test_bad_labels_name_the_file_and_line(tmp_path, uncased_vocab_path, train, dev, extra, line, message):
    argv = [*files(tmp_path, train, dev), *extra, *flags(tmp_path, uncased_vocab_path)]
    assert error_line(run_glue.main, argv).startswith(f"error: {tmp_path / line}: {message}")


def test_a_train_file_without_any_label(tmp_path, uncased_vocab_path):
    argv = [*files(tmp_path, [[], []], [[]]), *MULTI, "--allow_no_labels", *flags(tmp_path, uncased_vocab_path)]
    assert error_line(run_glue.main, argv) == (
        f"error: {tmp_path / 'train.jsonl'}: no example has a label; "
        "multi_label needs at least one (or pass --labels a,b,...)."
    )


@pytest.mark.parametrize(
    "extra, message",
    [
        (("--label_separator", ","), "--label_separator: for --task_type multi_label (this run is classification)"),
        (("--tune_threshold", "--allow_no_labels"), "--allow_no_labels, --tune_threshold: for --task_type multi_label"),
        ((*MULTI, "--threshold", "0.3", "--tune_threshold"), "--threshold and --tune_threshold both set the threshold"),
        ((*MULTI, "--labels", "a,b|c"), "--labels: 'b|c' holds the label separator '|'"),
        ((*MULTI, "--label_separator", ";", "--labels", "a;b,c"), "--labels: 'a;b' holds the label separator ';'"),
    ],
)
def test_contradicting_flags_are_one_usage_error(tmp_path, uncased_vocab_path, capsys, extra, message):
    argv = [*files(tmp_path, [["a"]]), *extra, *flags(tmp_path, uncased_vocab_path)]
    assert message in usage_error_line(run_glue.main, argv, capsys)
    assert not (tmp_path / "run").exists()


def test_multi_label_is_for_your_own_data(tmp_path, uncased_vocab_path, capsys):
    argv = ["--task", "rte", *MULTI, *flags(tmp_path, uncased_vocab_path)]
    assert "--task_type multi_label is for your own data" in usage_error_line(run_glue.main, argv, capsys)

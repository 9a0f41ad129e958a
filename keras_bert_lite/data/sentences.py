"""Sentence and sentence-pair examples (GLUE and users' own data) from TSV, CSV or JSONL files.

    data = read_sentence_file("train.csv", text_a="review", label="stars")
    label_names = sorted_labels(data)             # or the user's --labels
    ids = encode_labels(data, label_names)        # int class ids; errors name file:line and the known labels

Multi-label data (a set of labels per example, `labels.LabelSets`):

    sets = LabelSets(separator="|")
    data = read_sentence_file("train.csv", text_a="text", label="topics", label_sets=sets)
    label_names = sorted_labels(data, sets)
    targets = encode_label_sets(data, label_names, sets)   # 0/1 float32 [n, labels]
"""

from __future__ import annotations

import dataclasses
import decimal

import numpy as np

from keras_bert_lite.data.errors import DataError
from keras_bert_lite.data.labels import (
    LabelSets,
    class_label,
    drop_unlabeled,
    is_number,
    label_problem,
    regression_label,
)
from keras_bert_lite.data.table_files import read_records, require_text, select_columns


@dataclasses.dataclass
class SentenceData:
    """Examples of a classification/regression task on one text or a text pair.

    Attributes:
        text_a: the first texts.
        text_b: the second texts, or None for single-text tasks.
        labels: raw label values as read (strings, or numbers from JSONL/tfds), or None (unlabeled).
        ids: example ids for prediction files (an id column, tfds `idx`, or the row number).
        lines: the line of each example in `source`, for error messages (None for tfds data).
        source: the file or dataset the examples came from.
        skipped: malformed rows skipped (--skip_bad_rows).
    """

    text_a: list
    text_b: list | None
    labels: list | None
    ids: list
    lines: list | None
    source: str
    skipped: int = 0

    def __len__(self) -> int:
        return len(self.text_a)


def read_sentence_file(
    path: str,
    *,
    text_a: str,
    text_b: str = "",
    label: str = "",
    id_column: str = "",
    header: list[str] | None = None,
    quoting: str = "auto",
    skip_bad_rows: bool = False,
    label_sets: LabelSets | None = None,
) -> SentenceData:
    """Reads examples from a TSV/CSV (with a header line, or `header`) or JSONL file.

    Args:
        path: the file.
        text_a, text_b: column names of the text(s); text_b "" for single-text tasks.
        label: the label column; "" for unlabeled data (a test set).
        id_column: column of example ids for prediction files; "" numbers the file's rows 0, 1, ... (blank lines
            not counted; a row skipped as malformed keeps its number, so the ids still match the file's rows).
        header: column names of a TSV/CSV without a header line.
        quoting: "auto", "csv" or "none": how double quotes are read (`records`; "none" for GLUE's TSVs).
        skip_bad_rows: skip and count malformed rows instead of raising.
        label_sets: how a multi-label `label` field reads; None: one label per example.

    Raises:
        DataError: malformed row (path:line), a missing column (listing the columns found), a missing label
            (labels.py; malformed rows and missing labels are skipped with skip_bad_rows).
    """
    records, skipped = read_records(path, header=header, skip_bad_rows=skip_bad_rows, quoting=quoting)
    if label:
        records, unlabeled = drop_unlabeled(
            records,
            path,
            label,
            skip_bad_rows=skip_bad_rows,
            problem=label_sets.problem if label_sets else _single_label_problem,
        )
        skipped += unlabeled
    names = [n for n in (text_a, text_b, label, id_column) if n]
    columns, missing = select_columns(records, path, names, skip_bad_rows=skip_bad_rows)
    if not columns[0]:
        raise DataError(f"{path}: no examples found (after {skipped + missing} malformed rows were skipped).")
    values = dict(zip(names, columns))
    kept = [r for r in records if all(n in r.values for n in names)]
    for name in names[: 2 if text_b else 1]:
        require_text(path, [r.line for r in kept], name, values[name])
    return SentenceData(
        text_a=values[text_a],
        text_b=values[text_b] if text_b else None,
        labels=values[label] if label else None,
        ids=values[id_column] if id_column else [r.row for r in kept],
        lines=[r.line for r in kept],
        source=path,
        skipped=skipped + missing,
    )


def _single_label_problem(value) -> str:
    """`label_problem`, pointing a JSON list of labels to the multi-label task."""
    problem = label_problem(value)
    return problem + " (several labels per example: --task_type multi_label)" if isinstance(value, list) else problem


def _where(data: SentenceData, i: int) -> str:
    return f"{data.source}:{data.lines[i]}" if data.lines else f"{data.source} example {i}"


def _label(data: SentenceData, i: int, convert):
    try:
        return convert(data.labels[i])
    except ValueError as error:
        raise DataError(f"{_where(data, i)}: {error}; fix the label.") from None


def sorted_labels(data: SentenceData, label_sets: LabelSets | None = None) -> list[str]:
    """The distinct class names of the (training) data (labels.py's rule; with `label_sets`, of every example's
    set), sorted (numerically if all are numbers)."""
    if label_sets is None:
        names = {_label(data, i, class_label) for i in range(len(data))}
    else:
        names = {name for i in range(len(data)) for name in _label(data, i, label_sets.names)}
    if all(map(is_number, names)):
        return sorted(names, key=decimal.Decimal)
    return sorted(names)


def encode_labels(data: SentenceData, label_names: list[str]) -> np.ndarray:
    """Class ids int32 `[n]`: the position of each example's label in `label_names` (both by labels.py's rule).

    Raises:
        DataError: a label not in `label_names`, or not a usable class label, naming the file:line.
    """
    index = {class_label(name): i for i, name in enumerate(label_names)}
    ids = np.empty(len(data), np.int32)
    for i in range(len(data)):
        ids[i] = _known(data, i, _label(data, i, class_label), index, label_names)
    return ids


def encode_label_sets(data: SentenceData, label_names: list[str], label_sets: LabelSets) -> np.ndarray:
    """Multi-label targets: 0/1 float32 `[n, len(label_names)]`, 1 where an example's set holds the label.

    Raises:
        DataError: a label not in `label_names`, or a field `label_sets` refuses, naming the file:line.
    """
    index = {class_label(name): i for i, name in enumerate(label_names)}
    targets = np.zeros((len(data), len(label_names)), np.float32)
    for i in range(len(data)):
        for name in _label(data, i, label_sets.names):
            targets[i, _known(data, i, name, index, label_names)] = 1.0
    return targets


def _known(data: SentenceData, i: int, name: str, index: dict, label_names: list[str]) -> int:
    """The id of example i's label `name` in `index`.

    Raises:
        DataError: an unknown label, naming the file:line and the known labels.
    """
    if name not in index:
        raise DataError(
            f"{_where(data, i)}: unknown label {name!r}; the known labels are {label_names} (from "
            "the training data or --labels). Fix the label, or add it to --labels."
        )
    return index[name]


def float_labels(data: SentenceData) -> np.ndarray:
    """Regression targets float32 `[n]`.

    Raises:
        DataError: a label that is not a finite number, naming the file:line.
    """
    scores = np.empty(len(data), np.float32)
    for i in range(len(data)):
        scores[i] = _label(data, i, regression_label)
    return scores

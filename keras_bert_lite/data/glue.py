"""The GLUE tasks: data from tensorflow-datasets `glue/<task>` or the original GLUE TSV files, the published dev
metrics, and the submission files of gluebenchmark.com.

Label ids are tfds' (`tfds.builder("glue/<task>").info.features["label"].names`); the TSV label strings of each
task map to the same ids, and submissions use the TSV strings (0/1 for CoLA, SST-2, MRPC, QQP and WNLI; names
for MNLI, AX, QNLI and RTE; floats for STS-B). tfds' test splits are unlabeled (label -1).
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from keras_bert_lite.data.errors import DataError
from keras_bert_lite.data.sentences import SentenceData, read_sentence_file


@dataclasses.dataclass(frozen=True)
class GlueTask:
    """One GLUE task.

    Attributes:
        name: the tfds config name (cola, sst2, ...).
        fields: tfds text feature names, one or two.
        tsv_fields: the same columns in the GLUE TSV files.
        label_names: class names in tfds id order; () for regression (STS-B).
        submission_labels: what the submission file writes for each class id (the TSV label strings).
        metrics: dev metric names (of each dev set); the first one, on the first dev set, selects the best
            checkpoint.
        dev: {suffix: (tfds split, TSV file)}; suffix "" for one dev set, "matched"/"mismatched" for MNLI,
            whose metrics are reported as accuracy_matched, accuracy_mismatched.
        test: {submission file: (tfds split, TSV file)}.
        tsv_label: the label column of the TSV files.
        tsv_header: column names for the header-less train/dev TSVs (CoLA).
    """

    name: str
    fields: tuple
    tsv_fields: tuple
    label_names: tuple
    submission_labels: tuple
    metrics: tuple
    dev: dict
    test: dict
    tsv_label: str = "label"
    tsv_header: tuple = ()

    @property
    def is_regression(self) -> bool:
        return not self.label_names


_DEV = {"": ("validation", "dev.tsv")}
_BINARY = ("0", "1")
_NLI = ("entailment", "neutral", "contradiction")
_ENTAIL = ("entailment", "not_entailment")

TASKS = {
    t.name: t
    for t in [
        GlueTask(
            "cola",
            ("sentence",),
            ("sentence",),
            ("unacceptable", "acceptable"),
            _BINARY,
            ("matthews_corrcoef", "accuracy"),
            _DEV,
            {"CoLA.tsv": ("test", "test.tsv")},
            tsv_header=("source", "label", "original_label", "sentence"),
        ),
        GlueTask(
            "sst2",
            ("sentence",),
            ("sentence",),
            ("negative", "positive"),
            _BINARY,
            ("accuracy",),
            _DEV,
            {"SST-2.tsv": ("test", "test.tsv")},
        ),
        GlueTask(
            "mrpc",
            ("sentence1", "sentence2"),
            ("#1 String", "#2 String"),
            ("not_equivalent", "equivalent"),
            _BINARY,
            ("f1", "accuracy"),
            _DEV,
            {"MRPC.tsv": ("test", "test.tsv")},
            tsv_label="Quality",
        ),
        GlueTask(
            "stsb",
            ("sentence1", "sentence2"),
            ("sentence1", "sentence2"),
            (),
            (),
            ("pearson", "spearman"),
            _DEV,
            {"STS-B.tsv": ("test", "test.tsv")},
            tsv_label="score",
        ),
        GlueTask(
            "qqp",
            ("question1", "question2"),
            ("question1", "question2"),
            ("not_duplicate", "duplicate"),
            _BINARY,
            ("f1", "accuracy"),
            _DEV,
            {"QQP.tsv": ("test", "test.tsv")},
            tsv_label="is_duplicate",
        ),
        GlueTask(
            "mnli",
            ("premise", "hypothesis"),
            ("sentence1", "sentence2"),
            _NLI,
            _NLI,
            ("accuracy",),
            {
                "matched": ("validation_matched", "dev_matched.tsv"),
                "mismatched": ("validation_mismatched", "dev_mismatched.tsv"),
            },
            {
                "MNLI-m.tsv": ("test_matched", "test_matched.tsv"),
                "MNLI-mm.tsv": ("test_mismatched", "test_mismatched.tsv"),
            },
            tsv_label="gold_label",
        ),
        GlueTask(
            "qnli",
            ("question", "sentence"),
            ("question", "sentence"),
            _ENTAIL,
            _ENTAIL,
            ("accuracy",),
            _DEV,
            {"QNLI.tsv": ("test", "test.tsv")},
        ),
        GlueTask(
            "rte",
            ("sentence1", "sentence2"),
            ("sentence1", "sentence2"),
            _ENTAIL,
            _ENTAIL,
            ("accuracy",),
            _DEV,
            {"RTE.tsv": ("test", "test.tsv")},
        ),
        GlueTask(
            "wnli",
            ("sentence1", "sentence2"),
            ("sentence1", "sentence2"),
            ("not_entailment", "entailment"),
            _BINARY,
            ("accuracy",),
            _DEV,
            {"WNLI.tsv": ("test", "test.tsv")},
        ),
        GlueTask(
            "ax",
            ("premise", "hypothesis"),
            ("sentence1", "sentence2"),
            _NLI,
            _NLI,
            (),
            {},
            {"AX.tsv": ("test", "diagnostic.tsv")},
        ),
    ]
}


def glue_task(name: str) -> GlueTask:
    if name not in TASKS:
        raise DataError(
            f"--task {name!r} is not a GLUE task; use one of {sorted(TASKS)} (or --train_file for your own data)."
        )
    return TASKS[name]


def load_tfds(task: GlueTask, split: str, data_dir: str | None = None) -> SentenceData:
    """Examples of `glue/<task>` split `split` from tensorflow-datasets (labels None on test splits)."""
    import tensorflow_datasets as tfds

    dataset = tfds.load(f"glue/{task.name}", split=split, data_dir=data_dir)
    columns = {key: [] for key in (*task.fields, "label", "idx")}
    for batch in tfds.as_numpy(dataset.batch(8192)):
        for key in columns:
            columns[key].extend(batch[key].tolist())
    labels = columns["label"]
    unlabeled = split.startswith("test") or (labels and all(v == -1 for v in labels))
    if not unlabeled and not task.is_regression:
        labels = [task.submission_labels[int(v)] for v in labels]  # as the TSV strings, like file data
    return SentenceData(
        text_a=columns[task.fields[0]],
        text_b=columns[task.fields[1]] if len(task.fields) > 1 else None,
        labels=None if unlabeled else labels,
        ids=columns["idx"],
        lines=None,
        source=f"tfds glue/{task.name}:{split}",
    )


def load_tsv(task: GlueTask, data_dir: str, file: str, labeled: bool, skip_bad_rows: bool = False) -> SentenceData:
    """Examples from a GLUE TSV file in `data_dir` (as extracted from the GLUE download)."""
    path = os.path.join(data_dir, file)
    if not os.path.exists(path):
        raise DataError(
            f"{path}: no such file; --data_dir must hold the GLUE TSV files of {task.name} "
            f"({', '.join(sorted({f for _, f in task.dev.values()} | {f for _, f in task.test.values()}))}"
            f"{', train.tsv' if task.dev else ''})."
        )
    header = list(task.tsv_header) if task.tsv_header and file != "test.tsv" else None
    return read_sentence_file(
        path,
        text_a=task.tsv_fields[0],
        text_b=task.tsv_fields[1] if len(task.tsv_fields) > 1 else "",
        label=task.tsv_label if labeled else "",
        id_column="" if labeled else _id_column(task),
        header=header,
        quoting="none",
        skip_bad_rows=skip_bad_rows,
    )


def _id_column(task: GlueTask) -> str:
    return "id" if task.name == "qqp" else "index"


def submission_text(task: GlueTask, ids: list, predictions: np.ndarray) -> str:
    """The gluebenchmark.com submission file: a header `index\\tprediction`, then one line per test example.

    Args:
        ids: the test examples' ids (tfds `idx` or the TSV index column), written as they are.
        predictions: int class ids `[n]`, or float scores `[n]` for STS-B.
    """
    lines = ["index\tprediction"]
    for example_id, prediction in zip(ids, predictions):
        value = f"{float(prediction):.3f}" if task.is_regression else task.submission_labels[int(prediction)]
        lines.append(f"{example_id}\t{value}")  # as the file has it: a non-numeric id must not fail here
    return "\n".join(lines) + "\n"

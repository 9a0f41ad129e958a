"""`GlueJob`: kbl-glue's flags (`runners.glue` runs them) and the rules that refuse a mix of them.

GLUE's flags (`--task`, `--data_dir`) and your own data's (`--train_file`, `--dev_file`, the columns, `--labels`,
`--task_type` and the multi-label flags) exclude each other; see `GlueJob.check`.
"""

from __future__ import annotations

import dataclasses

from keras_bert_lite import artifacts
from keras_bert_lite.data import glue
from keras_bert_lite.data.labels import DEFAULT_SEPARATOR, LabelSets, class_label
from keras_bert_lite.data.table_files import QUOTING
from keras_bert_lite.data.windows import POOLING
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.runners.flags import flag
from keras_bert_lite.runners.long_texts import LongTextJob


@dataclasses.dataclass
class GlueJob(LongTextJob):
    """Settings of a GLUE or custom-data run (one flag each)."""

    task: str = flag(
        "", "the GLUE task (ax: predict AX.tsv with the MNLI model in --init)", group="GLUE", choices=tuple(glue.TASKS)
    )
    data_dir: str = flag(
        "", "the task's GLUE TSV files (default: tensorflow-datasets glue/<task>)", input_path=True, group="GLUE"
    )
    train_file: str = flag("", ".tsv, .csv (with a header line) or .jsonl", input_path=True, group="your own data")
    dev_file: str = flag(
        "", "labeled examples that pick the best epoch and give the metrics", input_path=True, group="your own data"
    )
    test_file: str = flag("", "optional: unlabeled examples to predict", input_path=True, group="your own data")
    text_a: str = flag("text", "column of the (first) text", group="your own data")
    text_b: str = flag("", "column of the second text of a pair task", group="your own data")
    label: str = flag("label", "column of the label", group="your own data")
    id_column: str = flag(
        "",
        "column of example ids in the dev and test files, for their prediction files (default: the row number)",
        group="your own data",
    )
    labels: str = flag(
        "",
        "comma-separated label names in id order (default: the sorted distinct training labels)",
        group="your own data",
    )
    task_type: str = flag(
        "classification",
        "classification, regression or multi_label (a set of labels per "
        "example: a JSON list, or text with --label_separator between them)",
        group="your own data",
        choices=("classification", "regression", "multi_label"),
    )
    label_separator: str = flag(
        "",
        "multi_label: what separates an example's labels in a text field (.tsv, .csv; "
        f"and in the prediction files) (default: {DEFAULT_SEPARATOR})",
        group="your own data",
    )
    allow_no_labels: bool = flag(
        False,
        "multi_label: accept examples with no labels ([] or a blank field; "
        "refused by default: a lost label column looks the same)",
        group="your own data",
        action="store_true",
    )
    threshold: float | None = flag(
        None,
        f"multi_label: a label is predicted when its probability exceeds this (default: {artifacts.DEFAULT_THRESHOLD})",
        group="your own data",
        type=float,
        above=0,
        below=1,
    )
    tune_threshold: bool = flag(
        False,
        "multi_label: use the threshold of the grid 0.05, 0.10, ..., 0.95 with the "
        "best dev micro F1 (each epoch; the best epoch's goes into task.json)",
        group="your own data",
        action="store_true",
    )
    quoting: str = flag(
        "auto",
        "double quotes in the .tsv/.csv files: csv (a quoted field may hold tabs, commas, "
        "line breaks), none (quotes are text, one row per line), auto (.csv: csv; .tsv: the reading "
        "with fewer malformed rows, none if a quoted field would span lines)",
        group="your own data",
        choices=QUOTING,
    )
    window_pooling: str = flag(
        "",
        "with --long_documents windows, how a text's prediction comes from its windows' "
        "logits: their mean (default) or their maximum (a class that any window finds)",
        group="long texts",
        choices=POOLING,
    )

    def check(self) -> None:
        """Refuses a mix of GLUE's flags and your own data's, and a --labels that names no classes (and
        `RunJob.check`'s rules)."""
        super().check()
        if bool(self.task) == bool(self.train_file):
            raise SettingsError("Give either --task (GLUE) or --train_file and --dev_file (your own data).")
        if self.train_file and not self.dev_file:
            raise SettingsError(
                "--dev_file is required with --train_file (it picks the best epoch and gives the metrics)."
            )
        if self.task and (self.dev_file or self.test_file):
            raise SettingsError(
                "--dev_file/--test_file are for your own data; GLUE data comes from tfds or --data_dir."
            )
        if self.task and self.quoting != "auto":
            raise SettingsError(
                "--quoting is for your own files (--train_file ...); GLUE's TSV files are read as written."
            )
        self.label_names()  # refuses a --labels that names no classes
        self._check_multi_label()
        if self.window_pooling and not self.windowed:
            raise SettingsError(
                f"--window_pooling {self.window_pooling} is for --long_documents windows; add that, or "
                "drop --window_pooling."
            )

    def pair_texts(self) -> bool:
        """Whether the examples are text pairs (--text_b, or a GLUE task of two texts)."""
        return bool(self.text_b) or (self.task in glue.TASKS and len(glue.TASKS[self.task].fields) == 2)

    def _check_multi_label(self) -> None:
        """Refuses the multi-label flags in another task, --threshold with --tune_threshold, and --labels names
        that hold the separator."""
        given = [
            f"--{name}"
            for name in ("label_separator", "allow_no_labels", "threshold", "tune_threshold")
            if getattr(self, name) not in ("", False, None)
        ]
        if given and self.task_type != "multi_label":
            raise SettingsError(
                f"{', '.join(given)}: for --task_type multi_label (this run is {self.task_type}): "
                "drop them, or pass --task_type multi_label."
            )
        if self.task_type == "multi_label" and self.task:
            raise SettingsError(
                "--task_type multi_label is for your own data (--train_file ...); GLUE's tasks have "
                "one label per example."
            )
        if self.threshold is not None and self.tune_threshold:
            raise SettingsError("--threshold and --tune_threshold both set the threshold: give one.")
        if self.task_type == "multi_label" and self.labels:
            _check_separator(self.label_names(), self.label_sets().separator)

    def label_names(self) -> list[str]:
        """--labels as class names, in id order ([] without --labels)."""
        return _label_flag(self.labels) if self.labels else []

    def label_sets(self) -> LabelSets:
        """How the multi-label fields read (--label_separator, --allow_no_labels)."""
        return LabelSets(self.label_separator or DEFAULT_SEPARATOR, self.allow_no_labels)


def _check_separator(names: list[str], separator: str) -> None:
    """Refuses --labels names that hold the multi-label separator."""
    holding = [name for name in names if separator in name]
    if holding:
        raise SettingsError(
            f"--labels: {holding[0]!r} holds the label separator {separator!r}, which the prediction "
            "files put between labels: rename the label or choose another --label_separator."
        )


def _label_flag(labels: str) -> list[str]:
    """--labels as class names (data/labels.py's rule, so "1.0" names the class "1")."""
    try:
        names = [class_label(name) for name in labels.split(",")]
    except ValueError as error:
        raise SettingsError(
            f"--labels {labels!r}: {error}; give comma-separated names, e.g. --labels neg,pos."
        ) from None
    if len(set(names)) != len(names):
        raise SettingsError(f"--labels {labels!r} names a class twice (as {names}).")
    return names

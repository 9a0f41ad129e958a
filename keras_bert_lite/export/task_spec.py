"""TaskSpec: what a fine-tuned model does, as the runners record it in `task.json` beside `model.keras`.

The exporter reads it to build text-in signatures (which outputs, which label names, one or two texts).
"""

from __future__ import annotations

import dataclasses
import json
import os

from keras_bert_lite.utils.files import atomic_write_text

TASK_TYPES = ("classification", "regression", "token_classification", "span", "multiple_choice", "encoder")


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """The serving-relevant facts of a task model.

    Attributes:
        task_type: one of TASK_TYPES.
        labels: label names in id order (classification and token classification).
        lower_case: whether the vocabulary is uncased.
        seq_length: the sequence length the model was trained with (exports pad to it).
        text_fields: ["text"] or ["text", "text_b"] (sentence pairs; question + context for "span").
        num_choices: choices per example (multiple choice).
    """

    task_type: str
    lower_case: bool
    seq_length: int
    labels: tuple[str, ...] = ()
    text_fields: tuple[str, ...] = ("text",)
    num_choices: int = 0

    def __post_init__(self):
        if self.task_type not in TASK_TYPES:
            raise ValueError(f"task_type {self.task_type!r} is not one of {TASK_TYPES}.")
        if self.task_type in ("classification", "token_classification") and not self.labels:
            raise ValueError(f"A {self.task_type} task needs its label names (`labels`).")
        if tuple(self.text_fields) not in (("text",), ("text", "text_b")):
            raise ValueError(f"text_fields must be ['text'] or ['text', 'text_b'], got {list(self.text_fields)}.")
        if self.task_type == "span" and len(self.text_fields) != 2:
            raise ValueError("A span (question answering) task takes two texts: text (question), text_b (context).")
        object.__setattr__(self, "labels", tuple(self.labels))
        object.__setattr__(self, "text_fields", tuple(self.text_fields))

    @property
    def is_pair(self) -> bool:
        return len(self.text_fields) == 2

    def save(self, path: str) -> None:
        atomic_write_text(path, json.dumps(dataclasses.asdict(self), indent=2) + "\n")

    @classmethod
    def load(cls, path: str) -> "TaskSpec":
        with open(path, encoding="utf-8") as f:
            values = json.load(f)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"{path}: unknown field(s) {unknown}; known: {sorted(known)}.")
        missing = sorted({"task_type", "lower_case", "seq_length"} - set(values))
        if missing:
            raise ValueError(f"{path}: missing field(s) {missing}.")
        try:
            return cls(**values)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None

    @classmethod
    def from_model_dir(cls, model_dir: str) -> "TaskSpec":
        return cls.load(os.path.join(model_dir, "task.json"))

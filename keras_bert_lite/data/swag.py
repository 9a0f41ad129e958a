"""SWAG multiple choice: the original CSV files (rowanz/swagaf `data/{train,val,test}.csv`) and featurisation.

Each example is a context (`sent1`) and N endings; choice i is packed as `[CLS] sent1 [SEP] sent2 ending_i [SEP]`
(the recipe of the paper, Sec. 4.4, and of Hugging Face's run_swag), giving inputs `[b, N, seq]`.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from keras_bert_lite.data.errors import DataError
from keras_bert_lite.data.features import tokenize_texts
from keras_bert_lite.data.labels import class_label, drop_unlabeled
from keras_bert_lite.data.table_files import read_records, require_text, select_columns

NUM_CHOICES = 4


@dataclasses.dataclass
class ChoiceData:
    """Multiple-choice examples: contexts `[n]`, endings `[n][choices]` (full second segments), labels or None."""

    ids: list
    contexts: list
    endings: list
    labels: np.ndarray | None
    source: str

    def __len__(self) -> int:
        return len(self.contexts)


def read_swag_csv(path: str, *, skip_bad_rows: bool = False, labeled: bool = True) -> ChoiceData:
    """Reads a SWAG CSV (columns sent1, sent2, ending0..ending3, label; `fold-ind` as the id when present).

    Raises:
        DataError: malformed rows (path:line), missing columns (listing those found), a missing label or one
            outside 0..3 (labels are read by labels.py's rule: 1, 1.0 and "1" are choice 1).
    """
    records, _ = read_records(path, skip_bad_rows=skip_bad_rows)
    if labeled:
        records, _ = drop_unlabeled(records, path, "label", skip_bad_rows=skip_bad_rows)
    names = ["sent1", "sent2"] + [f"ending{i}" for i in range(NUM_CHOICES)] + (["label"] if labeled else [])
    columns, _ = select_columns(
        records,
        path,
        names,
        skip_bad_rows=skip_bad_rows,
        fix=f"A SWAG file has the columns {', '.join(names)} (rowanz/swagaf's CSV).",
    )
    kept = [r for r in records if all(n in r.values for n in names)]
    if not kept:
        raise DataError(f"{path}: no examples found; a SWAG CSV has a header line and one row per example.")
    for name, values in zip(names[: 2 + NUM_CHOICES], columns):
        require_text(path, [r.line for r in kept], name, values)
    labels = None
    if labeled:
        choices = [str(c) for c in range(NUM_CHOICES)]
        labels = np.empty(len(kept), np.int32)
        for i, (record, value) in enumerate(zip(kept, columns[-1])):
            try:
                choice = class_label(value)
            except ValueError:  # a non-finite JSON number
                choice = None
            if choice not in choices:
                raise DataError(
                    f"{path}:{record.line}: label {value!r} is not a choice; the known labels are "
                    f"{list(range(NUM_CHOICES))} (the index of the right ending)."
                )
            labels[i] = int(choice)
    endings = [[f"{columns[1][i]} {columns[2 + c][i]}".strip() for c in range(NUM_CHOICES)] for i in range(len(kept))]
    ids = [r.values.get("fold-ind", r.row) for r in kept]
    return ChoiceData(ids, columns[0], endings, labels, path)


def tokenize_choices(tokenizer, data: ChoiceData, max_tokens: int) -> tuple[tf.RaggedTensor, tf.RaggedTensor]:
    """(contexts, endings) as int32 RaggedTensors `[n, choices, (tokens)]` (the context repeated per choice)."""
    choices = len(data.endings[0]) if data.endings else NUM_CHOICES
    contexts = tokenize_texts(tokenizer, [c for c in data.contexts for _ in range(choices)], max_tokens)
    endings = tokenize_texts(tokenizer, [e for row in data.endings for e in row], max_tokens)
    return tuple(tf.RaggedTensor.from_uniform_row_length(t, choices) for t in (contexts, endings))


class ChoicePacker:
    """Packs `[b, choices, (tokens)]` pairs with a `BertPacker` into inputs `[b, choices, seq]`."""

    def __init__(self, packer, num_choices: int):
        self.packer = packer
        self.num_choices = num_choices
        self.seq_length = packer.seq_length

    def __call__(self, first: tf.RaggedTensor, second: tf.RaggedTensor) -> dict:
        packed = self.packer(first.merge_dims(0, 1), second.merge_dims(0, 1))  # [b * choices, seq]
        return {k: tf.reshape(v, [-1, self.num_choices, tf.shape(v)[-1]]) for k, v in packed.items()}

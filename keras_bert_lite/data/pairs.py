"""(anchor, positive) text pairs for training an embedder (`kbl-pairs`): TSV, CSV or JSONL files, and their
packing as one batch of single texts.

    data = read_pairs("train.csv", anchor="question", positive="answer")
    packer = InterleavedPacker(BertPacker(128, vocab, dynamic=True))
    inputs = packer(anchor_ids, positive_ids)      # [2b, seq]: anchor_0, positive_0, anchor_1, ...
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from keras_bert_lite.data.errors import SKIP_HINT, DataError, report_bad_rows
from keras_bert_lite.data.table_files import Record, read_records, require_text, select_columns

COLUMN_FLAGS = "Pass the right column names (--anchor, --positive, --id_column)."


@dataclasses.dataclass
class PairData:
    """Text pairs: `anchors[i]` and `positives[i]` say the same (a question and its answer, a text and its
    paraphrase); `ids` name them in prediction files (an id column or the row number), `lines` in errors."""

    anchors: list
    positives: list
    ids: list
    lines: list
    source: str

    def __len__(self) -> int:
        return len(self.anchors)


def read_pairs(
    path: str,
    *,
    anchor: str = "anchor",
    positive: str = "positive",
    id_column: str = "",
    quoting: str = "auto",
    skip_bad_rows: bool = False,
) -> PairData:
    """Reads the pairs of a TSV/CSV file with a header line, or of a JSONL file.

    Args:
        path: the file (`table_files.read_records`: its extension picks the format; compressed or not).
        anchor, positive: the columns of the two texts.
        id_column: the column of pair ids; "" numbers the file's rows 0, 1, ... (`Record.row`).
        quoting: "auto", "csv" or "none" (`records`).
        skip_bad_rows: skip and count malformed rows and pairs with an empty text instead of raising.

    Raises:
        DataError: a malformed row (path:line), a missing column (listing the columns found), a text that is not
            text or is empty (path:line and the column), or no pairs at all.
    """
    records, _ = read_records(path, skip_bad_rows=skip_bad_rows, quoting=quoting)
    names = [anchor, positive] + ([id_column] if id_column else [])
    select_columns(records, path, names, skip_bad_rows=skip_bad_rows, fix=COLUMN_FLAGS)
    records = [r for r in records if all(n in r.values for n in names)]
    for name in (anchor, positive):
        require_text(path, [r.line for r in records], name, [r.values[name] for r in records])
    records = _with_texts(records, path, (anchor, positive), skip_bad_rows)
    if not records:
        raise DataError(
            f"{path}: no pairs found; it needs a header line (or JSONL keys) with the columns "
            f"{anchor!r} and {positive!r} and one pair per row."
        )
    return PairData(
        anchors=[r.values[anchor] for r in records],
        positives=[r.values[positive] for r in records],
        ids=[r.values[id_column] if id_column else r.row for r in records],
        lines=[r.line for r in records],
        source=path,
    )


def _with_texts(records: list[Record], path: str, names: tuple[str, str], skip_bad_rows: bool) -> list[Record]:
    """The records whose two texts are not blank; a blank one is a `DataError` (or, with `skip_bad_rows`, a
    skipped row)."""
    blank = {
        r.line: next(n for n in names if not r.values[n].strip())
        for r in records
        if not all(r.values[n].strip() for n in names)
    }
    report_bad_rows(
        path,
        [
            f"{path}:{line}: the {name!r} text is empty; every pair needs two texts: fill it in, "
            f"delete the row, {SKIP_HINT}."
            for line, name in blank.items()
        ],
        skip_bad_rows,
        "pairs with an empty text",
    )
    return [r for r in records if r.line not in blank]


class InterleavedPacker:
    """Packs a batch of pairs as one batch of single texts, each row padded to the batch's longest text.

    Args:
        packer: a `BertPacker` (dynamic=True for batches padded to their longest).

    Call args:
        anchors, positives: int RaggedTensors `[b, (tokens)]`.

    Returns:
        The encoder inputs, int32 `[2b, seq]`, rows anchor_0, positive_0, anchor_1, positive_1, ...
        (`models.ranking_loss.MultipleNegativesRankingLoss`'s layout).
    """

    def __init__(self, packer):
        self.packer = packer
        self.seq_length = packer.seq_length

    def __call__(self, anchors: tf.RaggedTensor, positives: tf.RaggedTensor) -> dict:
        # A gather, not a ragged stack: that one's int64 transposes make oneDNN print an error line on every run.
        pairs = anchors.nrows(out_type=tf.int32)
        rows = tf.range(2 * pairs)
        return self.packer(tf.gather(tf.concat([anchors, positives], axis=0), rows // 2 + rows % 2 * pairs))

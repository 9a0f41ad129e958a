"""Texts to embed, with the line each came from: every line of a .txt file, or one column (field) of a .tsv, .csv
or .jsonl file (`records`). Compressed files are read as the text they hold (`encoding`).

    texts = read_texts("corpus.txt")                       # Texts(texts=[...], lines=[1, 2, ...], skipped=0)
    texts = read_texts("reviews.jsonl", column="review")

In a .txt file every line is one text, a blank line too (the empty text), so that row i of the vectors is line
i + 1; the line break that ends the file starts no text, and a Windows "\\r\\n" line end is not part of it.
"""

from __future__ import annotations

import dataclasses
import os

from keras_bert_lite.data.errors import SKIP_HINT, DataError, logger, report_bad_rows
from keras_bert_lite.data.table_files import read_records, require_text, select_columns
from keras_bert_lite.data.text_files import COMPRESSED_SUFFIXES, read_text, undecodable

COLUMN_FIX = "Pass the column that holds the texts (--text_column)."


@dataclasses.dataclass
class Texts:
    """The texts of a file, in order.

    Attributes:
        texts: the texts (str).
        lines: the 1-based line each text starts on.
        skipped: malformed rows skipped (skip_bad_rows).
    """

    texts: list
    lines: list
    skipped: int = 0


def is_text_lines(path: str) -> bool:
    """Whether `path` is a .txt file (one text per line), compressed (.txt.gz) or not."""
    root, ext = os.path.splitext(path.lower())
    return (os.path.splitext(root)[1] if ext in COMPRESSED_SUFFIXES else ext) == ".txt"


def read_texts(path: str, column: str = "text", skip_bad_rows: bool = False) -> Texts:
    """The texts of a .txt file (every line) or of the column `column` of a .tsv/.csv/.jsonl file.

    Raises:
        DataError: "path:line: ..." for a row that is malformed, lacks the column or holds something other than
            text (a JSON number, null or list); the column is absent from the file; the file holds no texts.
        FileNotFoundError: no such file.
    """
    texts = _lines(path, skip_bad_rows) if is_text_lines(path) else _column(path, column, skip_bad_rows)
    if not texts.texts:
        why = " (every row was skipped as malformed)" if texts.skipped else ""
        raise DataError(f"{path}: no texts{why}; pass a file with one text per line (.txt) or per row.")
    return texts


def _lines(path: str, skip_bad_rows: bool) -> Texts:
    """Every line of a .txt file; lines with bytes that are not UTF-8 are malformed."""
    pieces = read_text(path).split("\n")
    if not pieces[-1]:
        pieces.pop()  # the line break that ends the file starts no text
    texts, lines, bad = [], [], []
    for number, line in enumerate(pieces, 1):
        problem = undecodable(line, path)
        if problem:
            bad.append(f"{path}:{number}: {problem}; {SKIP_HINT}.")
            continue
        texts.append(line.removesuffix("\r"))
        lines.append(number)
    report_bad_rows(path, bad, skip_bad_rows)
    _note_blank_lines(path, texts, lines)
    return Texts(texts, lines, len(bad))


def _note_blank_lines(path: str, texts: list, lines: list) -> None:
    blank = [line for text, line in zip(texts, lines) if not text.strip()]
    if blank:
        logger.warning(
            "%s: %d blank lines (the first: line %d) are embedded as texts, so that each line has its "
            "vector; remove them if they are not texts.",
            path,
            len(blank),
            blank[0],
        )


def _column(path: str, column: str, skip_bad_rows: bool) -> Texts:
    """The values of `column` in a .tsv/.csv/.jsonl file, which must be text."""
    records, skipped = read_records(path, skip_bad_rows=skip_bad_rows)
    (texts,), missing = select_columns(records, path, [column], skip_bad_rows=skip_bad_rows, fix=COLUMN_FIX)
    lines = [r.line for r in records if column in r.values]
    require_text(path, lines, column, texts)
    return Texts(texts, lines, skipped + missing)

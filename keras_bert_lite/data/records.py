"""Rows of TSV, CSV and JSONL files, with errors that name the file and line and say how to fix them.

Files are UTF-8 (a byte-order mark is dropped; a row with bytes that are not UTF-8 is malformed: encoding.py);
a CSV quote that never closes is a malformed row at the line where it opened (csv_rows.py).

    rows, skipped = read_records("train.tsv")           # [Record(line=2, values={"sentence": ..., ...}, row=0)]
    (texts, labels), _ = select_columns(rows, "train.tsv", ["sentence", "label"])   # or an error listing columns
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import sys

from keras_bert_lite.data.csv_rows import csv_rows
from keras_bert_lite.data.encoding import COMPRESSED_SUFFIXES, read_text, undecodable
from keras_bert_lite.data.errors import SKIP_HINT, DataError, report_bad_rows

FORMATS = {".tsv": "tsv", ".txt": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl"}


@dataclasses.dataclass
class Record:
    """One row: its 1-based line number in the file, its values by column name, and its 0-based position among
    the file's rows (blank lines not counted, malformed rows counted: the rows after a skipped one keep their
    numbers)."""

    line: int
    values: dict
    row: int


def file_format(path: str) -> str:
    """The format its extension names: "tsv", "csv" or "jsonl"; a compressed file's (`train.tsv.gz`) from the
    extension before its compression's.

    Raises:
        DataError: another extension.
    """
    root, ext = os.path.splitext(path)
    if ext.lower() in COMPRESSED_SUFFIXES:
        ext = os.path.splitext(root)[1]
    if ext.lower() not in FORMATS:
        raise DataError(f"{path}: unknown file type {ext!r}; use .tsv, .csv or .jsonl (one JSON object per line), "
                        "compressed or not (.tsv.gz).")
    return FORMATS[ext.lower()]


def read_records(path: str, *, header: list[str] | None = None, skip_bad_rows: bool = False,
                 quoting: bool = True) -> tuple[list[Record], int]:
    """Reads a TSV/CSV file with a header line (or the given `header`), or a JSONL file.

    Args:
        path: the file; its extension picks the format (.tsv/.txt, .csv, .jsonl/.json).
        header: column names for a TSV/CSV file without a header line (GLUE's CoLA).
        skip_bad_rows: skip (and count) malformed rows instead of raising.
        quoting: TSV only: honour double quotes (False for the GLUE files, whose text has unbalanced quotes).

    Returns:
        (records, number of malformed rows skipped).

    Raises:
        DataError: "path:line: ..." for a malformed row: the wrong number of fields, a quote that never closes,
            bytes that are not UTF-8, a repeat of the header line, a JSONL line that is not a JSON object or names a
            key twice (unless skip_bad_rows); the file is missing or unreadable, its header line is malformed (a
            column named twice), or it is one JSON array instead of JSON Lines.
    """
    fmt = file_format(path)
    text = read_text(path)
    if fmt == "jsonl":
        records, bad = _jsonl_records(text, path)
    else:
        records, bad = _csv_records(text, path, header, delimiter="\t" if fmt == "tsv" else ",",
                                    quoting=quoting or fmt == "csv")
    report_bad_rows(path, bad, skip_bad_rows)
    return records, len(bad)


def _jsonl_records(text: str, path: str) -> tuple[list[Record], list[str]]:
    if text.lstrip().startswith("["):        # a JSON Lines line is an object, so this is one array of them
        root, ext = os.path.splitext(path)
        copy = f"{root}.lines.jsonl" if ext.lower() == ".jsonl" else f"{root}.jsonl"     # never the file itself
        raise DataError(f"{path}: is one JSON array, not JSON Lines (one object per line); convert it, e.g. "
                        f"`jq -c '.[]' {path} > {copy}`.")
    records, bad = [], []
    for number, line in enumerate(io.StringIO(text, newline=""), 1):
        if not line.strip():
            continue
        problem = undecodable(line, path)
        if problem:
            bad.append(f"{path}:{number}: {problem}; {SKIP_HINT}.")
            continue
        try:
            values = json.loads(line, object_pairs_hook=_unique_keys)
        except json.JSONDecodeError as error:
            bad.append(f"{path}:{number}: not valid JSON ({error.msg}); each line must be one JSON object.")
            continue
        except _RepeatedKey as error:
            bad.append(f"{path}:{number}: key {error.key!r} appears twice in one object, so one of its values "
                       f"would be lost; keep one, {SKIP_HINT}.")
            continue
        if not isinstance(values, dict):
            bad.append(f"{path}:{number}: a JSON {type(values).__name__}, not an object "
                       '{"column": value, ...}.')
            continue
        problem = undecodable(json.dumps(values, ensure_ascii=False), path)     # what its \u escapes decoded to
        if problem:
            bad.append(f"{path}:{number}: {problem}; {SKIP_HINT}.")
            continue
        records.append(Record(number, values, len(records) + len(bad)))
    return records, bad


class _RepeatedKey(ValueError):
    """A JSON object names one key twice (`json.loads` would keep the last value, silently)."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    """`object_pairs_hook` that refuses a key given twice in one object."""
    values = {}
    for key, value in pairs:
        if key in values:
            raise _RepeatedKey(key)
        values[key] = value
    return values


def _csv_records(text: str, path: str, header: list[str] | None, *, delimiter: str,
                 quoting: bool) -> tuple[list[Record], list[str]]:
    csv.field_size_limit(sys.maxsize)
    records, bad, names = [], [], header
    for number, row, problem in csv_rows(text, delimiter=delimiter, quoting=quoting):
        if names is None:
            problem = problem or (undecodable(delimiter.join(row), path) if row else "") or _repeated_name(row or [])
            if problem:
                raise DataError(f"{path}:{number}: the header line is malformed: {problem}.")
            names = row or None
            continue
        if not problem and row:
            problem = undecodable(delimiter.join(row), path) or ""
        if problem:
            bad.append(f"{path}:{number}: {problem}; {SKIP_HINT}.")
        elif not row or (len(row) == 1 and not row[0].strip()):
            continue
        elif len(row) != len(names):
            bad.append(f"{path}:{number}: {len(row)} fields, but the header has {len(names)} "
                       f"({', '.join(names)}); fix the row (an unescaped delimiter or quote?) or pass "
                       "--skip_bad_rows.")
        elif [row[0].lstrip("\ufeff"), *row[1:]] == names:     # a second file's header (and BOM), joined on
            bad.append(f"{path}:{number}: this row repeats the header line (files joined with their headers?); "
                       f"delete it, {SKIP_HINT}.")
        else:
            records.append(Record(number, dict(zip(names, row)), len(records) + len(bad)))
    if names is None:
        raise DataError(f"{path}: the file is empty; it needs a header line naming the columns.")
    return records, bad


def _repeated_name(names: list[str]) -> str:
    """What is wrong with a header that names a column twice ("" if nothing; blank names may repeat: trailing
    delimiters). Its rows would keep only the last of the two fields, whichever a flag named."""
    seen = {}
    for position, name in enumerate(names, 1):
        if name.strip() and name in seen:
            return (f"column {name!r} is named twice (columns {seen[name]} and {position}), so one of them would be "
                    "lost; give each column its own name")
        seen[name] = position
    return ""


COLUMN_FLAGS = "Pass the right column name (--text_a, --text_b, --label)."


def select_columns(records: list[Record], path: str, names: list[str], *, skip_bad_rows: bool = False,
                   fix: str = COLUMN_FLAGS) -> tuple[list[list], int]:
    """The values of the columns `names`, one list per name in row order.

    `fix` ends the message for a column absent from the file: how the user names the columns (by default the
    flags that do).

    Returns:
        (columns, number of rows skipped for lacking a field; JSONL rows only, with skip_bad_rows).

    Raises:
        DataError: a column is absent from the file (listing the columns found), or from one JSONL row
            ("path:line: ...", unless skip_bad_rows).
    """
    found = sorted({key for r in records[:1000] for key in r.values})
    for name in names:
        if records and all(name not in r.values for r in records):
            raise DataError(f"{path}: no column {name!r}; the columns are {found}. {_separator_hint(found) or fix}")
    columns, skipped = [[] for _ in names], 0
    for r in records:
        missing = [name for name in names if name not in r.values]
        if missing:
            if not skip_bad_rows:
                raise DataError(f"{path}:{r.line}: no field {missing[0]!r} in this row; its fields are "
                                f"{sorted(r.values)}. Fix the row or pass --skip_bad_rows.")
            skipped += 1
            continue
        for column, name in zip(columns, names):
            column.append(r.values[name])
    return columns, skipped


def _separator_hint(found: list[str]) -> str:
    """The fix for a header read as one column that holds another separator ("" if it does not): the file is
    separated otherwise than its extension says, so no column name could be right."""
    separator = next((c for c in ",\t;|" if c in found[0]), None) if len(found) == 1 else None
    if separator is None:
        return ""
    return (f"The header is one column holding {separator!r}: the file is not separated as its extension says "
            "(.csv: commas, .tsv/.txt: tabs); rename it to the right extension, or convert it to one of them.")


def require_text(path: str, lines: list[int], name: str, values: list) -> None:
    """Raises a `DataError` ("path:line: field ... is ..., not text") for the first value of column `name` that
    is not a string (JSONL: a number, null, a list); `lines` are the values' line numbers."""
    for line, value in zip(lines, values):
        if not isinstance(value, str):
            raise DataError(f"{path}:{line}: field {name!r} is {value!r}, not text.")

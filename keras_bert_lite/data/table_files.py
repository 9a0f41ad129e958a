"""Rows of TSV, CSV and JSONL files, with errors that name the file and line and say how to fix them.

Files are UTF-8 (a byte-order mark is dropped; a row with bytes that are not UTF-8 is malformed; gzip, bzip2 and xz
files are decompressed: text_files.py); a CSV quote that never closes is a malformed row at the line where it
opened (csv_rows.py).

Quoting (`quoting=`, the `--quoting` flag of `kbl-glue`):

  * "csv": a field that starts with a double quote runs to its closing quote, tabs, commas and line breaks
    included; a quote inside it is written twice (what spreadsheets and pandas write).
  * "none": quotes are text and each line is one record (GLUE's TSV files, `cut`, `paste`, most exporters).
  * "auto", the default: "csv" for a .csv file. A .tsv/.txt file is read both ways and the reading with fewer
    malformed rows is kept; on a tie, "csv" unless one of its quoted fields would span lines, then "none". A
    plain TSV whose texts hold quotes has rows that CSV quoting refuses (`"Hi," she said`) or joins (a quote
    opened in one row and closed rows later, the rows between made one example with the last one's label);
    read plain, it has neither. A quoted TSV has fields with tabs or line breaks that plain reading splits
    into malformed rows, or none, and then the two readings have the same rows.

A quoted field that spans lines is kept (a review may hold line breaks) and named, with its first and last line,
in a warning; a label holding a line break is refused (labels.py).

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

from keras_bert_lite.data.csv_rows import csv_rows, last_line
from keras_bert_lite.data.errors import SKIP_HINT, DataError, logger, report_bad_rows
from keras_bert_lite.data.text_files import COMPRESSED_SUFFIXES, read_text, undecodable

FORMATS = {".tsv": "tsv", ".txt": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl"}
QUOTING = ("auto", "csv", "none")  # how double quotes in a TSV/CSV file are read (module docstring)


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
        raise DataError(
            f"{path}: unknown file type {ext!r}; use .tsv, .csv or .jsonl (one JSON object per line), "
            "compressed or not (.tsv.gz)."
        )
    return FORMATS[ext.lower()]


def read_records(
    path: str, *, header: list[str] | None = None, skip_bad_rows: bool = False, quoting: str = "auto"
) -> tuple[list[Record], int]:
    """Reads a TSV/CSV file with a header line (or the given `header`), or a JSONL file.

    Args:
        path: the file; its extension picks the format (.tsv/.txt, .csv, .jsonl/.json).
        header: column names for a TSV/CSV file without a header line (GLUE's CoLA).
        skip_bad_rows: skip (and count) malformed rows instead of raising.
        quoting: "auto", "csv" or "none": how double quotes are read (module docstring).

    Returns:
        (records, number of malformed rows skipped).

    Raises:
        DataError: "path:line: ..." for a malformed row: the wrong number of fields, a quote that never closes,
            bytes that are not UTF-8, a repeat of the header line, a JSONL line that is not a JSON object or names a
            key twice (unless skip_bad_rows); the file is missing or unreadable, its header line is malformed (a
            column named twice), or it is one JSON array instead of JSON Lines.
        ValueError: `quoting` is none of `QUOTING`.
    """
    if quoting not in QUOTING:
        raise ValueError(f"quoting={quoting!r}: use one of {QUOTING}")
    fmt = file_format(path)
    text = read_text(path)
    records, bad = _jsonl_records(text, path) if fmt == "jsonl" else _table_records(text, path, header, fmt, quoting)
    report_bad_rows(path, bad, skip_bad_rows)
    return records, len(bad)


def _table_records(
    text: str, path: str, header: list[str] | None, fmt: str, quoting: str
) -> tuple[list[Record], list[str]]:
    """The records and malformed rows of a TSV/CSV file read as `quoting` says; a record that spans lines is
    warned of."""
    if fmt == "tsv" and quoting == "auto":
        records, bad = _auto_tsv_records(text, path, header)
    else:
        records, bad = _csv_records(
            text, path, header, delimiter="\t" if fmt == "tsv" else ",", quoting=quoting != "none"
        )
    _warn_of_spans(path, records)
    return records, bad


def _auto_tsv_records(text: str, path: str, header: list[str] | None) -> tuple[list[Record], list[str]]:
    """The records of a TSV file read with or without CSV quoting, whichever `quoting="auto"` picks (module
    docstring); the choice of "none" for a file whose quotes CSV would read otherwise is logged."""
    plain = _csv_records(text, path, header, delimiter="\t", quoting=False)
    if '"' not in text:
        return plain
    try:
        quoted = _csv_records(text, path, header, delimiter="\t", quoting=True)
    except DataError:  # a header line that only CSV quoting makes malformed
        return plain
    if len(quoted[1]) < len(plain[1]) or (len(quoted[1]) == len(plain[1]) and not _spans(quoted[0])):
        return quoted
    logger.info(
        "%s: read as plain TSV (quotes are text, one row per line), as CSV quoting does not fit it (%s); "
        "--quoting csv reads it quoted.",
        path,
        _misfit(path, *quoted),
    )
    return plain


def _misfit(path: str, records: list[Record], bad: list[str]) -> str:
    """Why CSV quoting does not fit a file: its first malformed row, else its first record that spans lines."""
    if bad:
        return bad[0].split("; ")[0]
    first, last = _spans(records)[0]
    return f"{path}:{first}: a quoted field spans lines {first}-{last}"


def _spans(records: list[Record]) -> list[tuple[int, int]]:
    """The first and last line of each record that spans lines (a quoted field holding line breaks)."""
    ends = [(r.line, last_line(r.line, list(r.values.values()))) for r in records]
    return [(first, last) for first, last in ends if last > first]


def _warn_of_spans(path: str, records: list[Record]) -> None:
    """Logs a warning naming the lines of the first record that spans lines, and how many do."""
    spans = _spans(records)
    if spans:
        first, last = spans[0]
        more = f" (and {len(spans) - 1} more such rows)" if len(spans) > 1 else ""
        logger.warning(
            "%s:%d: a quoted field runs from line %d to line %d and is read as one field, line breaks "
            "kept%s; if a quote there is text, not CSV quoting, fix it (or, for a .tsv, pass "
            "--quoting none).",
            path,
            first,
            first,
            last,
            more,
        )


def _jsonl_records(text: str, path: str) -> tuple[list[Record], list[str]]:
    if text.lstrip().startswith("["):  # a JSON Lines line is an object, so this is one array of them
        root, ext = os.path.splitext(path)
        copy = f"{root}.lines.jsonl" if ext.lower() == ".jsonl" else f"{root}.jsonl"  # never the file itself
        raise DataError(
            f"{path}: is one JSON array, not JSON Lines (one object per line); convert it, e.g. "
            f"`jq -c '.[]' {path} > {copy}`."
        )
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
            bad.append(
                f"{path}:{number}: key {error.key!r} appears twice in one object, so one of its values "
                f"would be lost; keep one, {SKIP_HINT}."
            )
            continue
        if not isinstance(values, dict):
            bad.append(f'{path}:{number}: a JSON {type(values).__name__}, not an object {{"column": value, ...}}.')
            continue
        problem = undecodable(json.dumps(values, ensure_ascii=False), path)  # what its \u escapes decoded to
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


def _csv_records(
    text: str, path: str, header: list[str] | None, *, delimiter: str, quoting: bool
) -> tuple[list[Record], list[str]]:
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
            bad.append(
                f"{path}:{number}: {len(row)} fields, but the header has {len(names)} "
                f"({', '.join(names)}); fix the row (an unescaped delimiter or quote?) or pass "
                "--skip_bad_rows."
            )
        elif [row[0].lstrip("\ufeff"), *row[1:]] == names:  # a second file's header (and BOM), joined on
            bad.append(
                f"{path}:{number}: this row repeats the header line (files joined with their headers?); "
                f"delete it, {SKIP_HINT}."
            )
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
            return (
                f"column {name!r} is named twice (columns {seen[name]} and {position}), so one of them would be "
                "lost; give each column its own name"
            )
        seen[name] = position
    return ""


COLUMN_FLAGS = "Pass the right column name (--text_a, --text_b, --label)."


def select_columns(
    records: list[Record], path: str, names: list[str], *, skip_bad_rows: bool = False, fix: str = COLUMN_FLAGS
) -> tuple[list[list], int]:
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
                raise DataError(
                    f"{path}:{r.line}: no field {missing[0]!r} in this row; its fields are "
                    f"{sorted(r.values)}. Fix the row or pass --skip_bad_rows."
                )
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
    return (
        f"The header is one column holding {separator!r}: the file is not separated as its extension says "
        "(.csv: commas, .tsv/.txt: tabs); rename it to the right extension, or convert it to one of them."
    )


def require_text(path: str, lines: list[int], name: str, values: list) -> None:
    """Raises a `DataError` ("path:line: field ... is ..., not text") for the first value of column `name` that
    is not a string (JSONL: a number, null, a list, written as JSON); `lines` are the values' line numbers."""
    for line, value in zip(lines, values):
        if not isinstance(value, str):
            raise DataError(
                f"{path}:{line}: field {name!r} is {json.dumps(value, ensure_ascii=False)}, not text; "
                "write it as a JSON string (in double quotes)."
            )

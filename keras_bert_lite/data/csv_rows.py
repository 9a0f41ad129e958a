"""Rows of CSV and TSV text with the line each starts on, and quotes that never close named by their line; and
`tsv_text`, which writes rows back so that a field with a tab or a line break stays one field.

Python's `csv` joins the lines of a quoted field (a CSV feature: a review may hold line breaks), so one quote
left open would swallow every following line into a single field. The reader here is strict:

  * a quoted field still open at the end of the text is a malformed row, reported at the line where its quote
    opened; reading resumes on the line after it, so the rows that follow are still read (and `--skip_bad_rows`
    loses only the broken line);
  * text after a closing quote (`"a"b,...`) is a malformed row.

A quoted field that does close is accepted, line breaks and all; a label holding a line break is refused where
labels are read (labels.py), which catches a stray quote that a later quote happened to close.

Once a quote is open to the end, the lines after it hold quotes only as doubled pairs (any other quote would
have closed the field), so reading them again cannot end inside a quote: at most one resumption per text.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator

_LINE_BREAK = re.compile(r"\r\n?|\n")
_OPEN_AT_END = "unexpected end of data"  # csv's strict-mode message for a quoted field open at the end


def csv_rows(text: str, *, delimiter: str = ",", quoting: bool = True) -> Iterator[tuple[int, list | None, str]]:
    """Yields `(line, fields, "")` for each row and `(line, None, problem)` for each malformed one.

    Args:
        text: the whole file's text.
        delimiter: "," or "\\t".
        quoting: honour double quotes (False: quotes are ordinary characters, as in GLUE's TSV files).

    Yields:
        The 1-based line a row starts on (for an unclosed quote: the line where it opened), its fields (an empty
        list for a blank line), and "" or what is wrong with the row and how to fix it. A row with a quote that
        never closes covers the lines from its start to that quote's; reading resumes after them.
    """
    lines = io.StringIO(text, newline="").readlines()
    options = {"delimiter": delimiter, "strict": True, **({} if quoting else {"quoting": csv.QUOTE_NONE})}
    first = 0  # index of the line the current reader starts at
    while first < len(lines):
        reader, done = csv.reader(lines[first:], **options), 0
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as error:
                if str(error) != _OPEN_AT_END:
                    what = "text follows a closing quote" if "expected after" in str(error) else str(error)
                    yield (
                        first + done + 1,
                        None,
                        (
                            f"{what} on line {first + reader.line_num}; a quote inside a quoted field is written twice "
                            '("")'
                        ),
                    )
                    done = reader.line_num
                    continue
                opened = _open_quote_line(lines[first + done :], delimiter) + first + done
                yield (
                    opened,
                    None,
                    (
                        f"the quote opened on line {opened} is never closed, so every line after it would be read as "
                        'one field; close it (a quote inside a quoted field is written twice: "")'
                    ),
                )
                first = opened
                break
            yield first + done + 1, row, ""
            done = reader.line_num


def _open_quote_line(lines: list[str], delimiter: str) -> int:
    """1-based line, within `lines`, of the quote whose field runs to the end (the row's last field)."""
    row = next(csv.reader(lines, delimiter=delimiter), [])  # not strict: the row as swallowed
    return last_line(1, row[:-1])


def last_line(line: int, fields: list[str]) -> int:
    """The line a row that starts on `line` ends on: later by the line breaks its quoted fields hold."""
    return line + sum(len(_LINE_BREAK.findall(value)) for value in fields)


def tsv_text(rows: list[list[str]]) -> str:
    """Rows as TSV text, one line each: a field holding a tab, a line break or a double quote is quoted (as
    spreadsheets, pandas and this module's reader read it), so that a row stays one line of the right width;
    other fields are written as they are."""
    out = io.StringIO()
    csv.writer(out, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_MINIMAL).writerows(rows)
    return out.getvalue()

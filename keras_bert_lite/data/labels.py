"""Label values as classes and as regression targets: one rule for every file format.

A class label is compared as text after these steps, so that the same label written two ways is one class:
  * surrounding whitespace is stripped: "neg " is "neg";
  * a number is taken by value, written in its shortest plain decimal form: JSON 1 and 1.0 and the text "1",
    "1.0", "+1" or "1e0" are all the class "1"; 0.50 and "0.5" the class "0.5" (pandas writes an integer label
    column as 1.0, 2.0, ... once it holds a missing value; those still match a dev file's 1, 2);
  * JSON true and false are the classes "true" and "false", the same as the text true/false in a CSV. They are
    not merged with 1 and 0: Python's True == 1 is an accident of the language, not of the data;
  * other text is kept as written (case matters: "True" is not "true").
A missing label — JSON null, an empty or blank field — is a malformed row (`--skip_bad_rows` skips it), never a
class "None" or "". So is a label holding a line break (a CSV quote left open swallows the lines after it into
the label) and a JSON list or object. A regression target is a finite number (a JSON number or a text that
reads as one); NaN, infinities and booleans are refused.
"""

from __future__ import annotations

import decimal
import math
import re

from keras_bert_lite.data.errors import SKIP_HINT, report_bad_rows

_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_EXACT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)   # no rounding
_PLAIN_DIGITS = 100   # beyond 10^±100 a number's class name keeps an exponent ("1E+400"), not 400 digits


def drop_unlabeled(records: list, path: str, column: str, *, skip_bad_rows: bool = False) -> tuple[list, int]:
    """The records (`records.Record`) whose `column` holds a usable label, and how many were skipped.

    Rows without the column at all are kept: `select_columns` reports those.

    Raises:
        DataError: "path:line: <problem>" for the first row `label_problem` refuses (unless skip_bad_rows).
    """
    kept, bad = [], []
    for record in records:
        problem = label_problem(record.values.get(column, ""))
        if problem and column in record.values:
            bad.append(f"{path}:{record.line}: {problem}; give the row a label in column {column!r}, {SKIP_HINT}.")
        else:
            kept.append(record)
    report_bad_rows(path, bad, skip_bad_rows, "rows without a usable label")
    return kept, len(bad)


def label_problem(value) -> str:
    """What makes `value` unusable as any label ("" if nothing): missing, a line break, or not a scalar."""
    if value is None:
        return "the label is missing (null)"
    if isinstance(value, (list, dict)):
        return f"the label is a JSON {type(value).__name__}, not a single value"
    if isinstance(value, str):
        if not value.strip():
            return "the label is empty"
        if "\n" in value or "\r" in value:
            return (f"the label {value[:40]!r}... spans several lines: is a quote left open in the row or the rows "
                    "above it?")
    return ""


def class_label(value) -> str:
    """The class name of a label value (see the module docstring).

    Raises:
        ValueError: a value that `label_problem` refuses, or a non-finite number.
    """
    problem = label_problem(value)
    if problem:
        raise ValueError(problem)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"the label {value} is not a finite number")
    text = repr(value) if isinstance(value, float) else str(value).strip()
    if not _NUMBER.fullmatch(text):
        return text
    try:
        number = decimal.Decimal(text).normalize(_EXACT)
    except decimal.InvalidOperation:          # an exponent beyond what decimal can hold, e.g. 1e99999999999999999999
        raise ValueError(f"the label {text} is a number too large to compare with the others; use class names") \
            from None
    if number == 0:
        return "0"
    return format(number, "f") if abs(number.adjusted()) <= _PLAIN_DIGITS else str(number)


def regression_label(value) -> float:
    """The regression target of a label value: a finite number.

    Raises:
        ValueError: a missing value, a boolean, text that is not a number (also Python's `1_000`, which a
            spreadsheet or pandas reads as text), NaN or an infinity.
    """
    problem = label_problem(value)
    if problem:
        raise ValueError(problem)
    if isinstance(value, bool):
        raise ValueError(f"the label {value} is a boolean, not a number")
    try:
        score = float(value)
    except (TypeError, ValueError):
        score = None
    if score is not None and not math.isfinite(score):
        raise ValueError(f"the label {value!r} is not a finite number; a regression target must be one")
    if score is None or (isinstance(value, str) and not _NUMBER.fullmatch(value.strip())):   # float("1_000")
        raise ValueError(f"the label {value!r} is not a number (a regression task needs numeric labels)")
    return score


def is_number(name: str) -> bool:
    """Whether a class name (from `class_label`) is a number, for sorting classes numerically."""
    return bool(_NUMBER.fullmatch(name))

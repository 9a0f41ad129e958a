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

Multi-label data (`LabelSets`) gives each example a set of class labels: a JSON list (`["sports", "politics"]`),
or text with a separator between the labels (`sports|politics`), each label read as above. A label may not hold
the separator (the prediction files join labels with it); an empty set (`[]`, or a blank field) is refused unless
allowed: a lost label column looks the same.
"""

from __future__ import annotations

import dataclasses
import decimal
import math
import re

from keras_bert_lite.data.errors import SKIP_HINT, report_bad_rows

_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_EXACT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)  # no rounding
_PLAIN_DIGITS = 100  # beyond 10^±100 a number's class name keeps an exponent ("1E+400"), not 400 digits
DEFAULT_SEPARATOR = "|"  # between the labels of a multi-label text field


def drop_unlabeled(
    records: list, path: str, column: str, *, skip_bad_rows: bool = False, problem=None
) -> tuple[list, int]:
    """The records (`table_files.Record`) whose `column` holds a usable label, and how many were skipped.

    Rows without the column at all are kept: `select_columns` reports those. `problem`: `value -> what makes it
    unusable ("" if nothing)`, default `label_problem` (a single label).

    Raises:
        DataError: "path:line: <problem>" for the first row `label_problem` refuses (unless skip_bad_rows).
    """
    kept, bad, problem = [], [], problem or label_problem
    for record in records:
        found = problem(record.values.get(column, ""))
        if found and column in record.values:
            bad.append(f"{path}:{record.line}: {found}; give the row a label in column {column!r}, {SKIP_HINT}.")
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
            return (
                f"the label {value[:40]!r}... spans several lines: is a quote left open in the row or the rows "
                "above it?"
            )
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
    except decimal.InvalidOperation:  # an exponent beyond what decimal can hold, e.g. 1e99999999999999999999
        raise ValueError(
            f"the label {text} is a number too large to compare with the others; use class names"
        ) from None
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
    if score is None or (isinstance(value, str) and not _NUMBER.fullmatch(value.strip())):  # float("1_000")
        raise ValueError(f"the label {value!r} is not a number (a regression task needs numeric labels)")
    return score


def is_number(name: str) -> bool:
    """Whether a class name (from `class_label`) is a number, for sorting classes numerically."""
    return bool(_NUMBER.fullmatch(name))


@dataclasses.dataclass(frozen=True)
class LabelSets:
    """How a multi-label field reads: a JSON list of labels, or text with `separator` between them.

    Attributes:
        separator: what separates labels in text (and joins them in prediction files); no label may hold it.
        allow_empty: whether an example may have no labels (`[]`, or a blank field).
    """

    separator: str = DEFAULT_SEPARATOR
    allow_empty: bool = False

    def names(self, value) -> tuple[str, ...]:
        """The distinct class names (`class_label`) of a field's value, in the order written.

        Raises:
            ValueError: null, a JSON object, a label that `class_label` refuses or that holds the separator, or no
                label where none is allowed.
        """
        names = tuple(dict.fromkeys(self._name(item) for item in self._items(value)))
        if not names and not self.allow_empty:
            raise ValueError(
                "the example has no labels (an empty list); if examples may have none, pass --allow_no_labels"
            )
        return names

    def problem(self, value) -> str:
        """What makes `value` unusable ("" if nothing), for `drop_unlabeled`."""
        try:
            self.names(value)
        except ValueError as error:
            return str(error)
        return ""

    def _items(self, value) -> list:
        if value is None:
            raise ValueError(label_problem(value))
        if isinstance(value, dict):
            raise ValueError("the labels are a JSON object; give a list of labels")
        if isinstance(value, list):
            return value
        if isinstance(value, str):
            return value.split(self.separator) if value.strip() else []
        return [value]

    def _name(self, item) -> str:
        if isinstance(item, str) and self.separator in item:
            raise ValueError(
                f"the label {item!r} holds the separator {self.separator!r}, which the prediction "
                "files put between labels; rename the label or choose another --label_separator"
            )
        if isinstance(item, (list, dict)):
            raise ValueError(f"a label in the list is a JSON {type(item).__name__}; give a flat list of labels")
        return class_label(item)

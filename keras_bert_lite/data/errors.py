"""`DataError`, the one exception for bad input data (a command reports it as one line:
`runners.errors`)."""

from __future__ import annotations

import logging

from keras_bert_lite.utils.errors import InputFileError

logger = logging.getLogger("keras_bert_lite.data")

SKIP_HINT = "or pass --skip_bad_rows to skip such rows"  # ends the message of a row that can be skipped


class DataError(InputFileError):
    """Bad input data; the message names the file (and line or field) and the fix."""


def report_bad_rows(path: str, bad: list[str], skip_bad_rows: bool, what: str = "malformed rows") -> None:
    """Raises a `DataError` with the first of `bad` (one "path:line: problem; fix" message each) and their count,
    or, with `skip_bad_rows`, logs how many were skipped."""
    if bad and not skip_bad_rows:
        raise DataError(bad[0] + (f" (and {len(bad) - 1} more {what})" if len(bad) > 1 else ""))
    if bad:
        logger.warning("%s: skipped %d %s (--skip_bad_rows), e.g. %s", path, len(bad), what, bad[0])

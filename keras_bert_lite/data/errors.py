"""`DataError`, the one exception for bad input data (a command reports it as one line:
`runners.errors`)."""

from __future__ import annotations


SKIP_HINT = "or pass --skip_bad_rows to skip such rows"   # ends the message of a row that can be skipped


class DataError(ValueError):
    """Bad input data; the message names the file (and line or field) and the fix."""

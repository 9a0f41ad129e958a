"""`DataError`, the one exception for bad input data, and how a command-line tool reports it.

    def main(argv=None):
        with exit_on_data_error():          # "error: train.csv:7: ..." on stderr, exit status 1, no traceback
            run(parse_args(argv))
"""

from __future__ import annotations

import contextlib


SKIP_HINT = "or pass --skip_bad_rows to skip such rows"   # ends the message of a row that can be skipped


class DataError(ValueError):
    """Bad input data; the message names the file (and line or field) and the fix."""


@contextlib.contextmanager
def exit_on_data_error():
    """Turns a `DataError` raised inside the block into `SystemExit("error: <message>")`: one line, no traceback.

    For a command's entry point only; library code raises `DataError` and leaves reporting to its caller.
    """
    try:
        yield
    except DataError as error:
        raise SystemExit("error: " + " ".join(str(error).splitlines())) from None

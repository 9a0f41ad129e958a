"""How a command-line tool reports the errors it expects: one line, no traceback."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def exit_on(*error_types: type[BaseException]):
    """Turns an error of `error_types` raised inside the block into `SystemExit("error: <message>")`: one line on
    stderr, exit status 1, no traceback. Other errors (bugs) keep their traceback.

    For a command's entry point only; library code raises and leaves reporting to its caller.
    """
    try:
        yield
    except error_types as error:
        raise SystemExit("error: " + " ".join(str(error).splitlines())) from None

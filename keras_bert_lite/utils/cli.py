"""How a command-line tool reports the errors it expects, and Ctrl-C: one line, no traceback."""

from __future__ import annotations

import contextlib
import signal
import sys


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


@contextlib.contextmanager
def exit_on_interrupt():
    """Turns Ctrl-C (`KeyboardInterrupt`) inside the block into one line on stderr (the interrupt's message, e.g.
    what a stopped training run keeps, else "interrupted") and exit status 130 (128 + SIGINT), as shells report
    a command that SIGINT ended. For a command's entry point only.
    """
    try:
        yield
    except KeyboardInterrupt as interrupt:
        print(str(interrupt) or "interrupted", file=sys.stderr, flush=True)
        raise SystemExit(128 + signal.SIGINT) from None

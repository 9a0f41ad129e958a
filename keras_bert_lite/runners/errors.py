"""The errors a command reports as one line instead of a traceback: bad input data, a run that diverged,
checkpoints that cannot be restored, missing or contradicting files and settings, and the file system's own
errors (permission denied, a read-only or full disk). Each message already names the file, step or setting and
the fix. Ctrl-C is one line too (exit status 130). Any other exception is a bug and keeps its traceback.

    def main(argv=None):
        with exit_on_expected_error():
            run(parse_args(argv))
"""

import contextlib

from keras_bert_lite.checkpoints import CheckpointMismatchError
from keras_bert_lite.training.checkpointing import CheckpointError
from keras_bert_lite.training.non_finite import NonFiniteLossError
from keras_bert_lite.utils.cli import exit_on, exit_on_interrupt
from keras_bert_lite.utils.errors import InputFileError


class SettingsError(ValueError):
    """A command's settings contradict each other, the files they name, or the run they resume."""


EXPECTED_ERRORS = (
    InputFileError,
    NonFiniteLossError,
    CheckpointError,
    CheckpointMismatchError,
    SettingsError,
    OSError,
)  # the file system's: no such file, permission denied, read-only, disk full


@contextlib.contextmanager
def exit_on_expected_error():
    """A context manager: an `EXPECTED_ERRORS` error inside it exits with one line (`utils.cli.exit_on`), and so
    does Ctrl-C, with status 130 (`utils.cli.exit_on_interrupt`)."""
    with exit_on_interrupt(), exit_on(*EXPECTED_ERRORS):
        yield

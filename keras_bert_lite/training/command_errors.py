"""The errors a training command reports as one line instead of a traceback: bad input data, a run that
diverged, checkpoints that cannot be restored. Each message already names the file or step and the fix.

    def main(argv=None):
        with exit_on_training_error():
            run(parse_args(argv))
"""

from keras_bert_lite.data.errors import DataError
from keras_bert_lite.training.checkpointing import CheckpointError
from keras_bert_lite.training.non_finite import NonFiniteLossError
from keras_bert_lite.utils.cli import exit_on

EXPECTED_ERRORS = (DataError, NonFiniteLossError, CheckpointError)


def exit_on_training_error():
    """A context manager: an `EXPECTED_ERRORS` error inside it exits with one line (`utils.cli.exit_on`)."""
    return exit_on(*EXPECTED_ERRORS)

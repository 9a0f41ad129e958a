"""Ctrl-C during training: the first press stops the loop before its next step (inside a compiled loop of many
steps too), with a message naming the step and what is kept; a second press interrupts at once."""

import os
import signal

import pytest
import tensorflow as tf

from keras_bert_lite.training import interrupts
from keras_bert_lite.training.interrupts import TrainingInterrupted, on_request, requested, stop_requests
from tests.training.test_trainer_safety import dataset_fn, trainer


def test_the_first_ctrl_c_requests_a_stop_and_the_second_interrupts():
    calls = []
    with stop_requests(), on_request(lambda: calls.append("stop")):
        assert not requested()
        os.kill(os.getpid(), signal.SIGINT)
        assert requested() and calls == ["stop"]
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler and not interrupts._REQUESTS.active


def sigint_at_example(number: int):
    """A `dataset_fn` whose pipeline sends this process SIGINT when it makes its `number`-th example: while the
    main thread is inside the Trainer's compiled loop."""
    made = []

    def example(target):
        made.append(1)
        if len(made) == number:
            os.kill(os.getpid(), signal.SIGINT)
        return target

    def fn(context):
        return dataset_fn()(context).map(
            lambda x, y: (x, tf.ensure_shape(tf.py_function(example, [y], tf.float32), []))
        )

    return fn


def test_ctrl_c_inside_a_compiled_loop_stops_it_at_the_next_step(tmp_path):
    run = trainer(tmp_path)
    run.steps_per_loop = run.checkpoint_every = 1000  # one compiled call runs every step
    with pytest.raises(
        TrainingInterrupted,
        match=r"^interrupted at step (\d+), before the first checkpoint: run "
        "the same command to start again$",
    ) as error:
        run.train(sigint_at_example(20), global_batch_size=4, total_steps=1000, verbose=False)
    step = int(error.value.args[0].split()[3].rstrip(","))
    assert step < 20, step  # example 20 is in step 5; what the pipeline read ahead of it, at most
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert not os.path.exists(tmp_path / "checkpoints") or not os.listdir(tmp_path / "checkpoints")

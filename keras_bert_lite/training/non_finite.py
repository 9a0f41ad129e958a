"""Stop training at the first step whose loss or gradient norm is not finite, saying which step and what is kept.

A NaN or Inf loss never recovers: every later update is NaN, and every checkpoint written after it holds NaN
weights (with a bounded number kept, the good ones are rotated away). Both training paths stop at once instead,
before anything else is saved: the custom `Trainer` loop (pretraining) checks each step inside its compiled loop,
and `StopOnNonFinite` does it for `model.fit` (fine-tuning). The gradient norm is the BERT optimizers'
`gradient_norm` (the global norm before clipping); with another optimizer only the loss is checked.

A step's loss and norm come before its update, which can still overflow the weights: `Trainer` checks the weights
before each checkpoint (`check_finite_weights`), and fine-tuning refuses dev predictions that are not finite
(`finite_predictions`), before its epoch is saved.
"""

from __future__ import annotations

import math

import keras
import numpy as np
import tensorflow as tf

from keras_bert_lite.training.callbacks import FitStepCallback

# What usually fixes a diverged run, in no command's terms: a command passes its own (`advice` arguments).
GENERIC_ADVICE = (
    "a lower learning rate or a longer warmup, bf16 instead of fp16 mixed precision, or checking the "
    "input data of that step"
)


class NonFiniteLossError(RuntimeError):
    """Training reached a non-finite loss or gradient norm and was stopped."""


def gradient_norm_variable(optimizer):
    """The optimizer's `gradient_norm` variable (through a `LossScaleOptimizer` to the one it wraps), or None."""
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    return getattr(inner, "gradient_norm", None)


def non_finite_message(step: int, loss: float, norm: float | None, kept: str, advice: str = GENERIC_ADVICE) -> str:
    """The error text: the step, the values, what is kept (`kept`; "" for nothing), and what to try (`advice`)."""
    values = f"loss {loss:.6g}" + ("" if norm is None else f", gradient norm {norm:.6g}")
    saved = f"Nothing was saved after it; {kept}." if kept else "Nothing was saved, before it or after."
    return f"Training stopped at step {step}: {values} (not finite). {saved} Usual fixes: {advice}."


def check_finite_weights(variables, step: int, kept: str, advice: str = GENERIC_ADVICE) -> None:
    """Raises `NonFiniteLossError` if any of `variables` holds a NaN or infinity: call it before saving them.

    The loss and gradient norm of a step are checked before its update; an update can still overflow the weights
    (a huge learning rate), and only the next step's loss would show it.
    """
    broken = [v.path for v in variables if not bool(tf.reduce_all(tf.math.is_finite(v)))]
    if broken:
        raise NonFiniteLossError(
            f"Training stopped at step {step}: the updates since the last save made {len(broken)} weight(s) "
            f"non-finite (e.g. {broken[0]}). Nothing was saved after them; {kept}. Usual fixes: {advice}."
        )


def finite_predictions(predict, advice: str = GENERIC_ADVICE):
    """`predict` (a `dataset_predictor`), raising `NonFiniteLossError` when a floating output is not finite: the
    weights diverged (finite, but so large that the outputs overflow), and metrics of such outputs mean nothing.
    The message ends with `advice`."""

    def checked(dataset):
        outputs = predict(dataset)
        for value in (v for batch in outputs for v in tf.nest.flatten(batch)):
            if np.issubdtype(value.dtype, np.floating) and not np.isfinite(value).all():
                raise NonFiniteLossError(
                    "The model's predictions are not finite: training diverged. Nothing was "
                    f"saved for this epoch. Usual fixes: {advice}."
                )
        return outputs

    return checked


class StopOnNonFinite(FitStepCallback):
    """Raises `NonFiniteLossError` after the first `fit` batch whose loss or gradient norm is not finite.

    It raises from `on_train_batch_end`, before the epoch's end callbacks run, so no callback placed after it
    saves the broken weights. With `steps_per_execution=1` (the default) the step it names is exact.

    Args:
        kept: `() -> str`, what the error says is kept, computed when it stops from the files there then (e.g.
            "the best epoch so far is in model.keras"; "" for nothing).
        advice: what the error suggests trying, in the command's own terms.
    """

    def __init__(self, kept, advice: str = GENERIC_ADVICE):
        super().__init__()
        self.kept = kept
        self.advice = advice

    def on_train_batch_end(self, batch, logs=None):
        loss = float((logs or {}).get("loss", 0.0))
        variable = gradient_norm_variable(self.model.optimizer)
        norm = None if variable is None else float(keras.ops.convert_to_numpy(variable))
        if not math.isfinite(loss) or (norm is not None and not math.isfinite(norm)):
            raise NonFiniteLossError(non_finite_message(self.fit_step(batch), loss, norm, self.kept(), self.advice))

"""The learning-rate schedule of BERT: linear warmup, then linear decay to 0."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup then linear decay to 0, composed exactly as google-research/bert `create_optimizer`.

    With `p = peak_learning_rate`, `W = warmup_steps`, `T = total_steps` and optimizer step `s` (0-based: the
    first update uses `s = 0`):

        decayed(s) = p * (1 - min(s, T) / T)              # tf.train.polynomial_decay, power 1, end 0
        lr(s)      = p * s / W   if s < W                 # warmup
                     decayed(s)  otherwise

    The decay runs over `[0, T]` from step 0, not from the end of warmup; so, as in the original, the rate
    never exactly reaches `p` when `W > 0`: it peaks at `p * (1 - W / T)` at `s = W` (just after
    `p * (W - 1) / W` at `s = W - 1`). `lr(0) = 0` when `W > 0` (the original's first update is a no-op
    apart from filling the Adam moments). With `W = 0` there is no warmup and `lr(0) = p`. For `s >= T`,
    `lr = 0`.

    Args:
        peak_learning_rate: `p`, the `init_lr` of the original.
        total_steps: `T`, the number of optimizer updates (`num_train_steps`); > 0.
        warmup_steps: `W` (`num_warmup_steps`); >= 0.
    """

    def __init__(self, peak_learning_rate, total_steps, warmup_steps=0, name="warmup_linear_decay"):
        if total_steps is None or int(total_steps) <= 0:
            raise ValueError(f"total_steps must be a positive integer; got {total_steps!r}.")
        if warmup_steps is None or int(warmup_steps) < 0:
            raise ValueError(f"warmup_steps must be a non-negative integer; got {warmup_steps!r}.")
        if float(peak_learning_rate) < 0:
            raise ValueError(f"peak_learning_rate must be >= 0; got {peak_learning_rate!r}.")
        self.peak_learning_rate = float(peak_learning_rate)
        self.total_steps = int(total_steps)
        self.warmup_steps = int(warmup_steps)
        self.name = name

    def __call__(self, step):
        step = ops.cast(step, "float32")
        total = float(self.total_steps)
        decayed = self.peak_learning_rate * (1.0 - ops.minimum(step, total) / total)
        if not self.warmup_steps:
            return decayed
        warmup = self.peak_learning_rate * (step / float(self.warmup_steps))
        return ops.where(step < float(self.warmup_steps), warmup, decayed)

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "total_steps": self.total_steps,
            "warmup_steps": self.warmup_steps,
            "name": self.name,
        }

"""`BertAdamW`: google-research/bert's AdamW (no bias correction, weight decay inside the update)."""

import keras
from keras import ops

from keras_bert_lite.training.bert_optimizer import BertOptimizer


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertAdamW(BertOptimizer):
    """Adam with decoupled weight decay exactly as google-research/bert's `AdamWeightDecayOptimizer`.

    Per variable `w` with (clipped) gradient `g` and learning rate `lr`:

        m = beta_1 * m + (1 - beta_1) * g
        v = beta_2 * v + (1 - beta_2) * g^2
        update = m / (sqrt(v) + epsilon)              # no bias correction
        update += weight_decay_rate * w               # unless w matches weight_decay_exclusions
        w = w - lr * update

    This is not `keras.optimizers.AdamW`, which bias-corrects and puts epsilon inside a bias-corrected
    denominator.

    Args:
        learning_rate: float or a `LearningRateSchedule` (e.g. `WarmupLinearDecay`).
        weight_decay_rate: decoupled weight decay (0.01 in BERT).
        beta_1, beta_2, epsilon: Adam constants (0.9, 0.999, 1e-6 in BERT).
        weight_decay_exclusions: regexes searched in each variable's path; a match means no weight decay.
        global_clipnorm: clip the gradient to this global norm before the update (1.0 in BERT); None: no
            clipping.
        accumulation_steps: N >= 1; update once per N calls with the mean of their gradients.
        **kwargs: other `keras.optimizers.Optimizer` arguments (`clipnorm`, `use_ema`, ...).
    """

    def __init__(self, learning_rate=1e-4, *args, name="bert_adamw", **kwargs):  # the rest: BertOptimizer's
        super().__init__(learning_rate, *args, name=name, **kwargs)

    def _next_value(self, variable, next_m, next_v, lr, excluded):
        update = ops.divide(next_m, ops.add(ops.sqrt(next_v), self.epsilon))
        if self.weight_decay_rate and not excluded:
            update = ops.add(update, ops.multiply(self.weight_decay_rate, variable))
        return ops.subtract(variable, ops.multiply(lr, update))

"""`BertLamb`: LAMB, layer-wise adaptive moments, as tensorflow/models has it for BERT."""

import keras
from keras import ops

from keras_bert_lite.training.bert_optimizer import BertOptimizer


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertLamb(BertOptimizer):
    """LAMB (You et al. 2019, "Large Batch Optimization for Deep Learning: Training BERT in 76 minutes").

    Follows tensorflow/models `official/modeling/optimization/lamb.py` (the TF-Addons LAMB), with its
    `exclude_from_layer_adaptation` defaulting to the weight-decay exclusions as there. With `t` the 1-based
    optimizer update count:

        m = beta_1 * m + (1 - beta_1) * g;   v = beta_2 * v + (1 - beta_2) * g^2
        update = (m / (1 - beta_1^t)) / (sqrt(v / (1 - beta_2^t)) + epsilon)   # bias-corrected, as in the paper
        update += weight_decay_rate * w                                        # unless excluded
        ratio = ||w|| / ||update||  if both norms > 0, else 1;  ratio = 1 if excluded
        w = w - ratio * lr * update

    The NVIDIA BERT LAMB additionally normalizes gradients by their global norm before the moments; that is
    not done here (use `global_clipnorm` for the usual clipping).

    Args: as `BertAdamW`; excluded variables (LayerNorm, biases) get neither weight decay nor a trust ratio.
    """

    def __init__(self, learning_rate=1e-3, *args, name="bert_lamb", **kwargs):  # the rest: BertOptimizer's
        super().__init__(learning_rate, *args, name=name, **kwargs)

    def _next_value(self, variable, next_m, next_v, lr, excluded):
        dtype = variable.dtype
        t = ops.cast(self.iterations + 1, dtype)
        m_hat = ops.divide(next_m, 1.0 - ops.power(ops.cast(self.beta_1, dtype), t))
        v_hat = ops.divide(next_v, 1.0 - ops.power(ops.cast(self.beta_2, dtype), t))
        update = ops.divide(m_hat, ops.add(ops.sqrt(v_hat), self.epsilon))
        if excluded:
            return ops.subtract(variable, ops.multiply(lr, update))
        if self.weight_decay_rate:
            update = ops.add(update, ops.multiply(self.weight_decay_rate, variable))
        w_norm = ops.sqrt(ops.sum(ops.square(variable)))
        u_norm = ops.sqrt(ops.sum(ops.square(update)))
        ratio = ops.where(
            ops.greater(w_norm, 0.0), ops.where(ops.greater(u_norm, 0.0), ops.divide(w_norm, u_norm), 1.0), 1.0
        )
        return ops.subtract(variable, ops.multiply(ops.multiply(ratio, lr), update))

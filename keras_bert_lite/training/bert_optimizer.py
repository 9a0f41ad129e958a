"""`BertOptimizer`: what the BERT recipe's Keras 3 optimizers share, AdamW as in google-research/bert
(`bert_adamw.BertAdamW`) and LAMB (`bert_lamb.BertLamb`).

Both are `keras.optimizers.Optimizer` subclasses (custom `build`/`update_step`), so they work with
`model.fit` (also `jit_compile=True`), under mixed precision (also wrapped by `LossScaleOptimizer`), in a
`tf.distribute` replica context (`MirroredStrategy`, `model.fit` or a custom `strategy.run` step), and they
serialize with the model.

What happens to one batch of gradients, in order:

1. `tf.IndexedSlices` gradients (from embedding lookups) are made dense, so that the global norm below is the
   norm of the real gradient. (TF's and Keras' `global_norm` sum the squares of an IndexedSlices' *rows*, which
   counts a token that occurs k times in the batch as k separate rows instead of one summed row.)
2. Gradient accumulation (`accumulation_steps=N > 1`): micro-batch gradients are summed and the optimizer
   update happens on every N-th call, with their mean. See `BertOptimizer` for why Keras' own
   `gradient_accumulation_steps` is not used.
3. Clipping by global norm (`global_clipnorm`, 1.0 in the BERT recipe), applied to the (accumulated) gradient
   before the update, as `tf.clip_by_global_norm` was in the original. The norm before clipping is kept in
   the optimizer's `gradient_norm` variable (for logs, and for stopping a run whose gradient is not finite).
   Under `tf.distribute` with several replicas the norm is that of the *all-reduced* gradient, so N replicas
   step exactly like one device with the same global batch (Keras, the TF1 original and tensorflow/models clip
   each replica's own gradient before the all-reduce, which is not the single-device result). See
   `_clip_gradients`.
4. The update of `BertAdamW` or `BertLamb`, with weight decay inside the update.

Weight decay is skipped for variables whose path (e.g. `layer_0/attention_layer_norm/gamma`,
`layer_0/attention/qkv_bias`, `masked_lm/output_bias`) matches any of the regexes `weight_decay_exclusions`
(default: the original's `["LayerNorm", "layer_norm", "bias"]`), so for every LayerNorm gamma/beta and every
bias of this library, and applied to kernels and embedding tables. Keras' `exclude_from_weight_decay()` is
honoured as well (it matches `variable.name`, not the path, so it cannot express the default list).
"""

import re

import keras
import tensorflow as tf
from keras import ops

DEFAULT_WEIGHT_DECAY_EXCLUSIONS = ("LayerNorm", "layer_norm", "bias")


@tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
def _sum_of_squares(x):
    """sum(x^2) as one XLA kernel: one read of `x`, not a squared copy written and then read again."""
    return tf.reduce_sum(tf.square(x))


def _global_norm(grads):
    """sqrt(sum of every gradient's squares): float32 scalar (0 for no gradients)."""
    return tf.sqrt(tf.add_n([tf.cast(_sum_of_squares(g), tf.float32) for g in grads] or [tf.zeros([])]))


def _clip_scale(norm, clip_norm):
    """The factor `tf.clip_by_global_norm(grads, clip_norm)` multiplies every gradient of global norm `norm` by:
    1 within the norm, clip_norm / norm above it, NaN if the norm is not finite (as there)."""
    return clip_norm / tf.maximum(norm, clip_norm) + (norm - norm)


def _dense(gradient):
    """An IndexedSlices gradient as the dense tensor it stands for (duplicate rows summed)."""
    if isinstance(gradient, tf.IndexedSlices):
        return tf.convert_to_tensor(gradient)
    return gradient


class BertOptimizer(keras.optimizers.Optimizer):
    """Shared machinery: first/second moments, per-variable decay flags, dense gradients, accumulation.

    Gradient accumulation is done here rather than by Keras' `gradient_accumulation_steps` because Keras'
    (3.15, TF backend) puts the update, which all-reduces and `merge_call`s, in an `ops.cond`; under a
    `MirroredStrategy` that raises "`merge_call` called while defining a new graph or a tf.function ... a
    control flow statement which contains a synchronization point". Here there is no control flow around a
    synchronization point: every call runs the full Keras apply (clip, all-reduce, `update_step`); on the
    N-1 calls that are not an update the gradient passed on is zero and `update_step` keeps every variable
    as it was (a select, not a branch). Accumulators are on-read-synchronized variables, so each replica
    sums its own gradients without communicating.

    With accumulation, `iterations` counts optimizer updates (micro-batch calls // N), and a
    `LearningRateSchedule` is evaluated at that count: the k-th update (0-based) uses `schedule(k)`, the
    same as without accumulation. (Keras' own accumulation evaluates the schedule at the micro-batch count.)

    Subclasses give the update rule: `_next_value(variable, next_m, next_v, lr, excluded)`, the variable's new
    value from the new moments (traced into the fused XLA update). Arguments: as `BertAdamW`.
    """

    def __init__(
        self,
        learning_rate,
        weight_decay_rate=0.01,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        weight_decay_exclusions=DEFAULT_WEIGHT_DECAY_EXCLUSIONS,
        global_clipnorm=1.0,
        accumulation_steps=1,
        name=None,
        **kwargs,
    ):
        if kwargs.pop("weight_decay", None) is not None:
            raise ValueError(
                f"{type(self).__name__} applies `weight_decay_rate` inside its update; do not also "
                "pass Keras' `weight_decay` (it would decay the weights twice)."
            )
        if kwargs.pop("gradient_accumulation_steps", None):
            raise ValueError(
                f"Use `accumulation_steps` with {type(self).__name__}: Keras' "
                "`gradient_accumulation_steps` does not work under tf.distribute (see docstring)."
            )
        if isinstance(learning_rate, int):
            learning_rate = float(learning_rate)
        accumulation_steps = int(accumulation_steps or 1)
        if accumulation_steps < 1:
            raise ValueError(f"accumulation_steps must be >= 1; got {accumulation_steps}.")
        super().__init__(learning_rate=learning_rate, global_clipnorm=global_clipnorm, name=name, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.weight_decay_rate = weight_decay_rate
        self.weight_decay_exclusions = tuple(weight_decay_exclusions or ())
        self.accumulation_steps = accumulation_steps
        self._gradient_scale = None  # set by `_clip_gradients`, read by `update_step`, within one `apply`

    # ---------------------------------------------------------------- variables

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        # The global norm of the last update's gradient, before clipping (same on every replica).
        self.gradient_norm = self.add_variable(
            (), initializer="zeros", dtype="float32", aggregation="only_first_replica", name="gradient_norm"
        )
        self._m = [self.add_variable_from_reference(v, name="m") for v in var_list]
        self._v = [self.add_variable_from_reference(v, name="v") for v in var_list]
        # Python bools, decided once from the variable paths: no string work in the compiled step.
        self._excluded = [self._is_excluded(v) for v in var_list]
        self._accumulators = []
        if self.accumulation_steps > 1:
            for v in var_list:
                with self._distribution_strategy.extended.colocate_vars_with(getattr(v, "value", v)):
                    acc = keras.Variable(
                        initializer="zeros",
                        shape=v.shape,
                        dtype=v.dtype,
                        trainable=False,
                        synchronization="on_read",
                        aggregation="sum",
                        name=self._slot_name(v, "accumulator"),
                    )
                self._track_variable(acc)
                self._accumulators.append(acc)

    @staticmethod
    def _slot_name(variable, suffix):
        path = getattr(variable, "path", None) or re.sub(r":\d+$", "", variable.name)
        return f"{path.replace('/', '_').replace(':', '_')}_{suffix}"

    def _is_excluded(self, variable):
        """True if `variable` gets no weight decay (nor, in LAMB, a trust ratio)."""
        path = getattr(variable, "path", None) or re.sub(r":\d+$", "", variable.name)
        if any(re.search(pattern, path) for pattern in self.weight_decay_exclusions):
            return True
        return not self._use_weight_decay(variable)  # Keras' exclude_from_weight_decay(), if it was called.

    def uses_weight_decay(self, variable):
        """Whether `variable` is decayed by this optimizer (needs `weight_decay_rate` > 0)."""
        return bool(self.weight_decay_rate) and not self._is_excluded(variable)

    # ---------------------------------------------------------------- steps

    @property
    def iterations(self):
        """Optimizer updates done so far (micro-batch calls // accumulation_steps)."""
        if self.accumulation_steps > 1:
            return ops.floor_divide(self._iterations, self.accumulation_steps)
        return self._iterations

    def _get_current_learning_rate(self):
        if self.accumulation_steps > 1 and isinstance(
            self._learning_rate, keras.optimizers.schedules.LearningRateSchedule
        ):
            return self._learning_rate(self.iterations)
        return super()._get_current_learning_rate()

    def _is_update_call(self):
        """Whether this call (the `_iterations`-th, not yet counted) completes an accumulation window."""
        return ops.equal(ops.mod(self._iterations + 1, self.accumulation_steps), 0)

    def apply(self, grads, trainable_variables=None):
        self._gradient_scale = None  # no factor from an earlier call (or graph) carries over
        grads = [_dense(g) for g in grads]
        if self.accumulation_steps > 1 and len(grads):
            if not self.built:
                if trainable_variables is None:
                    raise ValueError("Call `optimizer.build(variables)` or pass `trainable_variables`.")
                with keras.name_scope(self.name, caller=self):
                    self.build(list(trainable_variables))
            variables = self._trainable_variables if trainable_variables is None else list(trainable_variables)
            grads = self._accumulate(grads, variables)
        return super().apply(grads, trainable_variables)

    def _accumulate(self, grads, variables):
        update_now = self._is_update_call()
        steps = float(self.accumulation_steps)
        out = []
        for grad, variable in zip(grads, variables):
            if grad is None:
                out.append(None)
                continue
            acc = self._accumulators[self._get_variable_index(variable)]
            total = ops.add(acc, ops.cast(grad, acc.dtype))
            zeros = ops.zeros_like(total)
            acc.assign(ops.where(update_now, zeros, total))
            out.append(ops.where(update_now, ops.divide(total, steps), zeros))
        return out

    def _clip_gradients(self, grads):
        """Clips the gradient to `global_clipnorm`; over several replicas, the all-reduced one, as one device would.

        On one replica the gradients are returned as they are and the clipping factor is kept for
        `update_step`, whose fused kernel multiplies by it: a pass over every gradient saved. With N > 1
        replicas, Keras all-reduces (sums) the returned gradients right after this; so this returns
        clip(sum of the replicas' gradients) / N on every replica, and the sum is the clipped global gradient.
        Either way the global norm before clipping goes to `gradient_norm` (on update calls, with accumulation).
        """
        present = [i for i, g in enumerate(grads) if g is not None]
        context = tf.distribute.get_replica_context()
        replicas = 1 if context is None else context.num_replicas_in_sync
        total = [grads[i] for i in present]
        if replicas > 1:
            total = context.all_reduce(tf.distribute.ReduceOp.SUM, total)
        norm = _global_norm(total)
        if self.accumulation_steps > 1:
            norm = ops.where(self._is_update_call(), norm, self.gradient_norm)
        self.gradient_norm.assign(norm)
        if self.global_clipnorm and replicas == 1:
            self._gradient_scale = _clip_scale(norm, self.global_clipnorm)
            return grads
        if self.global_clipnorm:
            scale = _clip_scale(norm, self.global_clipnorm) / replicas
        else:  # Keras' own clipnorm / clipvalue, if set, or nothing
            total, scale = super()._clip_gradients(total), 1.0 / replicas
        out = list(grads)
        for i, g in zip(present, total):
            out[i] = g if replicas == 1 and not self.global_clipnorm else g * scale
        return out

    def update_step(self, gradient, variable, learning_rate):
        i = self._get_variable_index(variable)
        m, v = self._m[i], self._v[i]
        update_now = self._is_update_call() if self.accumulation_steps > 1 else True
        scale = 1.0 if self._gradient_scale is None else self._gradient_scale
        next_m, next_v, next_var = self._fused_update(
            ops.cast(gradient, variable.dtype),
            ops.cast(scale, variable.dtype),
            tf.convert_to_tensor(m),
            tf.convert_to_tensor(v),
            tf.convert_to_tensor(variable),
            ops.cast(learning_rate, variable.dtype),
            self._excluded[i],
            update_now,
        )
        self.assign(m, next_m)
        self.assign(v, next_v)
        self.assign(variable, next_var)

    @tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
    def _fused_update(self, grad, scale, m, v, variable, lr, excluded, update_now):
        """The update's element-wise math as one XLA kernel: one pass over (g, m, v, w) instead of ~15 ops
        of one pass each, which in graph mode run one after the other after the clip. `scale` is the global-norm
        clipping factor (1 when unclipped). Tensors in and out, so the assignments stay Keras' (per replica
        under tf.distribute)."""
        grad = ops.multiply(grad, scale)
        next_m = ops.add(ops.multiply(self.beta_1, m), ops.multiply(1.0 - self.beta_1, grad))
        next_v = ops.add(ops.multiply(self.beta_2, v), ops.multiply(1.0 - self.beta_2, ops.square(grad)))
        next_var = self._next_value(variable, next_m, next_v, lr, excluded=excluded)
        if self.accumulation_steps > 1:
            next_m = ops.where(update_now, next_m, m)
            next_v = ops.where(update_now, next_v, v)
            next_var = ops.where(update_now, next_var, variable)
        return next_m, next_v, next_var

    def _next_value(self, variable, next_m, next_v, lr, excluded):
        raise NotImplementedError

    def get_config(self):
        config = super().get_config()
        for key in ("weight_decay", "gradient_accumulation_steps"):
            config.pop(key, None)
        config.update(
            beta_1=self.beta_1,
            beta_2=self.beta_2,
            epsilon=self.epsilon,
            weight_decay_rate=self.weight_decay_rate,
            weight_decay_exclusions=list(self.weight_decay_exclusions),
            accumulation_steps=self.accumulation_steps,
        )
        return config

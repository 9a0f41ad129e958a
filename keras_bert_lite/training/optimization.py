"""`create_optimizer`: the BERT recipe's optimizer, `BertAdamW` or `BertLamb` (see `bert_optimizer` for what
they do to a batch of gradients), on a `WarmupLinearDecay` schedule."""

from keras_bert_lite.training.bert_adamw import BertAdamW
from keras_bert_lite.training.bert_lamb import BertLamb
from keras_bert_lite.training.schedules import WarmupLinearDecay
from keras_bert_lite.utils.bounds import check_argument

_OPTIMIZERS = {"adamw": BertAdamW, "lamb": BertLamb}


def create_optimizer(
    name="adamw",
    *,
    learning_rate,
    total_steps,
    warmup_steps=0,
    weight_decay=0.01,
    epsilon=1e-6,
    global_clipnorm=1.0,
    accumulation_steps=1,
):
    """The BERT optimizer: `BertAdamW` or `BertLamb` on a `WarmupLinearDecay` schedule.

    Args:
        name: "adamw" (google-research/bert) or "lamb".
        learning_rate: the peak learning rate.
        total_steps: optimizer updates over the whole training (the rate reaches 0 there). With
            accumulation, an update is `accumulation_steps` batches.
        warmup_steps: updates of linear warmup from 0.
        weight_decay: decoupled weight decay rate, not applied to LayerNorm and bias variables.
        epsilon: Adam/LAMB epsilon.
        global_clipnorm: gradient clipping by global norm before each update; None to disable.
        accumulation_steps: batches whose mean gradient makes one update (1: no accumulation).

    Returns:
        A `keras.optimizers.Optimizer`, ready for `model.compile`.

    Raises:
        ValueError: an unknown `name`, or a negative (or not finite) `learning_rate` or `weight_decay`.
    """
    check_argument("learning_rate", learning_rate, minimum=0)
    check_argument("weight_decay", weight_decay, minimum=0)
    try:
        cls = _OPTIMIZERS[name.lower()]
    except KeyError:
        raise ValueError(f"Unknown optimizer {name!r}; use one of {sorted(_OPTIMIZERS)}.") from None
    schedule = WarmupLinearDecay(learning_rate, total_steps=total_steps, warmup_steps=warmup_steps)
    return cls(
        learning_rate=schedule,
        weight_decay_rate=weight_decay,
        epsilon=epsilon,
        global_clipnorm=global_clipnorm,
        accumulation_steps=accumulation_steps,
    )

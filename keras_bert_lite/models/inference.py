"""inference_function: a model's forward pass for inference, with the batch split across the CPU's cores."""

import tensorflow as tf

from keras_bert_lite._cpu_kernels import usable_cores, visible_device_types
from keras_bert_lite.xla import use_xla


def inference_function(model, outputs=None, parts: int = None, jit_compile: bool | None = None, input_signature=None):
    """Returns a `tf.function` computing `model(inputs, training=False)`, faster on CPUs.

    TensorFlow runs each op on all cores (intra-op threads), which BERT's many small ops (softmax, LayerNorm,
    the attention's batch matmuls and head transposes) use poorly. Here the batch is cut into `parts` slices and
    the model runs on each: the slices' ops are independent, so TensorFlow's executor runs them at the same time
    (inter-op threads) and both cores stay busy. The outputs are concatenated back along the batch axis;
    sequences never interact, so they are exactly the outputs of one call on the whole batch. The default is two
    slices (`default_parts`): each slice adds per-op overhead, so more slices than it takes to keep the cores
    busy cost more than they gain.

    Args:
        model: a Keras model whose inputs (a tensor, or a dict/list of them) all have the batch as axis 0.
        outputs: for models with dict outputs, the key (or list of keys) to return; `None` returns everything.
            Ask only for what you use: every returned output costs one concatenation.
        parts: slices of the batch; default 2 where TensorFlow sees only CPUs and there are at least 2 cores,
            else 1 (a plain `model(inputs, training=False)`). A batch smaller than `parts` gives empty slices,
            which cost little.
        jit_compile: compile with XLA; default (None): on GPUs and TPUs, not on CPUs, where graph mode is
            faster (`keras_bert_lite.xla`).
        input_signature: passed to `tf.function` (e.g. `[None]` dimensions for one trace for every shape).

    Returns:
        `forward(inputs) -> outputs`, structured like the model's outputs (or the selected ones).
    """
    parts = _default_parts() if parts is None else parts
    if parts < 1:
        raise ValueError(f"parts must be >= 1, got {parts}.")

    def select(result):
        if outputs is None:
            return result
        if isinstance(outputs, str):
            return result[outputs]
        return {key: result[key] for key in outputs}

    def forward(inputs):
        if parts == 1:
            return select(model(inputs, training=False))
        batch = tf.shape(tf.nest.flatten(inputs)[0])[0]
        bounds = [batch * i // parts for i in range(parts + 1)]  # slice i: [bounds[i], bounds[i+1])
        results = [
            select(model(tf.nest.map_structure(lambda t, i=i: t[bounds[i] : bounds[i + 1]], inputs), training=False))
            for i in range(parts)
        ]
        return tf.nest.map_structure(lambda *slices: tf.concat(slices, axis=0), *results)

    # Graph code (Python branches only): traced without autograph, which would rewrite the source first.
    return tf.function(forward, jit_compile=use_xla(jit_compile), input_signature=input_signature, autograph=False)


def by_length_slices(model, inputs: dict, parts: int | None = None):
    """`model(inputs, training=False)` for a model with one output vector per sequence (`[b, ...]`: logits, an
    embedding), the batch sorted by length and cut into `parts` slices, each padded only to its own longest
    sequence; the slices run side by side (as in `inference_function`) and the outputs come back in input order.

    For a batch in no particular order (a served request) this saves the padding that a short text pays next to a
    long one. Graph code: call it inside a `tf.function` (an export signature).

    Args:
        model: a Keras model taking the three encoder inputs.
        inputs: `input_word_ids`, `input_mask`, `input_type_ids`, int32 `[b, s]`.
        parts: slices; default as `inference_function`'s.

    Returns:
        The model's output, `[b, ...]`.
    """
    parts = _default_parts() if parts is None else parts
    lengths = tf.reduce_sum(tf.cast(inputs["input_mask"], tf.int32), axis=1)  # [b]
    order = tf.argsort(lengths, stable=True)
    batch = tf.shape(order)[0]
    outputs = []
    for i in range(parts):
        rows = order[batch * i // parts : batch * (i + 1) // parts]
        width = tf.maximum(tf.reduce_max(tf.gather(lengths, rows)), 1)  # an empty slice gets width 1
        outputs.append(model({name: tf.gather(t, rows)[:, :width] for name, t in inputs.items()}, training=False))
    return tf.gather(tf.concat(outputs, axis=0), tf.argsort(order))


def default_parts(cores: int, device_types) -> int:
    """The batch slices `inference_function` makes by default: 2 on CPUs alone with at least 2 cores, else 1.

    Args:
        cores: the CPU cores this process may use.
        device_types: the types of the devices TensorFlow sees, e.g. `{"CPU"}` or `{"CPU", "GPU"}`.

    Returns:
        The number of slices.
    """
    return 2 if cores >= 2 and "GPU" not in device_types else 1


def _default_parts() -> int:
    return default_parts(usable_cores(), visible_device_types())


def dataset_predictor(model, jit_compile: bool | None = None):
    """`predict(dataset) -> list of per-batch outputs` (numpy, nested like the model's outputs), for a dataset
    of `(inputs, ...)` batches.

    Batches keep their own padded length (unlike `model.predict`, which concatenates them), so token-level
    outputs of dynamically padded batches stay usable. One `inference_function` trace serves every batch size
    and padded length.
    """
    steps = {}

    def predict(dataset):
        spec = dataset.element_spec[0]
        key = str(spec)
        if key not in steps:
            relaxed = tf.nest.map_structure(lambda s: tf.TensorSpec([None] * s.shape.rank, s.dtype), spec)
            steps[key] = inference_function(model, jit_compile=jit_compile, input_signature=[relaxed])
        return [tf.nest.map_structure(lambda t: t.numpy(), steps[key](x)) for x, *_ in dataset]

    return predict

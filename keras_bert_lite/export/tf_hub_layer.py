"""`HubLayer`: `hub.KerasLayer` for Keras 3.

`tensorflow_hub.KerasLayer` is a tf-keras (Keras 2) layer: called on a Keras 3 `keras.Input` it fails with
"A KerasTensor cannot be used as input to a TensorFlow function". `HubLayer` takes the same main arguments and
wraps a Reusable SavedModel (TF Hub's, or `export_tf_hub`'s) in a Keras 3 layer:

    preprocessing_layer = HubLayer(preprocess_path, name="preprocessing")
    encoder = HubLayer(encoder_path, trainable=True, name="BERT_encoder")

The SavedModel's `trainable_variables` become the layer's trainable weights when `trainable=True` (the
restored functions read those very tf.Variables, so `fit` fine-tunes them); its other `variables` are
non-trainable weights. `training` is passed on when the callable takes it, and only if the layer is trainable
(as hub.KerasLayer does). Inputs and outputs are dense tensors or dicts/lists of them (a Keras 3 functional
model cannot carry RaggedTensors, so use `tokenize`/`bert_pack_inputs` in a `tf.data` map, outside the model).
The layer is not serialisable to `.keras` (it holds a loaded SavedModel); save the model with `model.export`.
"""

from __future__ import annotations

import inspect
import os

import keras
import tensorflow as tf


def load_handle(handle):
    """A SavedModel directory (or, with tensorflow_hub installed, any handle `hub.load` takes) -> the loaded
    object; anything callable is returned as it is."""
    if callable(handle) and not isinstance(handle, (str, os.PathLike)):
        return handle
    path = os.fspath(handle)
    if os.path.isdir(path):
        return tf.saved_model.load(path)
    try:
        import tensorflow_hub as hub
    except ImportError:
        raise ValueError(
            f"HubLayer: {path} is no SavedModel directory; for a TF Hub handle or URL install tensorflow-hub."
        ) from None
    return hub.load(path)


class HubLayer(keras.layers.Layer):
    """Wraps a Reusable SavedModel (or a callable of one, e.g. `preprocessor.bert_pack_inputs`) as a layer.

    Args:
        handle: a SavedModel directory, a TF Hub handle (needs tensorflow-hub) or a loaded callable.
        trainable: whether `fit` trains the SavedModel's trainable variables.
        arguments: extra keyword arguments for every call (e.g. `dict(seq_length=64)`).
        output_key: return only this key of a dict output.
        **kwargs: `keras.layers.Layer` arguments (`name`, ...).
    """

    def __init__(
        self, handle, trainable: bool = False, arguments: dict | None = None, output_key: str | None = None, **kwargs
    ):
        super().__init__(trainable=trainable, **kwargs)
        self._func = load_handle(handle)
        if not callable(self._func):
            raise ValueError(f"HubLayer: {handle} has no __call__; it is not a Reusable SavedModel.")
        self._arguments = dict(arguments or {})
        self._output_key = output_key
        self._takes_training = _takes_training(self._func)
        trainable_ids = set()
        for variable in getattr(self._func, "trainable_variables", ()):
            trainable_ids.add(id(variable))
            self._track_existing(variable, trainable=True)
        for variable in getattr(self._func, "variables", ()):
            if id(variable) not in trainable_ids:
                self._track_existing(variable, trainable=False)
        self.built = True

    def _track_existing(self, variable, trainable: bool):
        # A Keras variable around the existing tf.Variable (keras.layers.TFSMLayer does the same).
        self._track_variable(
            keras.Variable(
                initializer=variable,
                trainable=trainable,
                dtype=variable.dtype,
                shape=variable.shape,
                name=variable.name.split(":")[0].replace("/", "_"),
            )
        )

    def __call__(self, inputs, *args, **kwargs):
        # hub.KerasLayer takes a plain list of strings or numbers (the TF Hub tutorials call it on one); a Keras 3
        # layer takes only tensors positionally.
        if (
            isinstance(inputs, (list, tuple))
            and inputs
            and all(isinstance(x, (str, bytes, int, float)) for x in inputs)
        ):
            inputs = tf.constant(inputs)
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs, training=None):
        kwargs = dict(self._arguments)
        if self._takes_training:
            kwargs["training"] = bool(training) and self.trainable
        outputs = self._func(inputs, **kwargs)
        return outputs[self._output_key] if self._output_key is not None else outputs


def _takes_training(func) -> bool:
    """Whether `func` (a tf.function, restored or not, or a plain callable) has a `training` argument."""
    function_type = getattr(getattr(func, "__call__", func), "function_type", None)
    if function_type is not None:
        return "training" in function_type.parameters
    try:
        return "training" in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False

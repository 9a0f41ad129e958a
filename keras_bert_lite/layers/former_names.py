"""The layers' former classes, `Dropout` and `LayerNorm` (renamed `Uint16MaskDropout` and `FusedLayerNorm`: they
shadowed Keras' names), kept for one release so that `.keras` files saved under them still load.

A `.keras` file records each layer's registered name ("keras_bert_lite>LayerNorm"), and addresses the weights of a
functional model's layers by their class name in snake case ("layers/layer_norm"), not by the layer's name: a
renamed class would find neither. These subclasses keep both. Nothing builds them but such a file; the former
names in code (`layers.LayerNorm`) give the new classes, with a DeprecationWarning.
"""

import keras

from keras_bert_lite.layers.dropout import Uint16MaskDropout
from keras_bert_lite.layers.layer_norm import FusedLayerNorm


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class Dropout(Uint16MaskDropout):
    """`Uint16MaskDropout` under its former name, for files saved with it."""


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class LayerNorm(FusedLayerNorm):
    """`FusedLayerNorm` under its former name, for files saved with it."""

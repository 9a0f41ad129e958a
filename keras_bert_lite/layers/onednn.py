"""Whether the graph being built runs TensorFlow's oneDNN CPU kernels: the layers that are written in the form
those kernels fuse best (LayerNorm, the attention scores) ask this, and fall back to the plain form elsewhere."""

import tensorflow as tf
from tensorflow.python.ops import control_flow_util

from keras_bert_lite._cpu_kernels import cpu_only, onednn_enabled


def onednn_graph() -> bool:
    """oneDNN on (`keras_bert_lite._cpu_kernels`), no GPU, and the graph not compiled by XLA (XLA fuses the
    plain forms itself, with its own kernels)."""
    in_xla = control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())
    return onednn_enabled() and not in_xla and cpu_only()

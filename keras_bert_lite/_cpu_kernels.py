"""TensorFlow's oneDNN CPU kernels, on by default in processes that import keras_bert_lite before TensorFlow.

TensorFlow turns its oneDNN kernels on by itself only on x86 CPUs with AVX-512-class features (its 2.9 release
notes; there every TensorFlow program, KerasHub's included, gets them); on others it runs Eigen kernels
(measured on an AVX2 AMD EPYC: unset behaves as `0`). There, oneDNN made fp32 `tf.matmul` 1.3x faster
(2048^3: 131 -> 177 GFLOP/s), a BERT-small fine-tuning step (graph mode, batch 32, lengths 24-64) 1.3-1.4x
faster and an MLM+NSP pretraining step 1.2-1.6x faster. XLA is not faster (XLA:CPU's matmuls are not
oneDNN's) and compiles every new padded length for 7-12 s where a graph retrace takes 1.5-7 s, so graph mode
with oneDNN stays the default (see bench/compare_peers.py).

TensorFlow reads `TF_ENABLE_ONEDNN_OPTS` once, when it is imported, so this module only sets it when TensorFlow
is not imported yet: the command-line tools, `python -m keras_bert_lite` and scripts that import
keras_bert_lite first get it; a script that imports tensorflow first keeps TensorFlow's own choice. A value
the user set (`TF_ENABLE_ONEDNN_OPTS=0` to opt out) is always kept.
"""

import functools
import os
import sys

if "tensorflow" not in sys.modules:
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")


@functools.cache
def onednn_enabled() -> bool:
    """Whether this process runs TensorFlow's oneDNN kernels: TensorFlow's own answer (the variable and the CPU's
    features, as read when it was imported); False if it cannot be asked."""
    try:
        from tensorflow.python.util import _pywrap_util_port
    except ImportError:
        return False
    return bool(_pywrap_util_port.IsMklEnabled())


def cpu_only() -> bool:
    """Whether TensorFlow sees no GPU: where the layers' CPU-kernel forms (LayerNorm, Dropout) are used."""
    import tensorflow as tf
    return not tf.config.list_logical_devices("GPU")

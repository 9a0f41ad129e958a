"""TensorFlow's oneDNN CPU kernels, on by default in processes that import keras_bert_lite before TensorFlow.

TensorFlow turns its oneDNN kernels on by itself only on x86 CPUs with AVX-512-class features (its 2.9 release
notes; there every TensorFlow program, KerasHub's included, gets them); on others (AVX2 CPUs, where unset
behaves as `0`) it runs Eigen kernels, which are slower for BERT's fp32 matmuls and training steps. XLA is no
substitute on CPUs (XLA:CPU's matmuls are not oneDNN's, and it compiles every new padded length anew), so graph
mode with oneDNN stays the CPU default. Whether oneDNN is on in a process: `utils.tf_internals.onednn_enabled`.

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


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask where the OS has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def visible_device_types() -> frozenset:
    """The types of the devices TensorFlow sees: `{"CPU"}`, `{"CPU", "GPU"}`, ..."""
    import tensorflow as tf

    return frozenset(device.device_type for device in tf.config.list_logical_devices())


def cpu_only() -> bool:
    """Whether TensorFlow sees no GPU: where the layers' CPU-kernel forms (LayerNorm, Dropout, the attention
    scores) are used."""
    return "GPU" not in visible_device_types()


@functools.cache
def cpu_flags() -> frozenset:
    """The CPU's feature flags as /proc/cpuinfo lists them (Linux); empty where it cannot be read."""
    try:
        with open("/proc/cpuinfo") as f:
            line = next((line for line in f if line.split(":", 1)[0].strip() == "flags"), "")
    except OSError:
        return frozenset()
    return frozenset(line.split(":", 1)[-1].split())


def matmul_post_ops_take_a_pass() -> bool:
    """Whether oneDNN adds a float32 matmul's fused post-ops (a scale, a broadcast add) in a second pass over its
    output: on x86 CPUs with AVX2 but not AVX-512, where it runs its gemm-based matmul (`ONEDNN_VERBOSE=1` shows
    `gemm:jit:f32` with the post-ops). With AVX-512 (avx512_core) its brgemm kernels apply them as they store the
    output. False where the flags cannot be read."""
    return "avx2" in cpu_flags() and not {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= cpu_flags()

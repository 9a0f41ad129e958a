"""Whether the library XLA-compiles when the caller does not say: on accelerators yes, on CPUs no.

The rule is Keras' own for `compile(jit_compile="auto")` on TensorFlow, applied to the library's other entry
points (`inference_function`, the pretraining `Trainer`, `kbl-pretrain` and `kbl-glue`'s `--xla`), which
would otherwise default to graph mode everywhere. On GPUs XLA fuses BERT's element-wise work into few kernels;
on CPUs graph mode runs the matmuls on oneDNN (XLA:CPU's matmuls are not oneDNN's) and does not recompile for
every new padded length. bench/README.md has the measurements behind the rule (`bench/compare_peers.py`).
"""

from keras_bert_lite._cpu_kernels import cpu_only


def use_xla(requested: bool | None = None) -> bool:
    """`requested` when given; otherwise True where TensorFlow sees a GPU (or runs on TPUs, which compile
    everything with XLA anyway) and False on CPU-only machines."""
    return (not cpu_only()) if requested is None else bool(requested)

"""Whether the library XLA-compiles when the caller does not say: on accelerators yes, on CPUs no.

The rule is Keras' own for `compile(jit_compile="auto")` on TensorFlow, applied to the library's other entry
points (`inference_function`, the pretraining `Trainer`, `kbl-pretrain` and `kbl-glue`'s `--xla`), which
would otherwise default to graph mode everywhere. Measured with `bench/compare_peers.py`, XLA over graph mode:
- NVIDIA H100, bfloat16, batch 32 x 128 (2026-11-26): forward 4.2x (tiny), 3.6x (mini), 3.6x (small), 3.6x
  (base); MLM+NSP training step 2.9x (tiny), 2.8x (small).
- 2-core Xeon, float32, oneDNN (2026-11-26, medians of three rounds): graph mode is the faster one: forward
  1.18x (tiny), 1.19x (mini), 1.07x (small), 1.22x (base) over XLA; training step 1.6x (tiny), 1.2x (mini,
  small). XLA:CPU's matmuls are not oneDNN's.
"""

from keras_bert_lite._cpu_kernels import cpu_only


def use_xla(requested: bool | None = None) -> bool:
    """`requested` when given; otherwise True where TensorFlow sees a GPU (or runs on TPUs, which compile
    everything with XLA anyway) and False on CPU-only machines."""
    return (not cpu_only()) if requested is None else bool(requested)

"""Whether the library XLA-compiles when the caller does not say: on accelerators yes, on CPUs no.

The rule is Keras' own for `compile(jit_compile="auto")` on TensorFlow, applied to the library's other entry
points (`inference_function`, the pretraining `Trainer`, `kbl-pretrain` and `kbl-glue`'s `--xla`), which
would otherwise default to graph mode everywhere. On GPUs XLA fuses BERT's element-wise work into few kernels;
on CPUs graph mode runs the matmuls on oneDNN (XLA:CPU's matmuls are not oneDNN's) and does not recompile for
every new padded length. bench/README.md has the measurements behind the rule (`bench/compare_peers.py`).

On a GPU, compiling a training step takes minutes at BERT-large (bench/gpu/README.md); `configure_gpu_compiles`
makes those compiles parallel and remembers their autotuning.
"""

import os

from keras_bert_lite._cpu_kernels import cpu_only
from keras_bert_lite.utils.files import cache_dir

AUTOTUNE_CACHE = "xla_gpu_autotune"     # the cache folder (utils.files.cache_dir) of XLA:GPU's autotuning results


def use_xla(requested: bool | None = None) -> bool:
    """`requested` when given; otherwise True where TensorFlow sees a GPU (or runs on TPUs, which compile
    everything with XLA anyway) and False on CPU-only machines."""
    return (not cpu_only()) if requested is None else bool(requested)


def gpu_compile_flags(xla_flags: str, autotune_dir: str, threads: int) -> str:
    """`xla_flags` (an XLA_FLAGS value) with the library's XLA:GPU compile settings added, each one only where
    `xla_flags` does not set it already.

    - `--xla_gpu_enable_llvm_module_compilation_parallelism`, `--xla_gpu_force_compilation_parallelism`:
      TensorFlow's jit path gives XLA no compile thread pool (`device_compiler_client.cc` sets none), so XLA:GPU
      turns a step's LLVM module into PTX and machine code on one thread; these split it over `threads`.
    - `--xla_gpu_per_fusion_autotune_cache_dir`: before it compiles a step, XLA times candidate kernels for every
      matmul fusion; kept in `autotune_dir`, the results serve a resumed run, the next seed and the next command
      with the same shapes on the same kind of GPU.

    Both change how long a compile takes, not the program it makes. XLA:CPU ignores them.
    """
    ours = {"xla_gpu_enable_llvm_module_compilation_parallelism": "true",
            "xla_gpu_force_compilation_parallelism": str(threads),
            "xla_gpu_per_fusion_autotune_cache_dir": autotune_dir}
    given = {flag.lstrip("-").split("=")[0] for flag in xla_flags.split()}
    added = [f"--{name}={value}" for name, value in ours.items() if name not in given]
    return " ".join([xla_flags.strip(), *added]).strip()


def configure_gpu_compiles() -> None:
    """Where TensorFlow sees a GPU, adds `gpu_compile_flags` to XLA_FLAGS (the autotuning in the library's cache
    folder `AUTOTUNE_CACHE`). The training commands call it before their first compile: XLA reads XLA_FLAGS once,
    when a process first compiles, and ignores later changes."""
    if cpu_only():
        return
    threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    os.environ["XLA_FLAGS"] = gpu_compile_flags(os.environ.get("XLA_FLAGS", ""), cache_dir(AUTOTUNE_CACHE), threads)

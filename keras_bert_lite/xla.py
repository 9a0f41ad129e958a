"""Whether the library XLA-compiles when the caller does not say: on accelerators yes, on CPUs no.

The rule is Keras' own for `compile(jit_compile="auto")` on TensorFlow, applied to the library's other entry
points (`inference_function`, the pretraining `Trainer`, `kbl-pretrain` and `kbl-glue`'s `--xla`), which
would otherwise default to graph mode everywhere. On GPUs XLA fuses BERT's element-wise work into few kernels;
on CPUs graph mode runs the matmuls on oneDNN (XLA:CPU's matmuls are not oneDNN's) and does not recompile for
every new padded length.

On a GPU, compiling a large model's training step can take minutes; `configure_gpu_compiles` makes those
compiles parallel and keeps their autotuning for later runs.
"""

import os
import shlex

from keras_bert_lite._cpu_kernels import usable_cores, visible_device_types
from keras_bert_lite.utils.files import cache_dir, writable_dir

AUTOTUNE_CACHE = "xla_gpu_autotune"  # the cache folder (utils.files.cache_dir) of XLA:GPU's autotuning results


def xla_by_default(device_types) -> bool:
    """Whether the library XLA-compiles, where the caller does not say, on a machine with these devices.

    Args:
        device_types: the types of the devices TensorFlow sees, e.g. `{"CPU"}` or `{"CPU", "GPU"}`.

    Returns:
        True with a GPU among them, False otherwise (TPUs compile everything with XLA whatever is asked).
    """
    return "GPU" in device_types


def use_xla(requested: bool | None = None) -> bool:
    """`requested` when given; otherwise `xla_by_default` for the devices TensorFlow sees."""
    return xla_by_default(visible_device_types()) if requested is None else bool(requested)


def gpu_compile_flags(xla_flags: str, autotune_dir: str | None, threads: int) -> str:
    """Adds the library's XLA:GPU compile settings to an XLA_FLAGS value, each one only where it is not set yet.

    - `--xla_gpu_enable_llvm_module_compilation_parallelism`, `--xla_gpu_force_compilation_parallelism`:
      TensorFlow's jit path gives XLA no compile thread pool (`device_compiler_client.cc` sets none), so XLA:GPU
      turns a step's LLVM module into PTX and machine code on one thread; these split it over `threads`.
    - `--xla_gpu_per_fusion_autotune_cache_dir`: before it compiles a step, XLA times candidate kernels for each
      matmul fusion. Kept in `autotune_dir`, the results serve a resumed run and the next command with the same
      shapes on the same kind of GPU (within one process XLA already remembers them).

    They are meant to shorten compiles; XLA:CPU ignores them.

    Args:
        xla_flags: the current XLA_FLAGS value (may be empty); its entries are kept and win.
        autotune_dir: the autotune cache folder, or None for no cache.
        threads: the compile threads.

    Returns:
        The new XLA_FLAGS value.
    """
    ours = {
        "xla_gpu_enable_llvm_module_compilation_parallelism": "true",
        "xla_gpu_force_compilation_parallelism": str(threads),
    }
    if autotune_dir:
        ours["xla_gpu_per_fusion_autotune_cache_dir"] = f'"{autotune_dir}"' if " " in autotune_dir else autotune_dir
    given = {flag.lstrip("-").split("=")[0] for flag in shlex.split(xla_flags)}
    added = [f"--{name}={value}" for name, value in ours.items() if name not in given]
    return " ".join([xla_flags.strip(), *added]).strip()


def configure_gpu_compiles() -> None:
    """Where TensorFlow sees a GPU, adds `gpu_compile_flags` to XLA_FLAGS, with the autotune cache in the
    library's cache folder `AUTOTUNE_CACHE`, left out when it is not writable: XLA fails a compile whose autotune
    cache it cannot write.

    The training commands call it before their first compile: XLA reads XLA_FLAGS when a process first compiles,
    and ignores later changes. A user's own XLA_FLAGS entries win.
    """
    if "GPU" not in visible_device_types():
        return
    os.environ["XLA_FLAGS"] = gpu_compile_flags(
        os.environ.get("XLA_FLAGS", ""), writable_dir(cache_dir(AUTOTUNE_CACHE)), usable_cores()
    )

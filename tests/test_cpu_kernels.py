"""keras_bert_lite turns TensorFlow's oneDNN kernels on when imported first, and never overrides the user."""

import os
import subprocess
import sys

import pytest

PROBE = """
import os
from keras_bert_lite.utils.tf_internals import onednn_enabled
print(os.environ.get("TF_ENABLE_ONEDNN_OPTS"), onednn_enabled())
"""


def probe(first_import: str, env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    if env_value is not None:
        env["TF_ENABLE_ONEDNN_OPTS"] = env_value
    result = subprocess.run(
        [sys.executable, "-c", first_import + PROBE], env=env, capture_output=True, text=True, timeout=300, check=True
    )
    return result.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "first_import, env_value, expected",
    [
        ("import keras_bert_lite", None, ("1", "True")),  # the library's default: on
        ("import keras_bert_lite", "0", ("0", "False")),  # the user's opt-out is kept
        # Too late to change: the variable stays unset and TensorFlow's own per-CPU choice stands (not asserted:
        # it is on for AVX-512-class CPUs, off elsewhere).
        ("import tensorflow; import keras_bert_lite", None, ("None", None)),
    ],
)
def test_onednn_default(first_import, env_value, expected):
    value, enabled = probe(first_import, env_value).split()
    assert value == expected[0]
    if expected[1] is not None:
        assert enabled == expected[1]


AVX512_CORE = {"avx512f", "avx512bw", "avx512vl", "avx512dq"}


@pytest.mark.parametrize(
    "flags, expected",
    [
        ({"sse2", "avx", "avx2", "fma"}, True),  # gemm-based f32 matmul: post-ops in a second pass
        ({"avx2", "fma"} | AVX512_CORE, False),  # brgemm: post-ops as the output is stored
        ({"avx2", "avx512f"}, True),  # Xeon Phi: AVX-512 without avx512_core, no brgemm
        (set(), False),  # flags unknown (no /proc/cpuinfo, other CPUs)
    ],
)
def test_matmul_post_ops_take_a_pass_on_avx2_cpus_only(flags, expected, monkeypatch):
    from keras_bert_lite import _cpu_kernels

    monkeypatch.setattr(_cpu_kernels, "cpu_flags", lambda: frozenset(flags))
    assert _cpu_kernels.matmul_post_ops_take_a_pass() is expected


@pytest.mark.skipif(not os.path.exists("/proc/cpuinfo"), reason="reads /proc/cpuinfo")
def test_cpu_flags_are_this_machines():
    from keras_bert_lite._cpu_kernels import cpu_flags

    with open("/proc/cpuinfo") as f:
        line = next(line for line in f if line.startswith("flags"))
    assert cpu_flags() == frozenset(line.split(":", 1)[1].split())

"""keras_bert_lite turns TensorFlow's oneDNN kernels on when imported first, and never overrides the user."""

import os
import subprocess
import sys

import pytest

PROBE = """
import os
from tensorflow.python.util import _pywrap_util_port
print(os.environ.get("TF_ENABLE_ONEDNN_OPTS"), _pywrap_util_port.IsMklEnabled())
"""


def probe(first_import: str, env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    if env_value is not None:
        env["TF_ENABLE_ONEDNN_OPTS"] = env_value
    result = subprocess.run([sys.executable, "-c", first_import + PROBE], env=env, capture_output=True, text=True,
                            timeout=300, check=True)
    return result.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("first_import, env_value, expected", [
    ("import keras_bert_lite", None, ("1", "True")),     # the library's default: on
    ("import keras_bert_lite", "0", ("0", "False")),     # the user's opt-out is kept
    # Too late to change: the variable stays unset and TensorFlow's own per-CPU choice stands (not asserted:
    # it is on for AVX-512-class CPUs, off elsewhere).
    ("import tensorflow; import keras_bert_lite", None, ("None", None)),
])
def test_onednn_default(first_import, env_value, expected):
    value, enabled = probe(first_import, env_value).split()
    assert value == expected[0]
    if expected[1] is not None:
        assert enabled == expected[1]

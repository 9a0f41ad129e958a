"""Every use of TensorFlow's private API in keras_bert_lite, behind one version guard with a public fallback.

A few CPU fast paths rely on what TensorFlow does not promise to keep:

- private functions: whether the oneDNN kernels are on (`_pywrap_util_port.IsMklEnabled`), whether the graph
  being built is compiled by XLA (`control_flow_util.GraphOrParentsInXlaContext`), the registry of every op
  (`pywrap_tf_session.TF_GetAllOpList`);
- Grappler's oneDNN rewrites: which subgraphs its remapper fuses into one kernel (the LayerNorm and attention
  forms in `keras_bert_lite.layers` are written to match them);
- the order Grappler gives an op's inputs (sorted by node name), which decides whether a matmul's post-ops fuse.

`fast_paths_available()` checks once per process that TensorFlow's version is within `TESTED_VERSIONS` and
that the private functions are present. Where either fails, every function here gives its public-API answer:
no oneDNN forms (the layers run Keras' own implementations, with the same results), plain name scopes, and
the ops `tf.raw_ops` lists. A TensorFlow upgrade can then make the layers slower, never wrong.
"""

import functools

import tensorflow as tf
from tensorflow.core.framework import op_def_pb2

from keras_bert_lite._cpu_kernels import cpu_only

try:
    from tensorflow.python.client import pywrap_tf_session
    from tensorflow.python.ops import control_flow_util
    from tensorflow.python.util import _pywrap_util_port
except ImportError:
    pywrap_tf_session = control_flow_util = _pywrap_util_port = None

# The oldest and newest TensorFlow (major, minor) versions on which the fast paths are tested: the version the
# package pins. Widen it where tests/layers' fused-kernel tests and tests/test_tf_internals.py pass.
TESTED_VERSIONS = ((2, 21), (2, 21))


def version_tested(version: str) -> bool:
    """Whether a TensorFlow version string (`"2.21.0"`, `"2.22.0rc1"`) is within `TESTED_VERSIONS`.

    Args:
        version: the version, as `tf.__version__` gives it.

    Returns:
        True inside the tested range; False outside it or where the version cannot be read.
    """
    try:
        major_minor = tuple(int(part) for part in version.split(".")[:2])
    except ValueError:
        return False
    return len(major_minor) == 2 and TESTED_VERSIONS[0] <= major_minor <= TESTED_VERSIONS[1]


@functools.cache
def fast_paths_available() -> bool:
    """Whether this TensorFlow is a tested version and has every private function the fast paths call."""
    private = (
        (_pywrap_util_port, "IsMklEnabled"),
        (control_flow_util, "GraphOrParentsInXlaContext"),
        (pywrap_tf_session, "TF_GetAllOpList"),
        (pywrap_tf_session, "TF_GetBuffer"),
    )
    present = all(callable(getattr(module, name, None)) for module, name in private)
    return version_tested(tf.__version__) and present


@functools.cache
def onednn_enabled() -> bool:
    """Whether this process runs TensorFlow's oneDNN CPU kernels, as TensorFlow decided when it was imported
    (`TF_ENABLE_ONEDNN_OPTS` and the CPU's features). False where `fast_paths_available()` is not."""
    return fast_paths_available() and bool(_pywrap_util_port.IsMklEnabled())


def in_xla_context() -> bool:
    """Whether the graph being built is compiled by XLA. True where `fast_paths_available()` is not, so that
    callers choose the form that needs no oneDNN rewrite."""
    if not fast_paths_available():
        return True
    return bool(control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph()))


def onednn_graph() -> bool:
    """Whether the graph being built runs on oneDNN's CPU kernels: oneDNN on, no GPU, not compiled by XLA (which
    fuses the plain forms itself). The layers written for oneDNN's fusions (LayerNorm, the attention scores)
    use those forms only where this holds, and Keras' plain forms elsewhere."""
    return onednn_enabled() and cpu_only() and not in_xla_context()


def name_scope_sorted_last(name: str):
    """A context manager that names the ops built inside it so that they sort after every other op's name.

    Grappler orders a commutative op's inputs by node name, and oneDNN fuses an Add into the matmul before it
    only where the matmul's result comes first. Ops shared by every layer (one node after Grappler merges the
    copies) are named under an absolute top-level `zz_` scope for that. Where `fast_paths_available()` is not,
    the scope is an ordinary one, relative to the caller's.

    Args:
        name: the scope's name.

    Returns:
        The name scope.
    """
    if fast_paths_available():
        return tf.compat.v1.name_scope(f"zz_{name}/")  # an absolute scope
    return tf.name_scope(name)


def registered_op_names() -> list[str]:
    """Every op registered in this process, sorted: TensorFlow's op registry where `fast_paths_available()`,
    else the ops with a `tf.raw_ops` function (all but TensorFlow's hidden test, TPU and internal ops)."""
    if not fast_paths_available():
        return sorted(name for name in dir(tf.raw_ops) if not name.startswith("_"))
    buffer = pywrap_tf_session.TF_GetBuffer(pywrap_tf_session.TF_GetAllOpList())
    return sorted(op.name for op in op_def_pb2.OpList.FromString(bytes(buffer)).op)

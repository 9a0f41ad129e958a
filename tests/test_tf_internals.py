"""utils.tf_internals: the version guard picks the public fallback where a private function is missing or the
TensorFlow version is untested, and the fallback computes what the oneDNN fast paths compute."""

import types

import numpy as np
import pytest
import tensorflow as tf

import keras_bert_lite.layers.attention as attention_module
from keras_bert_lite.layers import TransformerEncoderBlock
from keras_bert_lite.utils import tf_internals

H = 16
rng = np.random.default_rng(3)
X = tf.constant(rng.normal(size=(3, 6, H)).astype("float32"))
MASK = tf.constant([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1], [1, 1, 0, 0, 0, 0]], tf.int32)


@pytest.fixture(autouse=True)
def fresh_guard():
    """The guard's cached answers cleared before and after each test (after monkeypatch has undone its
    changes: this fixture is set up first, so torn down last)."""
    tf_internals.fast_paths_available.cache_clear()
    tf_internals.onednn_enabled.cache_clear()
    yield
    tf_internals.fast_paths_available.cache_clear()
    tf_internals.onednn_enabled.cache_clear()


def force_fast_paths(monkeypatch):
    """As on a CPU with oneDNN on, whatever this machine is."""
    monkeypatch.setattr(tf_internals, "onednn_enabled", lambda: True)
    monkeypatch.setattr(tf_internals, "cpu_only", lambda: True)


def force_fallback(monkeypatch):
    """As on a TensorFlow without the private module (the guard's ImportError branch)."""
    monkeypatch.setattr(tf_internals, "_pywrap_util_port", None)
    tf_internals.fast_paths_available.cache_clear()
    tf_internals.onednn_enabled.cache_clear()


@pytest.mark.parametrize(
    "version, tested",
    [
        ("2.21.0", True),
        ("2.21.3", True),
        ("2.21.0rc1", True),
        ("2.20.0", False),
        ("2.22.0", False),
        ("3.0.0", False),
        ("2", False),
        ("", False),
        ("unknown", False),
    ],
)
def test_version_tested(version, tested):
    assert tf_internals.version_tested(version) is tested


@pytest.mark.parametrize(
    "missing",
    [
        lambda m: m.setattr(tf_internals, "_pywrap_util_port", None),  # module absent
        lambda m: m.setattr(tf_internals, "_pywrap_util_port", types.SimpleNamespace()),  # function absent
        lambda m: m.setattr(tf_internals, "control_flow_util", types.SimpleNamespace()),
        lambda m: m.setattr(tf_internals, "pywrap_tf_session", None),
        lambda m: m.setattr(tf_internals.tf, "__version__", "2.99.0"),  # an untested version
    ],
    ids=["module", "onednn_query", "xla_query", "op_registry", "version"],
)
def test_the_guard_picks_the_fallback(missing, monkeypatch):
    missing(monkeypatch)
    assert tf_internals.fast_paths_available() is False
    assert tf_internals.onednn_enabled() is False and tf_internals.onednn_graph() is False
    assert tf_internals.in_xla_context() is True
    ops = tf_internals.registered_op_names()
    assert {"MatMul", "FusedBatchNormV3", "StatefulPartitionedCall"} <= set(ops) and ops == sorted(ops)


def test_the_fallback_op_list_is_within_the_registry(monkeypatch):
    registry = set(tf_internals.registered_op_names())
    force_fallback(monkeypatch)
    assert set(tf_internals.registered_op_names()) <= registry


def block_graph(block):
    """`(outputs, op types, op names)` of the block's inference graph on X, MASK, traced now."""
    function = tf.function(lambda x, m: block(x, m, training=False))
    graph = function.get_concrete_function(X, MASK).graph
    return (
        function(X, MASK).numpy(),
        {op.type for op in graph.get_operations()},
        [op.name for op in graph.get_operations()],
    )


@pytest.mark.parametrize("penalty_in_matmul", [True, False], ids=["penalty_in_matmul", "plain"])
def test_the_fallback_computes_what_the_fast_paths_compute(penalty_in_matmul, monkeypatch):
    """An encoder block (its LayerNorms and attention scores have oneDNN forms) gives the same outputs on the
    fast paths and on the fallback, and each run took the path it was meant to."""
    monkeypatch.setattr(attention_module, "matmul_post_ops_take_a_pass", lambda: penalty_in_matmul)
    block = TransformerEncoderBlock(H, 4, 32, hidden_dropout=0.0, attention_dropout=0.0)
    block(X, MASK)
    block.set_weights([rng.normal(scale=0.5, size=w.shape).astype("float32") for w in block.get_weights()])
    with monkeypatch.context() as patch:
        force_fast_paths(patch)
        fast, fast_ops, fast_names = block_graph(block)
    force_fallback(monkeypatch)
    slow, slow_ops, slow_names = block_graph(block)
    assert "FusedBatchNormV3" in fast_ops and "FusedBatchNormV3" not in slow_ops
    assert not any(name.startswith("zz_") for name in slow_names)
    assert any(name.startswith("zz_") for name in fast_names) is (not penalty_in_matmul)
    np.testing.assert_allclose(slow, fast, atol=1e-5, rtol=0)

"""The attention scores in both forms are the paper's softmax(q·kᵀ/√d + penalty)·V: the padding penalty as one
more feature of q and k inside the score matmul (oneDNN on AVX2), and the plain form (elsewhere), which oneDNN
fuses into the score matmul in every layer."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_lite.layers.attention as attention_module
from keras_bert_lite import BertConfig, build_encoder
from keras_bert_lite._cpu_kernels import cpu_only
from keras_bert_lite.layers import MultiHeadSelfAttention
from keras_bert_lite.utils.tf_internals import onednn_enabled
from tests.layers.grappler import optimized_graph

rng = np.random.default_rng(1)
H, HEADS = 16, 4
X = rng.normal(size=(4, 6, H)).astype("float32")
MASK = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1], [1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]], "int32")
POSITIONS = np.array([[0, 3, 5], [5, 1, 1], [0, 2, 4], [1, 0, 3]], "int32")
TOLERANCE = {"float32": 1e-5, "mixed_bfloat16": 3e-2, "mixed_float16": 3e-3}

needs_onednn = pytest.mark.skipif(not (onednn_enabled() and cpu_only()), reason="oneDNN CPU kernels only")


def reference(layer, x, mask):
    """The paper's attention in float64 numpy from the layer's weights: [b, s, H] -> [b, s, H]."""
    kernel, bias, out_kernel, out_bias = (w.astype("float64") for w in layer.get_weights())
    b, s, _ = x.shape
    heads = (x.astype("float64") @ kernel + bias).reshape(b, s, 3, HEADS, H // HEADS).transpose(2, 0, 3, 1, 4)
    q, k, v = heads  # [b, N, s, d] each
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(H // HEADS) + (1.0 - mask[:, None, None, :]) * -1e9
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, H)
    return context @ out_kernel + out_bias


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16", "mixed_float16"])
@pytest.mark.parametrize("penalty_in_matmul", [True, False], ids=["penalty_in_matmul", "plain"])
def test_both_forms_are_the_papers_attention(penalty_in_matmul, policy, monkeypatch):
    monkeypatch.setattr(attention_module, "onednn_graph", lambda: True)
    monkeypatch.setattr(attention_module, "matmul_post_ops_take_a_pass", lambda: penalty_in_matmul)
    keras.mixed_precision.set_global_policy(policy)
    layer = MultiHeadSelfAttention(H, HEADS, dropout=0.0)
    layer.build((None, None, H))
    # Weights of scale 0.5, not BERT's initial 0.02: scores of a few units, so that the softmax weights differ.
    layer.set_weights([rng.normal(scale=0.5, size=w.shape).astype("float32") for w in layer.get_weights()])
    out = np.asarray(layer(X, MASK), "float32")
    expected = reference(layer, X, MASK)
    real = MASK.any(axis=1)  # an all-padding row only has to be finite: its weights are arbitrary
    atol = TOLERANCE[policy] * np.abs(expected).max()
    np.testing.assert_allclose(out[real], expected[real], atol=atol, rtol=0)
    assert np.isfinite(out).all()  # float16 too: its penalty is finite there
    rows = np.asarray(layer(X, MASK, query_positions=POSITIONS), "float32")
    np.testing.assert_allclose(
        rows[real], np.take_along_axis(expected, POSITIONS[..., None], 1)[real], atol=atol, rtol=0
    )


def score_matmuls(encoder, inputs):
    """The op that computes each layer's scores: what feeds its softmax, through Identity and Cast nodes."""
    graph = optimized_graph(tf.function(lambda x: encoder(x, training=False)["sequence_output"]), inputs)
    nodes = {node.name: node for node in graph.node}
    found = []
    for softmax in (node for node in graph.node if node.op.endswith("Softmax")):
        node = nodes[softmax.input[0].split(":")[0]]
        while node.op in ("Identity", "Cast"):
            node = nodes[node.input[0].split(":")[0]]
        found.append(node)
    return found


@needs_onednn
@pytest.mark.parametrize("penalty_in_matmul", [True, False], ids=["penalty_in_matmul", "plain"])
def test_the_score_matmul_feeds_the_softmax_in_every_layer(penalty_in_matmul, monkeypatch):
    # In the plain form oneDNN fuses the scaling and the penalty add into the matmul in all 12 layers (with the
    # penalty named inside a layer's scope, Grappler's input order fused only layers whose names sorted before
    # it: 3 of BERT-base's 12). With the penalty in the matmul, nothing is left to fuse.
    monkeypatch.setattr(attention_module, "matmul_post_ops_take_a_pass", lambda: penalty_in_matmul)
    config = BertConfig(
        vocab_size=50, hidden_size=16, num_layers=12, num_heads=2, intermediate_size=32, max_position_embeddings=8
    )
    inputs = {
        "input_word_ids": tf.constant(rng.integers(0, 50, (4, 6)), tf.int32),
        "input_mask": tf.constant(MASK),
        "input_type_ids": tf.zeros((4, 6), tf.int32),
    }
    matmuls = score_matmuls(build_encoder(config), inputs)
    assert len(matmuls) == config.num_layers
    expected = {"BatchMatMulV2", "BatchMatMulV3"} if penalty_in_matmul else {"_MklFusedBatchMatMulV2"}
    assert {node.op for node in matmuls} <= expected

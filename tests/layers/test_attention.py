"""The two attention layouts compute the same thing, and oneDNN fuses the score scaling and mask in every layer."""

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.eager import context

from keras_bert_lite import BertConfig, build_encoder
from keras_bert_lite._cpu_kernels import cpu_only, onednn_enabled
from keras_bert_lite.layers import MultiHeadSelfAttention, attention as attention_module

rng = np.random.default_rng(1)
X = rng.normal(size=(3, 6, 16)).astype("float32")
MASK = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1], [1, 0, 0, 0, 0, 0]], "int32")
POSITIONS = np.array([[0, 3, 5], [2, 2, 1], [0, 4, 0]], "int32")

needs_onednn = pytest.mark.skipif(not (onednn_enabled() and cpu_only()), reason="oneDNN CPU kernels only")


def _outputs_and_gradients(layer, **kwargs):
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = tf.function(lambda x: layer(x, MASK, **kwargs))(x)
        loss = tf.reduce_sum(out * np.linspace(-1, 1, out.shape[-1]).astype("float32"))
    grads = tape.gradient(loss, [x] + layer.trainable_weights)
    return [out.numpy()] + [g.numpy() for g in grads]


@needs_onednn
@pytest.mark.parametrize("heads", [1, 2])
@pytest.mark.parametrize("with_positions", [False, True])
def test_each_head_chain_matches_head_major(monkeypatch, heads, with_positions):
    layer = MultiHeadSelfAttention(16, heads, dropout=0.0)
    layer.build()
    kwargs = {"query_positions": POSITIONS} if with_positions else {}
    assert attention_module._each_head_is_faster(heads)
    each_head = _outputs_and_gradients(layer, **kwargs)
    monkeypatch.setattr(attention_module, "_EACH_HEAD_MAX_HEADS", 0)
    assert not attention_module._each_head_is_faster(heads)
    head_major = _outputs_and_gradients(layer, **kwargs)
    for a, b in zip(each_head, head_major):       # output, d/dx, then every weight's gradient
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@needs_onednn
@pytest.mark.parametrize("heads", [2, 4])
def test_scores_scale_and_mask_fuse_into_the_matmul_in_every_layer(heads):
    # 12 layers: with the mask penalty named inside a layer's scope, Grappler's input order made oneDNN fuse
    # only layers whose names sorted before that node's (3 of 12 in BERT-base).
    config = BertConfig(vocab_size=50, hidden_size=16, num_layers=12, num_heads=heads, intermediate_size=32,
                        max_position_embeddings=8)
    encoder = build_encoder(config)
    inputs = {"input_word_ids": tf.constant(rng.integers(0, 50, (3, 6)), tf.int32),
              "input_mask": tf.constant(MASK), "input_type_ids": tf.zeros((3, 6), tf.int32)}
    forward = tf.function(lambda x: encoder(x, training=False)["sequence_output"])
    context.context().enable_run_metadata()
    try:
        forward(inputs)
        metadata = context.context().export_run_metadata()
    finally:
        context.context().disable_run_metadata()
    graph = max((f.post_optimization_graph for f in metadata.function_graphs), key=lambda g: len(g.node))
    fused = [node for node in graph.node if node.op == "_MklFusedBatchMatMulV2"]
    assert len(fused) == config.num_layers * (heads if attention_module._each_head_is_faster(heads) else 1)
    assert not [node.name for node in graph.node if node.op == "Mul" and "/attention" in node.name]  # the scaling

"""oneDNN fuses the attention scores' scaling and mask into the score matmul in every layer."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite import BertConfig, build_encoder
from keras_bert_lite._cpu_kernels import cpu_only, onednn_enabled
from tests.layers.grappler import optimized_graph

rng = np.random.default_rng(1)
MASK = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1], [1, 0, 0, 0, 0, 0]], "int32")

needs_onednn = pytest.mark.skipif(not (onednn_enabled() and cpu_only()), reason="oneDNN CPU kernels only")


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
    graph = optimized_graph(tf.function(lambda x: encoder(x, training=False)["sequence_output"]), inputs)
    fused = [node for node in graph.node if node.op == "_MklFusedBatchMatMulV2"]
    assert len(fused) == config.num_layers
    assert not [node.name for node in graph.node if node.op == "Mul" and "/attention" in node.name]  # the scaling

"""BertPretrainer.call: the last block only where the heads read it, against the full functional graph."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_lite as kbl
from tests.conftest import random_inputs


def _inputs(config, dtype="int32"):
    # Rows of length 12, 8, 4 (padding after); positions repeat, hit [CLS] (0) and padding positions (0 is
    # also what a batch pads missing predictions with).
    inputs = dict(random_inputs(config), masked_lm_positions=np.array([[1, 5, 11], [0, 7, 7], [3, 0, 0]]))
    return {name: value.astype(dtype) for name, value in inputs.items()}


def _full_graph(pretrainer):
    """The functional graph the pretrainer was built from (every block at every position)."""
    return keras.Model(pretrainer.inputs, dict(zip(["mlm_logits", "nsp_logits"], pretrainer.outputs)))


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_outputs_equal_the_full_graph(tiny_config, dtype, monkeypatch):
    model = kbl.build_pretrainer(tiny_config)
    inputs = _inputs(tiny_config, dtype)
    last_block, seen = model.encoder.get_layer("layer_1"), []
    block_call = last_block.call

    def spy(*args, **kwargs):
        seen.append(kwargs.get("output_positions"))
        return block_call(*args, **kwargs)

    monkeypatch.setattr(last_block, "call", spy)
    sparse = model(inputs, training=False)
    monkeypatch.undo()
    full = _full_graph(model)(inputs, training=False)
    np.testing.assert_array_equal(seen[0], [[0, 1, 5, 11], [0, 0, 7, 7], [0, 3, 0, 0]])  # [CLS] + masked only
    assert sparse["mlm_logits"].shape == (3, 3, tiny_config.vocab_size) and sparse["nsp_logits"].shape == (3, 2)
    for name in ("mlm_logits", "nsp_logits"):
        np.testing.assert_allclose(sparse[name].numpy(), full[name].numpy(), atol=1e-5)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_gradients_equal_the_full_graph(no_dropout_config, jit_compile):
    model = kbl.build_pretrainer(no_dropout_config)
    full = _full_graph(model)
    inputs = {name: tf.constant(value) for name, value in _inputs(no_dropout_config).items()}
    weights = tf.random.stateless_normal((3, 3, no_dropout_config.vocab_size), seed=(1, 2))

    @tf.function(jit_compile=jit_compile)
    def gradients(net):
        with tf.GradientTape() as tape:
            out = net(inputs, training=True)
            loss = tf.reduce_sum(out["mlm_logits"] * weights) + tf.reduce_sum(out["nsp_logits"] * [1.0, -2.0])
        return tape.gradient(loss, model.trainable_variables)

    sparse_grads, full_grads = gradients(model), gradients(full)
    assert len(sparse_grads) == len(model.trainable_variables) > 20
    for variable, a, b in zip(model.trainable_variables, sparse_grads, full_grads):
        a, b = tf.convert_to_tensor(a).numpy(), tf.convert_to_tensor(b).numpy()
        np.testing.assert_allclose(a, b, atol=1e-4, rtol=1e-4, err_msg=variable.path)
    last_ffn = model.encoder.get_layer("layer_1").output_dense.kernel.path
    paths = [variable.path for variable in model.trainable_variables]
    assert np.abs(sparse_grads[paths.index(last_ffn)].numpy()).max() > 0  # the last block is trained


def test_mixed_precision_keeps_float32_logits(tiny_config):
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    model = kbl.build_pretrainer(tiny_config)
    out = model(_inputs(tiny_config), training=True)
    assert out["mlm_logits"].dtype == "float32" and out["nsp_logits"].dtype == "float32"
    assert np.isfinite(out["mlm_logits"].numpy()).all()


def test_no_predictions_still_gives_next_sentence_logits(tiny_config):
    model = kbl.build_pretrainer(tiny_config)
    inputs = dict(_inputs(tiny_config), masked_lm_positions=np.zeros((3, 0), "int32"))
    out = model(inputs, training=False)
    assert out["mlm_logits"].shape == (3, 0, tiny_config.vocab_size)
    np.testing.assert_allclose(out["nsp_logits"].numpy(), _full_graph(model)(inputs)["nsp_logits"].numpy(), atol=1e-5)

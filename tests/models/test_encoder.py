"""build_encoder: the TF Hub contract, parameter counts, padding invariance (graph and XLA), mixed precision."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite import BertConfig, build_encoder
from tests.conftest import random_inputs


def test_contract(tiny_config):
    encoder = build_encoder(tiny_config)
    assert sorted(encoder.input) == ["input_mask", "input_type_ids", "input_word_ids"]
    assert all(t.dtype == "int32" for t in encoder.input.values())
    out = encoder(random_inputs(tiny_config, batch=3, seq=9))
    assert out["sequence_output"].shape == (3, 9, 32)
    assert out["pooled_output"].shape == (3, 32)
    assert len(out["encoder_outputs"]) == tiny_config.num_layers
    np.testing.assert_array_equal(out["encoder_outputs"][-1], out["sequence_output"])


def test_any_length_up_to_max_positions(tiny_config):
    encoder = build_encoder(tiny_config)
    for seq in (1, 17, tiny_config.max_position_embeddings):
        assert encoder(random_inputs(tiny_config, batch=2, seq=seq))["sequence_output"].shape[1] == seq
    with pytest.raises(Exception, match="max_position_embeddings|Incompatible|incompatible"):
        encoder(random_inputs(tiny_config, batch=2, seq=tiny_config.max_position_embeddings + 1))


@pytest.mark.parametrize("preset,count", [("base", 109_482_240), ("large", 335_141_888)])
def test_parameter_counts(preset, count):
    assert build_encoder(BertConfig.of_size(preset)).count_params() == count


def _pad(inputs, extra):
    return {k: np.pad(v, ((0, 0), (0, extra))) for k, v in inputs.items()}


@pytest.mark.parametrize("jit_compile", [False, True], ids=["graph", "xla"])
def test_padding_invariance(no_dropout_config, jit_compile):
    encoder = build_encoder(no_dropout_config)
    run = tf.function(lambda x: encoder(x, training=False), jit_compile=jit_compile)
    inputs = random_inputs(no_dropout_config, batch=4, seq=10, lengths=[10, 7, 3, 1])
    short, long = run(inputs), run(_pad(inputs, 23))
    mask = inputs["input_mask"][..., None].astype(bool)
    diff = np.abs(np.where(mask, short["sequence_output"] - long["sequence_output"][:, :10], 0)).max()
    assert diff <= 1e-5, diff
    assert np.abs(short["pooled_output"] - long["pooled_output"]).max() <= 1e-5


@pytest.mark.parametrize("policy,tolerance", [("mixed_bfloat16", 0.15), ("mixed_float16", 0.02)])
def test_mixed_precision_close_to_float32(no_dropout_config, policy, tolerance):
    inputs = random_inputs(no_dropout_config)
    reference = build_encoder(no_dropout_config)
    expected = reference(inputs)["sequence_output"].numpy()
    keras.mixed_precision.set_global_policy(policy)
    encoder = build_encoder(no_dropout_config)
    encoder.set_weights(reference.get_weights())
    got = encoder(inputs)["sequence_output"]
    assert keras.backend.standardize_dtype(got.dtype) == policy.split("_")[1]
    mask = inputs["input_mask"][..., None]
    assert np.abs((np.asarray(got, "float32") - expected) * mask).max() < tolerance


def test_keras_file_round_trip(tiny_config, tmp_path):
    encoder = build_encoder(tiny_config)
    inputs = random_inputs(tiny_config)
    encoder.save(tmp_path / "encoder.keras")
    restored = keras.saving.load_model(tmp_path / "encoder.keras")
    keras.tree.map_structure(np.testing.assert_array_equal, encoder(inputs), restored(inputs))


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_casts_embedding_rows_not_tables(policy, tiny_config):
    """Under mixed precision the float32 embedding tables are gathered from and only the [b, s, H] rows are cast:
    Keras' autocast would cast the whole [vocab, H] word table on every call (BERT-base: 23M values a forward)."""
    keras.mixed_precision.set_global_policy(policy)
    encoder = build_encoder(tiny_config)
    inputs = random_inputs(tiny_config, batch=2, seq=8)
    graph = tf.function(lambda x: encoder(x, training=False)).get_concrete_function(inputs).graph
    cast_inputs = [op.inputs[0].shape.as_list() for op in graph.get_operations() if op.type == "Cast"]
    assert cast_inputs and [tiny_config.vocab_size, tiny_config.hidden_size] not in cast_inputs, cast_inputs

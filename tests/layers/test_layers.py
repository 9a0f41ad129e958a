"""Every layer: get_config() == constructor args, serialization round trip, masking and dtype behaviour."""

import inspect

import keras
import numpy as np
import pytest

from keras_bert_lite.layers import (
    BertEmbeddings,
    BertPooler,
    FoldChoices,
    FusedLayerNorm,
    LogitsHead,
    MaskedLMHead,
    MultiHeadSelfAttention,
    MultipleChoiceHead,
    SentencePooling,
    SpanHead,
    TransformerEncoderBlock,
)

H = 16
rng = np.random.default_rng(0)
X = rng.normal(size=(2, 5, H)).astype("float32")
MASK = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], "int32")
IDS = np.array([[3, 4, 5, 0, 0], [1, 2, 3, 4, 5]], "int32")
TABLE = rng.normal(size=(11, H)).astype("float32")

# (layer, call args) for every layer in the package.
CASES = [
    (BertEmbeddings(11, H, 8, 2, dropout=0.0), (IDS, MASK)),
    (MultiHeadSelfAttention(H, 4, dropout=0.0), (X, MASK)),
    (FusedLayerNorm(epsilon=1e-12), (X,)),
    (TransformerEncoderBlock(H, 4, 32, hidden_act="gelu_approx", hidden_dropout=0.0, attention_dropout=0.0), (X, MASK)),
    (BertPooler(H), (X,)),
    (MaskedLMHead(11, H, hidden_act="relu"), (X, np.array([[0, 2], [1, 4]], "int32"), TABLE)),
    (LogitsHead(3, H, dropout=0.0), (X,)),
    (SpanHead(H), (X, MASK)),
    (MultipleChoiceHead(2, H, dropout=0.0), (X[:, 0],)),
    (FoldChoices(), (IDS[None],)),
    (SentencePooling(("cls", "mean"), normalize=True), (X, MASK)),
]


@pytest.mark.parametrize("layer,args", CASES, ids=lambda c: type(c).__name__ if isinstance(c, keras.Layer) else "")
def test_get_config_is_exactly_the_constructor_args(layer, args):
    config = layer.get_config()
    own = set(inspect.signature(type(layer).__init__).parameters) - {"self", "kwargs"}
    base = {"name", "trainable", "dtype"}  # keras.layers.Layer's own constructor args
    assert set(config) == own | base
    clone = type(layer).from_config(config)
    assert clone.get_config() == config


@pytest.mark.parametrize("layer,args", CASES, ids=lambda c: type(c).__name__ if isinstance(c, keras.Layer) else "")
def test_serialization_round_trip_gives_identical_outputs(layer, args):
    out = layer(*args)
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    clone(*args)
    clone.set_weights(layer.get_weights())
    keras.tree.map_structure(
        lambda a, b: np.testing.assert_array_equal(np.asarray(a), np.asarray(b)), out, clone(*args)
    )


@pytest.mark.parametrize("heads", [4, 2])
def test_attention_ignores_padded_keys(heads):
    attention = MultiHeadSelfAttention(H, heads, dropout=0.0)
    out = attention(X, MASK).numpy()
    garbage = X.copy()
    garbage[0, 3:] = 1e3  # change only the padded positions of row 0
    out2 = attention(garbage, MASK).numpy()
    np.testing.assert_allclose(out2[0, :3], out[0, :3], atol=1e-5)


POSITIONS = np.array([[0, 2, 4, 2], [4, 1, 0, 3]], "int32")  # repeated and padded positions too


def _gather(x, positions):
    return np.take_along_axis(np.asarray(x), positions[..., None], axis=1)


@pytest.mark.parametrize("heads", [4, 2])
def test_attention_query_positions_give_the_full_output_there(heads):
    attention = MultiHeadSelfAttention(H, heads, dropout=0.0)
    full = attention(X, MASK).numpy()
    np.testing.assert_allclose(
        attention(X, MASK, query_positions=POSITIONS).numpy(), _gather(full, POSITIONS), atol=1e-5
    )
    rows = attention(X.reshape(-1, H), MASK, query_positions=POSITIONS).numpy()  # token-row input
    np.testing.assert_allclose(rows, _gather(full, POSITIONS).reshape(-1, H), atol=1e-5)


def test_block_output_positions_give_the_full_output_there():
    block = TransformerEncoderBlock(H, 4, 32, hidden_dropout=0.0, attention_dropout=0.0)
    full = block(X, MASK).numpy()
    out = block(X, MASK, output_positions=POSITIONS)
    assert out.shape == (2, 4, H)
    np.testing.assert_allclose(out.numpy(), _gather(full, POSITIONS), atol=1e-5)
    symbolic = block(
        keras.Input((None, H)), keras.Input((None,), dtype="int32"), output_positions=keras.Input((4,), dtype="int32")
    )
    assert symbolic.shape == (None, 4, H)


def test_masked_lm_head_takes_gathered_vectors():
    head = MaskedLMHead(11, H)
    positions = np.array([[0, 2], [1, 4]], "int32")
    np.testing.assert_allclose(
        head(_gather(X, positions), None, TABLE).numpy(), head(X, positions, TABLE).numpy(), atol=1e-6
    )


def test_all_padding_row_is_finite():
    block = TransformerEncoderBlock(H, 4, 32)
    out = block(X, np.zeros_like(MASK)).numpy()
    assert np.isfinite(out).all()


def test_masked_lm_head_uses_the_given_table():
    head = MaskedLMHead(11, H)
    positions = np.array([[0, 2], [1, 4]], "int32")
    logits = head(X, positions, TABLE).numpy()
    assert logits.shape == (2, 2, 11)
    logits2 = head(X, positions, TABLE * 0.0).numpy()
    np.testing.assert_allclose(logits2, np.broadcast_to(head.output_bias.numpy(), logits2.shape))
    assert not np.allclose(logits, logits2)


def test_span_head_never_prefers_padding():
    start, end = SpanHead(H)(X, MASK)
    assert start.shape == end.shape == (2, 5)
    assert (start.numpy()[0, 3:] < -1e3).all() and (end.numpy()[0, 3:] < -1e3).all()


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_keeps_softmax_layernorm_and_logits_in_float32(policy):
    keras.mixed_precision.set_global_policy(policy)
    block = TransformerEncoderBlock(H, 4, 32)
    y = block(X, MASK)
    assert keras.backend.standardize_dtype(y.dtype) == policy.split("_")[1]
    assert block.attention_layer_norm.gamma.dtype == "float32"  # variables stay float32
    logits = LogitsHead(3, H)(y)
    assert keras.backend.standardize_dtype(logits.dtype) == "float32"
    assert np.isfinite(np.asarray(logits, "float32")).all()

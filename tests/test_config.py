import json

import pytest

from keras_bert_lite import BertConfig
from keras_bert_lite.utils.errors import InputFileError


@pytest.mark.parametrize(
    "name,layers,hidden,heads",
    [
        ("tiny", 2, 128, 2),
        ("mini", 4, 256, 4),
        ("small", 4, 512, 8),
        ("medium", 8, 512, 8),
        ("base", 12, 768, 12),
        ("large", 24, 1024, 16),
    ],
)
def test_presets(name, layers, hidden, heads):
    c = BertConfig.of_size(name)
    assert (c.num_layers, c.hidden_size, c.num_heads, c.intermediate_size, c.vocab_size) == (
        layers,
        hidden,
        heads,
        4 * hidden,
        30522,
    )


def test_unknown_preset_lists_choices():
    with pytest.raises(ValueError, match="base"):
        BertConfig.of_size("huge")


@pytest.mark.parametrize(
    "changes,field",
    [
        (dict(hidden_size=100, num_heads=12), "hidden_size"),
        (dict(num_layers=0), "num_layers"),
        (dict(vocab_size=-5), "vocab_size"),
        (dict(intermediate_size=2.5), "intermediate_size"),
        (dict(hidden_act="swish"), "hidden_act"),
        (dict(hidden_dropout=1.0), "hidden_dropout"),
        (dict(layer_norm_eps=0.0), "layer_norm_eps"),
    ],
)
def test_invalid_values_name_the_field(changes, field):
    with pytest.raises(ValueError, match=f"BertConfig.{field}"):
        BertConfig(**changes)


def test_json_round_trip(tmp_path):
    c = BertConfig.of_size("mini", hidden_act="relu", hidden_dropout=0.2)
    c.to_json(tmp_path / "c.json")
    assert BertConfig.from_json(tmp_path / "c.json") == c


def test_unknown_field_is_named(tmp_path):
    (tmp_path / "c.json").write_text(json.dumps({"hidden_size": 64, "num_heads": 4, "colour": "red"}))
    with pytest.raises(ValueError, match="colour"):
        BertConfig.from_json(tmp_path / "c.json")


def test_bad_json_names_file_and_line(tmp_path):
    (tmp_path / "c.json").write_text('{\n"hidden_size": 64,\n}')
    with pytest.raises(ValueError, match=r"c.json:3"):
        BertConfig.from_json(tmp_path / "c.json")


ORIGINAL_BASE = {  # google-research/bert uncased_L-12_H-768_A-12/bert_config.json
    "attention_probs_dropout_prob": 0.1,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 768,
    "initializer_range": 0.02,
    "intermediate_size": 3072,
    "max_position_embeddings": 512,
    "num_attention_heads": 12,
    "num_hidden_layers": 12,
    "type_vocab_size": 2,
    "vocab_size": 30522,
}


def test_original_bert_config_gelu_is_the_tanh_form(tmp_path):
    (tmp_path / "bert_config.json").write_text(json.dumps(ORIGINAL_BASE))
    c = BertConfig.from_json(tmp_path / "bert_config.json")
    assert c == BertConfig.of_size("base", hidden_act="gelu_approx")


def test_a_reference_config_without_model_type_takes_the_dialect_of_its_weights(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(ORIGINAL_BASE))
    assert BertConfig.from_json(tmp_path / "config.json", weights="hf").hidden_act == "gelu"
    assert BertConfig.from_json(tmp_path / "config.json", weights="tf1").hidden_act == "gelu_approx"
    (tmp_path / "bert_config.json").write_text(json.dumps(ORIGINAL_BASE))
    assert BertConfig.from_json(tmp_path / "bert_config.json", weights="hf").hidden_act == "gelu"
    (tmp_path / "config.json").write_text(json.dumps(dict(ORIGINAL_BASE, model_type="bert")))
    assert BertConfig.from_json(tmp_path / "config.json", weights="tf1").hidden_act == "gelu"  # says it is HF's


def test_the_dialect_is_the_files_content_not_its_name(tmp_path):
    """An original bert_config.json renamed config.json (a --config without weights beside it) keeps its tanh
    "gelu"; any key only Hugging Face writes makes a file HF's, with or without model_type."""
    (tmp_path / "config.json").write_text(json.dumps(ORIGINAL_BASE))
    assert BertConfig.from_json(tmp_path / "config.json") == BertConfig.of_size("base", hidden_act="gelu_approx")
    for key, value in [
        ("model_type", "bert"),
        ("architectures", ["BertModel"]),
        ("transformers_version", "4.57.1"),
        ("layer_norm_eps", 1e-12),
        ("pad_token_id", 0),
    ]:
        (tmp_path / "bert_config.json").write_text(json.dumps(dict(ORIGINAL_BASE, **{key: value})))
        assert BertConfig.from_json(tmp_path / "bert_config.json").hidden_act == "gelu", key


def test_hf_config_gelu_is_exact(tmp_path):
    hf = dict(ORIGINAL_BASE, model_type="bert", layer_norm_eps=1e-12)
    (tmp_path / "config.json").write_text(json.dumps(hf))
    assert BertConfig.from_json(tmp_path / "config.json").hidden_act == "gelu"
    (tmp_path / "config.json").write_text(json.dumps(dict(hf, hidden_act="gelu_new")))
    assert BertConfig.from_json(tmp_path / "config.json").hidden_act == "gelu_approx"


@pytest.mark.parametrize(
    "name, ours", [("gelu_python", "gelu"), ("gelu_fast", "gelu_approx"), ("gelu_accurate", "gelu_approx")]
)
def test_hf_config_other_names_of_the_two_gelus(tmp_path, name, ours):
    """transformers' gelu_python is its exact GELU, gelu_fast and gelu_accurate its tanh form (they were refused);
    an export still writes gelu and gelu_pytorch_tanh."""
    (tmp_path / "config.json").write_text(json.dumps(dict(ORIGINAL_BASE, model_type="bert", hidden_act=name)))
    config = BertConfig.from_json(tmp_path / "config.json")
    assert config.hidden_act == ours
    assert config.to_reference_dict("hf")["hidden_act"] == {"gelu": "gelu", "gelu_approx": "gelu_pytorch_tanh"}[ours]


@pytest.mark.parametrize("dialect", ["original", "hf"])
def test_reference_dict_round_trip(dialect):
    c = BertConfig.of_size("small", hidden_act="gelu_approx")
    assert BertConfig.from_reference_dict(c.to_reference_dict(dialect), dialect) == c


def test_exact_gelu_cannot_be_written_as_original():
    with pytest.raises(ValueError, match="gelu_approx"):
        BertConfig.of_size("tiny").to_reference_dict("original")


@pytest.mark.parametrize(
    "key, value",
    [("layer_norm_eps", "1e-12"), ("hidden_dropout_prob", None), ("initializer_range", None), ("hidden_act", ["gelu"])],
)
def test_a_value_of_the_wrong_json_type_names_file_and_key(tmp_path, key, value):
    """Strings, nulls and lists where numbers or names belong (each crashed with a TypeError)."""
    (tmp_path / "config.json").write_text(json.dumps(dict(ORIGINAL_BASE, model_type="bert", **{key: value})))
    with pytest.raises(InputFileError, match=r"config\.json: .*(hidden_act|must be a number)"):
        BertConfig.from_json(tmp_path / "config.json")


def test_hf_config_may_leave_out_keys_with_hf_defaults(tmp_path):
    """Hugging Face's BertConfig defaults are the base model's: a config.json without num_hidden_layers and
    num_attention_heads was read in our dialect and refused for its 'unknown fields'."""
    hf = {k: v for k, v in ORIGINAL_BASE.items() if k not in ("num_hidden_layers", "num_attention_heads")}
    (tmp_path / "config.json").write_text(json.dumps(dict(hf, model_type="bert")))
    assert BertConfig.from_json(tmp_path / "config.json") == BertConfig.of_size("base")


def test_a_causal_decoder_config_is_refused(tmp_path):
    """HF runs `is_decoder: true` with a causal mask; read as an encoder its outputs silently differed."""
    (tmp_path / "config.json").write_text(json.dumps(dict(ORIGINAL_BASE, model_type="bert", is_decoder=True)))
    with pytest.raises(InputFileError, match=r"config\.json: is_decoder is True.*set is_decoder to false"):
        BertConfig.from_json(tmp_path / "config.json")
    (tmp_path / "config.json").write_text(json.dumps(dict(ORIGINAL_BASE, model_type="bert", is_decoder=False)))
    assert BertConfig.from_json(tmp_path / "config.json") == BertConfig.of_size("base")

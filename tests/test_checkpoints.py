"""Real-weight parity with Hugging Face transformers, TF1 import, and strict-mismatch errors."""

import json
import logging
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file, save_file

from keras_bert_lite import BertConfig
from keras_bert_lite.checkpoints import CheckpointMismatchError, load_encoder, load_pretrainer
from keras_bert_lite.utils.errors import InputFileError
from tests.conftest import GOLDEN_DIR

INPUTS = ("input_word_ids", "input_mask", "input_type_ids")
TINY_HF = GOLDEN_DIR / "hf_tiny_pretraining"


def _max_diff_on_real_tokens(ours, theirs, mask):
    return float(np.abs((ours - theirs) * mask[..., None]).max())


@pytest.mark.parametrize("mode", ["eager", "graph", "xla"])
def test_minilm_matches_hugging_face(minilm_dir, mode):
    """Also in graph mode, where TF's oneDNN rewrite fuses matmul + bias + GELU, and under XLA."""
    golden = np.load(GOLDEN_DIR / "minilm_encoder.npz")
    assert golden["input_word_ids"].shape[0] >= 8 and len(set(golden["input_mask"].sum(1))) >= 8
    encoder = load_encoder(minilm_dir)
    run = (
        (lambda x: encoder(x, training=False))
        if mode == "eager"
        else tf.function(lambda x: encoder(x, training=False), jit_compile=mode == "xla")
    )
    out = run({k: tf.constant(golden[k]) for k in INPUTS})
    mask = golden["input_mask"]
    seq_diff = _max_diff_on_real_tokens(out["sequence_output"].numpy(), golden["sequence_output"], mask)
    pooled_diff = float(np.abs(out["pooled_output"].numpy() - golden["pooled_output"]).max())
    assert seq_diff <= 1e-4, seq_diff
    assert pooled_diff <= 1e-4, pooled_diff


def test_hf_bert_for_pretraining_heads_match():
    golden = np.load(GOLDEN_DIR / "hf_tiny_pretraining.npz")
    pretrainer = load_pretrainer(str(TINY_HF))
    out = pretrainer({k: golden[k] for k in (*INPUTS, "masked_lm_positions")}, training=False)
    assert np.abs(out["mlm_logits"].numpy() - golden["mlm_logits"]).max() <= 1e-5
    assert np.abs(out["nsp_logits"].numpy() - golden["nsp_logits"]).max() <= 1e-5
    encoder = load_encoder(str(TINY_HF))  # BertForPreTraining names, heads skipped
    seq = encoder({k: golden[k] for k in INPUTS})["sequence_output"].numpy()
    assert _max_diff_on_real_tokens(seq, golden["sequence_output"], golden["input_mask"]) <= 1e-5


def _hf_to_original_name(key):
    """The google-research/bert variable name of a HF BertForPreTraining tensor (written independently of
    the library's name table) and whether the array must be transposed."""
    name = key.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
    name = name.replace("cls.predictions.bias", "cls.predictions.output_bias")
    name = name.replace("cls.seq_relationship.weight", "cls.seq_relationship.output_weights")
    name = name.replace("cls.seq_relationship.bias", "cls.seq_relationship.output_bias")
    name = name.replace("encoder.layer.", "encoder.layer_").replace(".", "/")
    if name.endswith("_embeddings/weight"):
        return name[: -len("/weight")], False
    if name.endswith("/weight"):
        return name[: -len("/weight")] + "/kernel", True
    return name, False


def write_original_checkpoint(tensors, bert_config, out_dir):
    """Writes a TF1 name-based checkpoint exactly as google-research/bert's run_pretraining.py saves one."""
    out_dir.mkdir()
    (out_dir / "bert_config.json").write_text(json.dumps(bert_config))
    graph = tf.Graph()
    with graph.as_default():
        variables = [tf.compat.v1.get_variable(name, initializer=tf.constant(value)) for name, value in tensors.items()]
        tf.compat.v1.train.get_or_create_global_step()
        for v in variables[:3]:  # optimizer slots as in released checkpoints; the loader must ignore them
            tf.compat.v1.get_variable(v.op.name + "/adam_m", initializer=tf.zeros_like(v.initial_value))
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            saver.save(sess, str(out_dir / "bert_model.ckpt"))


@pytest.fixture
def tiny_tf1_checkpoint(tmp_path):
    tensors = {}
    for key, value in load_file(str(TINY_HF / "model.safetensors")).items():
        if key in ("bert.embeddings.position_ids", "cls.predictions.decoder.weight"):
            continue
        name, transpose = _hf_to_original_name(key)
        tensors[name] = np.ascontiguousarray(value.T if transpose else value)
    hf_config = json.loads((TINY_HF / "config.json").read_text())
    keys = (
        "attention_probs_dropout_prob",
        "hidden_dropout_prob",
        "hidden_size",
        "initializer_range",
        "intermediate_size",
        "max_position_embeddings",
        "num_attention_heads",
        "num_hidden_layers",
        "type_vocab_size",
        "vocab_size",
    )
    # The original repo's "gelu" is the tanh approximation, i.e. HF's "gelu_new" used by the golden model.
    bert_config = dict({k: hf_config[k] for k in keys}, hidden_act="gelu")
    write_original_checkpoint(tensors, bert_config, tmp_path / "tf1")
    return tmp_path / "tf1", tensors, bert_config


def test_original_tf1_checkpoint_matches_reference(tiny_tf1_checkpoint):
    ckpt_dir, _, _ = tiny_tf1_checkpoint
    golden = np.load(GOLDEN_DIR / "hf_tiny_pretraining.npz")
    for path in (str(ckpt_dir), str(ckpt_dir / "bert_model.ckpt")):  # directory or checkpoint prefix
        pretrainer = load_pretrainer(path)
        out = pretrainer({k: golden[k] for k in (*INPUTS, "masked_lm_positions")})
        assert np.abs(out["mlm_logits"].numpy() - golden["mlm_logits"]).max() <= 1e-5
        assert np.abs(out["nsp_logits"].numpy() - golden["nsp_logits"]).max() <= 1e-5


def test_an_original_config_renamed_config_json_keeps_the_tanh_gelu(tiny_tf1_checkpoint):
    """Beside TF1 weights, a `config.json` without model_type is an original bert_config.json renamed: its "gelu"
    is the tanh form. It was read as Hugging Face's (exact erf), and the outputs drifted from the reference."""
    ckpt_dir, _, _ = tiny_tf1_checkpoint
    (ckpt_dir / "bert_config.json").rename(ckpt_dir / "config.json")
    golden = np.load(GOLDEN_DIR / "hf_tiny_pretraining.npz")
    out = load_pretrainer(str(ckpt_dir))({k: golden[k] for k in (*INPUTS, "masked_lm_positions")})
    assert np.abs(out["mlm_logits"].numpy() - golden["mlm_logits"]).max() <= 1e-5


def test_tf1_extra_variable_is_an_error(tiny_tf1_checkpoint, tmp_path):
    _, tensors, bert_config = tiny_tf1_checkpoint
    tensors = dict(tensors, **{"bert/encoder/layer_2/output/dense/bias": np.zeros(32, np.float32)})
    write_original_checkpoint(tensors, bert_config, tmp_path / "extra")
    with pytest.raises(CheckpointMismatchError, match="layer_2/output/dense/bias"):
        load_encoder(str(tmp_path / "extra"))


def test_tf1_missing_and_misshaped_variables_are_listed(tiny_tf1_checkpoint, tmp_path):
    _, tensors, bert_config = tiny_tf1_checkpoint
    tensors = dict(tensors)
    del tensors["bert/encoder/layer_1/attention/self/key/bias"]
    tensors["bert/pooler/dense/bias"] = np.zeros(31, np.float32)
    write_original_checkpoint(tensors, bert_config, tmp_path / "broken")
    with pytest.raises(CheckpointMismatchError) as err:
        load_encoder(str(tmp_path / "broken"))
    assert "layer_1/attention/self/key/bias" in str(err.value)
    assert "pooler/dense/bias" in str(err.value) and "(31,)" in str(err.value)


def test_hf_unknown_tensor_is_an_error(tmp_path):
    shutil.copytree(TINY_HF, tmp_path / "hf")
    tensors = load_file(str(tmp_path / "hf" / "model.safetensors"))
    tensors["bert.encoder.layer.0.attention.self.rotary.weight"] = np.zeros((2, 2), np.float32)
    save_file(tensors, str(tmp_path / "hf" / "model.safetensors"))
    with pytest.raises(CheckpointMismatchError, match="rotary"):
        load_encoder(str(tmp_path / "hf"))


def test_a_bert_prefixed_position_ids_buffer_is_skipped(tmp_path):
    """transformers before 4.31 saved the position_ids buffer too: `bert.embeddings.position_ids` in a model with
    heads (it was refused as a variable matching no weight)."""
    golden = np.load(GOLDEN_DIR / "hf_tiny_pretraining.npz")
    shutil.copytree(TINY_HF, tmp_path / "hf")
    tensors = load_file(str(tmp_path / "hf" / "model.safetensors"))
    tensors["bert.embeddings.position_ids"] = np.arange(64, dtype=np.int64)[None]
    save_file(tensors, str(tmp_path / "hf" / "model.safetensors"))
    out = load_pretrainer(str(tmp_path / "hf"))({k: golden[k] for k in (*INPUTS, "masked_lm_positions")})
    assert np.abs(out["mlm_logits"].numpy() - golden["mlm_logits"]).max() <= 1e-5


def test_a_bert_model_saved_without_a_pooler_gets_a_fresh_one(minilm_dir, tmp_path, caplog):
    """BertModel(add_pooling_layer=False) saves no pooler and transformers' AutoModel gives it a new one; it was
    refused as 'missing from the checkpoint' (only BertFor... heads' architectures got one)."""
    golden = np.load(GOLDEN_DIR / "minilm_encoder.npz")
    shutil.copytree(minilm_dir, tmp_path / "hf")
    tensors = load_file(str(tmp_path / "hf" / "model.safetensors"))
    save_file(
        {k: v for k, v in tensors.items() if not k.startswith("pooler.")}, str(tmp_path / "hf" / "model.safetensors")
    )
    with caplog.at_level(logging.WARNING):
        encoder = load_encoder(str(tmp_path / "hf"))
    assert "(a BertModel) has no pooler; pooled_output comes from a freshly initialised one" in caplog.text
    out = encoder({k: golden[k] for k in INPUTS})["sequence_output"].numpy()
    assert _max_diff_on_real_tokens(out, golden["sequence_output"], golden["input_mask"]) <= 1e-4


def test_wrong_config_is_reported(tmp_path):
    shutil.copytree(TINY_HF, tmp_path / "hf")
    wrong = BertConfig(
        vocab_size=120, hidden_size=32, num_layers=1, num_heads=4, intermediate_size=64, max_position_embeddings=64
    )
    with pytest.raises(CheckpointMismatchError, match="layer.1"):
        load_encoder(str(tmp_path / "hf"), config=wrong)


def test_pretrainer_from_headless_checkpoint(minilm_dir):
    with pytest.raises(
        CheckpointMismatchError, match="has no masked-LM head and no next-sentence head .*pass new_heads=True"
    ):
        load_pretrainer(minilm_dir)
    pretrainer = load_pretrainer(minilm_dir, new_heads=True)
    assert pretrainer.get_layer("masked_lm").output_bias.shape == (30522,)


def test_keras_file_gives_back_the_encoder(tmp_path):
    pretrainer = load_pretrainer(str(TINY_HF))
    pretrainer.save(tmp_path / "p.keras")
    encoder = load_encoder(str(tmp_path / "p.keras"))
    golden = np.load(GOLDEN_DIR / "hf_tiny_pretraining.npz")
    seq = encoder({k: golden[k] for k in INPUTS})["sequence_output"].numpy()
    assert _max_diff_on_real_tokens(seq, golden["sequence_output"], golden["input_mask"]) <= 1e-5


def _save_numbered_tf1(tensors, directory, step):
    """Saves `tensors` as `directory/model.ckpt-<step>` the way google-research/bert's Estimator does: numbered,
    and named in the `checkpoint` state file as the latest."""
    graph = tf.Graph()
    with graph.as_default():
        variables = [tf.compat.v1.get_variable(name, initializer=tf.constant(value)) for name, value in tensors.items()]
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            saver.save(sess, str(directory / "model.ckpt"), global_step=step, write_meta_graph=False)


def test_tf1_fine_tuning_heads_are_skipped(tiny_tf1_checkpoint, tmp_path, caplog):
    """google-research/bert's run_classifier.py (`output_weights`, `output_bias`) and run_squad.py
    (`cls/squad/output_*`) heads are skipped like Hugging Face task heads, not refused as a wrong config."""
    ckpt_dir, tensors, bert_config = tiny_tf1_checkpoint
    encoder_only = {n: t for n, t in tensors.items() if not n.startswith("cls/")}
    for name, heads in (
        ("classifier", ("output_weights", "output_bias")),
        ("squad", ("cls/squad/output_weights", "cls/squad/output_bias")),
    ):
        head = {heads[0]: np.ones((2, 32), np.float32), heads[1]: np.ones(2, np.float32)}
        write_original_checkpoint(dict(encoder_only, **head), bert_config, tmp_path / name)
        with caplog.at_level(logging.INFO, logger="keras_bert_lite.checkpoints"):
            encoder = load_encoder(str(tmp_path / name))
        assert any(
            "skipping the fine-tuning head" in r.getMessage() and heads[0] in r.getMessage() for r in caplog.records
        )
        np.testing.assert_array_equal(
            encoder.get_layer("embeddings").get_weights()[0], tensors["bert/embeddings/word_embeddings"]
        )


def test_tf1_directory_with_several_checkpoints_reads_the_latest(tiny_tf1_checkpoint, tmp_path, caplog):
    _, tensors, bert_config = tiny_tf1_checkpoint
    encoder_only = {n: t for n, t in tensors.items() if not n.startswith("cls/")}
    run = tmp_path / "run"
    run.mkdir()
    (run / "bert_config.json").write_text(json.dumps(bert_config))
    embeddings = "bert/embeddings/word_embeddings"
    for step in (100, 200, 1000):
        _save_numbered_tf1(dict(encoder_only, **{embeddings: tensors[embeddings] + step}), run, step)

    def loaded_step():
        return round(
            float((load_encoder(str(run)).get_layer("embeddings").get_weights()[0] - tensors[embeddings]).mean())
        )

    with caplog.at_level(logging.INFO, logger="keras_bert_lite.checkpoints"):
        assert loaded_step() == 1000  # the `checkpoint` file's latest
    logs = [r.getMessage() for r in caplog.records if "TF1 checkpoints" in r.getMessage()]
    assert len(logs) == 1 and "reading model.ckpt-1000, the latest" in logs[0]
    # A moved directory: the state file's absolute path (C-escaped, as protobuf writes it) is gone; its name is here.
    (run / "checkpoint").write_text('model_checkpoint_path: "/gone/\\303\\274/model.ckpt-200"\n')
    assert loaded_step() == 200
    (run / "checkpoint").unlink()
    with pytest.raises(InputFileError) as error:
        load_encoder(str(run))
    assert str(error.value) == (
        f"{run}: 3 TF1 checkpoints (model.ckpt-100, model.ckpt-200, model.ckpt-1000) and "
        "no `checkpoint` file naming one of them as the latest; pass the one to load, e.g. "
        f"{run / 'model.ckpt-1000'}."
    )
    np.testing.assert_array_equal(
        load_encoder(str(run / "model.ckpt-100")).get_layer("embeddings").get_weights()[0], tensors[embeddings] + 100
    )


def test_missing_config_says_what_is_missing_and_where(tiny_tf1_checkpoint, tmp_path):
    shutil.copytree(TINY_HF, tmp_path / "hf")
    (tmp_path / "hf" / "config.json").unlink()
    ckpt_dir, _, _ = tiny_tf1_checkpoint
    (ckpt_dir / "bert_config.json").unlink()
    for directory, path in ((tmp_path / "hf", tmp_path / "hf"), (ckpt_dir, ckpt_dir / "bert_model.ckpt")):
        with pytest.raises(InputFileError) as error:
            load_encoder(str(path))
        assert str(error.value) == (
            f"{directory}: no config.json or bert_config.json beside the weights; put the "
            "model's config file there (in Python you may pass config=BertConfig(...))."
        )


def _shard(directory):
    """TINY_HF's weights as two shards and their model.safetensors.index.json, as save_pretrained writes them."""
    shutil.copytree(TINY_HF, directory)
    tensors = load_file(str(directory / "model.safetensors"))
    (directory / "model.safetensors").unlink()
    keys = sorted(tensors)
    files = {
        "model-00001-of-00002.safetensors": keys[: len(keys) // 2],
        "model-00002-of-00002.safetensors": keys[len(keys) // 2 :],
    }
    for name, names in files.items():
        save_file({k: tensors[k] for k in names}, str(directory / name))
    (directory / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": {k: name for name, names in files.items() for k in names}})
    )


def test_sharded_checkpoint_with_a_missing_shard_names_it(tmp_path):
    _shard(tmp_path / "hf")
    golden = load_encoder(str(TINY_HF)).get_layer("embeddings").get_weights()[0]
    np.testing.assert_array_equal(load_encoder(str(tmp_path / "hf")).get_layer("embeddings").get_weights()[0], golden)
    (tmp_path / "hf" / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(InputFileError) as error:
        load_encoder(str(tmp_path / "hf"))
    assert str(error.value) == (
        f"{tmp_path / 'hf'}: 1 of the 2 shard files that model.safetensors.index.json "
        "names are missing: model-00002-of-00002.safetensors; download them again into "
        "this directory."
    )


@pytest.mark.parametrize(
    "name, says",
    [
        ("pytorch_model.bin", "only PyTorch weights (pytorch_model.bin)"),
        ("pytorch_model-00001-of-00002.bin", "only PyTorch weights (pytorch_model-00001-of-00002.bin)"),
        ("tf_model.h5", "from_pretrained(dir, from_tf=True).save_pretrained(dir)"),
        ("flax_model.msgpack", "from_pretrained(dir, from_flax=True)"),
        (
            "saved_model.pb",
            "TF SavedModel (TF Hub) weights (saved_model.pb), which keras_bert_lite does not read; "
            "pass the model's checkpoint instead",
        ),
    ],
)
def test_weights_of_other_frameworks_are_named_with_the_fix(tmp_path, name, says):
    """A sharded PyTorch model, HF TF/Flax weights and a TF Hub SavedModel got 'no *.safetensors file'."""
    (tmp_path / "config.json").write_text((TINY_HF / "config.json").read_text())
    (tmp_path / name).write_bytes(b"weights")
    with pytest.raises(InputFileError, match=re.escape(says)):
        load_encoder(str(tmp_path))


def test_a_file_of_a_checkpoint_names_the_path_to_pass(tiny_tf1_checkpoint, tmp_path):
    """The weights file itself, or one file of a TF1 checkpoint, was 'not a .keras file, ...'."""
    with pytest.raises(
        InputFileError, match=re.escape(f"pass the directory that holds it (its weights and config.json), {TINY_HF}.")
    ):
        load_encoder(str(TINY_HF / "model.safetensors"))
    prefix = str(tiny_tf1_checkpoint[0] / "bert_model.ckpt")
    for path in (prefix + ".index", prefix + ".data-00000-of-00001"):
        with pytest.raises(InputFileError, match=re.escape(f"pass its prefix, {prefix}, or its directory.")):
            load_encoder(path)


def test_a_directory_with_two_checkpoints_reads_model_safetensors_or_refuses(tmp_path):
    """transformers reads model.safetensors (else the index's shards); another *.safetensors file beside it (a
    fine-tuned copy) was merged in and its tensors silently won. Without model.safetensors, a tensor in two files
    is refused."""
    golden = load_encoder(str(TINY_HF)).get_layer("embeddings").get_weights()[0]
    shutil.copytree(TINY_HF, tmp_path / "hf")
    other = {k: v + 1 if v.dtype == np.float32 else v for k, v in load_file(str(TINY_HF / "model.safetensors")).items()}
    save_file(other, str(tmp_path / "hf" / "model_finetuned.safetensors"))
    np.testing.assert_array_equal(load_encoder(str(tmp_path / "hf")).get_layer("embeddings").get_weights()[0], golden)
    (tmp_path / "hf" / "model.safetensors").rename(tmp_path / "hf" / "a.safetensors")
    with pytest.raises(
        InputFileError,
        match=r"model_finetuned\.safetensors: 46 of its tensors \(bert\..*\) are in "
        r".*a\.safetensors too: .*move out the one not to load",
    ):
        load_encoder(str(tmp_path / "hf"))


def test_an_object_based_tf2_checkpoint_is_named_as_such(tiny_tf1_checkpoint, tmp_path):
    """TF Model Garden's BERT checkpoints name variables by object path; they were refused as 'matching no
    weight of a BERT model ... (is the config right?)'."""
    module = tf.Module()
    module.embeddings = tf.Variable(np.zeros((120, 32), np.float32))
    (tmp_path / "tf2").mkdir()
    shutil.copy(tiny_tf1_checkpoint[0] / "bert_config.json", tmp_path / "tf2")
    tf.train.Checkpoint(encoder=module).write(str(tmp_path / "tf2" / "bert_model.ckpt"))
    with pytest.raises(
        InputFileError,
        match=r"bert_model\.ckpt: a TF2 object-based checkpoint .*e\.g\. "
        r"encoder/embeddings/\.ATTRIBUTES/VARIABLE_VALUE.*original checkpoint",
    ):
        load_encoder(str(tmp_path / "tf2"))

"""Export to Hugging Face (`export.hf`): transformers' outputs for our exports (golden, no torch here), the
export read back by our own loaders, and exports of real Hugging Face files equal to those files.

hf_export.npz is made by tests/golden/make_hf_export_goldens.py (`make goldens`) from exports of
tests/golden/hf_export_models.py's tiny models. Each test exports the same model again and checks, against the
golden: config.json equal to the one transformers read, every tensor of model.safetensors equal (name, shape,
fingerprint) to the one transformers loaded, and our model's outputs equal to transformers' (<= 1e-5). So a wrong
name, transposition, activation, label map or head fails here. An embedder's export also gives, in
sentence-transformers, our embedder's vectors (<= 1e-5), from the sentence-transformers files it read then; a
multi-label classifier's, in transformers' text-classification pipeline, our probabilities (sigmoid).
"""

import json
import os

import keras
import numpy as np
import pytest
from safetensors.numpy import load_file

from keras_bert_lite import artifacts, build_classifier, build_embedder, build_encoder
from keras_bert_lite.checkpoints import load_encoder, load_pretrainer
from keras_bert_lite.export.hf import export_hf
from keras_bert_lite.text import BertPacker, BertTokenizer, Vocab
from tests.conftest import GOLDEN_DIR
from tests.golden import hf_export_models
from tests.golden.hf_export_models import fingerprint

INPUTS = ("input_word_ids", "input_mask", "input_type_ids")
EMBEDDERS = [name for name, (kind, *_) in hf_export_models.MODELS.items() if kind.startswith("embedder")]
TINY_HF = GOLDEN_DIR / "hf_tiny_pretraining"


@pytest.fixture(scope="module")
def golden():
    return dict(np.load(GOLDEN_DIR / "hf_export.npz"))


def our_outputs(name, model, golden):
    """Our model's outputs on the golden inputs, named as in the golden."""
    if name == "multiple_choice":
        feed = dict(zip(INPUTS, (golden["choice_word_ids"], golden["choice_mask"], golden["choice_type_ids"])))
        return {"logits": model(feed, training=False)}
    feed = {k: golden[k] for k in INPUTS}
    if name == "pretrainer":
        positions = np.broadcast_to(
            np.arange(feed["input_word_ids"].shape[1], dtype=np.int32), feed["input_word_ids"].shape
        )
        out = model(dict(feed, masked_lm_positions=positions), training=False)
        return {"prediction_logits": out["mlm_logits"], "seq_relationship_logits": out["nsp_logits"]}
    if name in EMBEDDERS:  # exported as BertModel: its encoder's outputs
        model = model.get_layer("encoder")
    out = model(feed, training=False)
    if name == "multi_label":  # the text-classification pipeline's scores: each label's sigmoid
        vocab = Vocab(hf_export_models.vocab_tokens(False), lower_case=True)
        texts = BertTokenizer(vocab).tokenize(list(golden["texts"]))
        return {
            "logits": out,
            "pipeline_scores": keras.ops.sigmoid(
                model(BertPacker(hf_export_models.SEQ, vocab=vocab, dynamic=True)(texts), training=False)
            ),
        }
    return dict(out) if isinstance(out, dict) else {"logits": out}


@pytest.mark.parametrize("name", list(hf_export_models.MODELS))
def test_transformers_gives_our_outputs(name, golden, tmp_path):
    model, kwargs, _ = hf_export_models.build(name)
    directory = hf_export_models.export(name, str(tmp_path / name))

    config = json.loads((tmp_path / name / "config.json").read_text())
    assert config == json.loads(str(golden[f"{name}__config"]))
    tensors = load_file(os.path.join(directory, "model.safetensors"))
    expected = json.loads(str(golden[f"{name}__tensors"]))
    assert [key for key, _, _ in expected] == sorted(tensors)
    for key, shape, value in expected:
        assert list(tensors[key].shape) == shape, key
        assert fingerprint(tensors[key]) == pytest.approx(value, rel=1e-6, abs=1e-6), key

    outputs = {k: np.asarray(v) for k, v in our_outputs(name, model, golden).items()}
    theirs = {
        k[len(name) + 2 :]: v
        for k, v in golden.items()
        if k.startswith(f"{name}__")
        and k.rsplit("__", 1)[1] not in ("config", "tensors", "token_ids")
        and not k.rsplit("__", 1)[1].startswith("sentence_")
    }
    assert theirs and set(theirs) <= set(outputs)
    mask = golden["choice_mask" if name == "multiple_choice" else "input_mask"]
    for key, reference in theirs.items():
        ours = outputs[key]
        assert ours.shape == reference.shape, key
        if reference.ndim >= 2 and reference.shape[:2] == mask.shape:  # per token: real tokens only
            ours, reference = ours[mask == 1], reference[mask == 1]
        assert np.abs(ours - reference).max() <= 1e-5, (key, float(np.abs(ours - reference).max()))


@pytest.mark.parametrize("name", EMBEDDERS)
def test_sentence_transformers_gives_our_embeddings(name, golden, tmp_path):
    """SentenceTransformer(export).encode(texts), with its own tokenizer, pooling, normalisation and cut at
    max_seq_length (6 tokens cut three of the four texts), equals our embedder on our tokenizer's ids."""
    model, kwargs, _ = hf_export_models.build(name)
    directory = hf_export_models.export(name, str(tmp_path / name))
    files = {
        path: json.loads((tmp_path / name / path).read_text())
        for path in ("modules.json", "1_Pooling/config.json", "sentence_bert_config.json")
    }
    assert files == json.loads(str(golden[f"{name}__sentence_files"]))
    seq_length = int(golden[f"{name}__sentence_max_seq_length"])
    assert seq_length == kwargs.get("seq_length", 64)
    vocab = Vocab.from_file(os.path.join(directory, "vocab.txt"))
    ids = BertPacker(seq_length, vocab=vocab, dynamic=True)(BertTokenizer(vocab).tokenize(list(golden["texts"])))
    ours = model(ids, training=False).numpy()
    assert np.abs(ours - golden[f"{name}__sentence_embeddings"]).max() <= 1e-5


@pytest.mark.parametrize(
    "settings, problem",
    [
        ({"layers": (-2,)}, "pools other blocks than the last one alone"),
        ({"layers": (-2, -1)}, "pools other blocks than the last one alone"),
        ({"pooling": ("mean", "cls")}, r"sentence-transformers joins modes in the order \['cls', 'max', 'mean'"),
    ],
)
def test_embedders_sentence_transformers_cannot_express_are_refused(tiny_config, tmp_path, settings, problem):
    with pytest.raises(ValueError, match=problem):
        export_hf(build_embedder(tiny_config, **settings), str(tmp_path / "hf"))
    assert os.listdir(tmp_path) == []  # nothing, not even a temporary


def test_an_embedders_seq_length_must_fit_its_positions(tiny_config, tmp_path):
    with pytest.raises(ValueError, match=r"seq_length 65 is longer than the model's 64 positions"):
        export_hf(build_embedder(tiny_config), str(tmp_path / "hf"), seq_length=65)


@pytest.mark.parametrize("name", ["encoder", "token_classifier"])
def test_tokenizer_files_give_our_ids(name, golden, tmp_path):
    """AutoTokenizer on the export's vocab.txt + tokenizer_config.json (casing) gave the ids our tokenizer gives
    with the same files (an uncased and a cased vocabulary)."""
    directory = hf_export_models.export(name, str(tmp_path / name))
    vocab = Vocab.from_file(os.path.join(directory, "vocab.txt"))
    assert vocab.lower_case is (not hf_export_models.MODELS[name][3])
    ours = BertTokenizer(vocab).tokenize(list(golden["texts"])).to_list()
    assert ours == json.loads(str(golden[f"{name}__token_ids"]))
    special = json.loads((tmp_path / name / "special_tokens_map.json").read_text())
    assert special == {
        "pad_token": "[PAD]",
        "unk_token": "[UNK]",
        "cls_token": "[CLS]",
        "sep_token": "[SEP]",
        "mask_token": "[MASK]",
    }


@pytest.mark.parametrize("name", list(hf_export_models.MODELS))
def test_load_encoder_reads_the_export_back(name, tmp_path):
    """Every weight equal; a token classifier's or span labeler's export has no pooler (as HF's)."""
    model, _, _ = hf_export_models.build(name)
    directory = hf_export_models.export(name, str(tmp_path / name))
    encoder = model.encoder if name == "pretrainer" else (model if name == "encoder" else model.get_layer("encoder"))
    loaded = load_encoder(directory)
    no_pooler = name in ("token_classifier", "span_labeler")
    assert [w.path for w in loaded.weights] == [w.path for w in encoder.weights]
    for ours, theirs in zip(loaded.weights, encoder.weights):
        if not (no_pooler and ours.path.startswith("pooler/")):
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=ours.path)
    if name == "pretrainer":
        pretrainer = load_pretrainer(directory)
        for ours, theirs in zip(pretrainer.weights, model.weights):
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=ours.path)


def test_exporting_real_hugging_face_weights_gives_their_files_back(minilm_dir, tmp_path):
    """MiniLM (BertModel, transformers 4.8) and the tiny BertForPreTraining (transformers 5.23): loaded and
    exported again, the tensors are theirs, by name, bit for bit, and the configs agree."""
    for source, loader in ((minilm_dir, load_encoder), (str(TINY_HF), load_pretrainer)):
        out = str(tmp_path / os.path.basename(source))
        export_hf(loader(source), out, vocab=os.path.join(minilm_dir, "vocab.txt") if loader is load_encoder else None)
        original = load_file(os.path.join(source, "model.safetensors"))
        exported = load_file(os.path.join(out, "model.safetensors"))
        original = {k: v for k, v in original.items() if not k.endswith("position_ids")}
        assert sorted(exported) == sorted(original)
        for key, value in original.items():
            np.testing.assert_array_equal(exported[key], value, err_msg=key)
        theirs = json.loads(open(os.path.join(source, "config.json")).read())
        ours = json.loads(open(os.path.join(out, "config.json")).read())
        assert ours["architectures"] == theirs["architectures"]
        same_gelu = {"gelu_new": "gelu_pytorch_tanh"}
        for key in (
            "vocab_size",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "intermediate_size",
            "max_position_embeddings",
            "type_vocab_size",
            "layer_norm_eps",
            "hidden_act",
        ):
            assert ours[key] == same_gelu.get(theirs[key], theirs[key]), key
    tokenizer_config = json.loads((tmp_path / "model" / "tokenizer_config.json").read_text())
    assert tokenizer_config["do_lower_case"] is True and tokenizer_config["tokenizer_class"] == "BertTokenizer"
    assert (tmp_path / "model" / "vocab.txt").read_text() == open(os.path.join(minilm_dir, "vocab.txt")).read()


def classifier_run(directory, tiny_config, vocab_path, task_type="classification", **spec):
    """A fine-tuning run directory: model.keras (a 2-label classifier), task.json, vocab.txt (uncased)."""
    directory.mkdir()
    model = build_classifier(build_encoder(tiny_config.replace(vocab_size=30522)), 2)
    model.save(str(directory / artifacts.TASK_MODEL_FILE))
    artifacts.TaskSpec(task_type, lower_case=True, seq_length=32, labels=("neg", "pos"), **spec).save(
        str(directory / artifacts.TASK_SPEC_FILE)
    )
    Vocab.from_file(vocab_path).save(str(directory / "vocab.txt"))
    return model


def test_a_run_directory_exports_with_its_labels_vocab_and_casing(tiny_config, tmp_path, uncased_vocab_path):
    run = tmp_path / "run"
    model = classifier_run(run, tiny_config, uncased_vocab_path)
    out = export_hf(str(run), str(tmp_path / "hf"))
    hf_config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert hf_config["id2label"] == {"0": "neg", "1": "pos"} and hf_config["label2id"] == {"neg": 0, "pos": 1}
    assert hf_config["problem_type"] == "single_label_classification"
    assert json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())["do_lower_case"] is True
    assert sorted(os.listdir(out)) == [
        "config.json",
        "model.safetensors",
        "special_tokens_map.json",
        "tokenizer_config.json",
        "vocab.txt",
    ]

    with pytest.raises(FileExistsError, match="not empty"):
        export_hf(str(run), out)
    export_hf(model, out, overwrite=True, labels=("a", "b"))
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["id2label"] == {"0": "a", "1": "b"}
    assert sorted(os.listdir(out)) == ["config.json", "model.safetensors"]  # replaced whole


def test_kbl_export_target_hf(tiny_config, tmp_path, uncased_vocab_path, capsys):
    from keras_bert_lite.runners.errors import SettingsError
    from keras_bert_lite.runners.export import parse_args, run

    model = classifier_run(tmp_path / "run", tiny_config, uncased_vocab_path)
    flags = ["--model", str(tmp_path / "run"), "--model_base_path", str(tmp_path / "hf"), "--target", "hf"]
    assert run(parse_args(flags)) == str(tmp_path / "hf")
    assert "Hugging Face transformers" in capsys.readouterr().out
    hf_config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert hf_config["architectures"] == ["BertForSequenceClassification"]
    assert hf_config["id2label"] == {"0": "neg", "1": "pos"}
    loaded = load_encoder(str(tmp_path / "hf"))
    for ours, theirs in zip(loaded.weights, model.get_layer("encoder").weights):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=ours.path)
    tensors = load_file(str(tmp_path / "hf" / "model.safetensors"))
    np.testing.assert_array_equal(tensors["classifier.weight"], model.get_layer("logits").get_weights()[0].T)
    with pytest.raises(SettingsError, match="not empty"):
        run(parse_args(flags))
    with pytest.raises(SettingsError, match="contradicts the model"):
        run(parse_args([*flags[:-3], str(tmp_path / "hf2"), "--target", "hf", "--task_type", "span"]))


def test_export_errors_name_the_fix(tiny_config, tmp_path):
    model = build_classifier(tiny_config, 3)
    with pytest.raises(ValueError, match="2 labels"):
        export_hf(model, str(tmp_path / "a"), labels=("x", "y"))
    with pytest.raises(ValueError, match="contradicts the model"):
        export_hf(model, str(tmp_path / "b"), task_type="span")
    with pytest.raises(ValueError, match="vocab_size is 120"):
        export_hf(model, str(tmp_path / "c"), vocab=Vocab(hf_export_models.vocab_tokens(False)[:100]))
    unknown = Vocab(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *[f"{i}" for i in range(115)]])
    with pytest.raises(ValueError, match="casing is unknown"):
        export_hf(model, str(tmp_path / "d"), vocab=unknown)
    export_hf(model, str(tmp_path / "d"), vocab=unknown, lower_case=False)
    assert json.loads((tmp_path / "d" / "tokenizer_config.json").read_text())["do_lower_case"] is False
    assert not any(p.startswith(".") for p in os.listdir(tmp_path))  # no temporaries left


def test_a_multi_label_run_exports_as_multi_label_classification(tiny_config, tmp_path, uncased_vocab_path):
    classifier_run(tmp_path / "run", tiny_config, uncased_vocab_path, "multi_label", threshold=0.3)
    export_hf(str(tmp_path / "run"), str(tmp_path / "hf"))
    hf_config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert hf_config["problem_type"] == "multi_label_classification"
    assert hf_config["id2label"] == {"0": "neg", "1": "pos"}
    with pytest.raises(ValueError, match="task_type 'span' contradicts the model, which is a classification model"):
        export_hf(str(tmp_path / "run"), str(tmp_path / "hf2"), task_type="span")

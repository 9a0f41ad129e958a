"""The fill_mask export: a text-in SavedModel whose `fill_mask` signature (also serving_default) gives Hugging Face's
fill-mask pipeline tokens and probabilities (fill_mask_goldens.json) as dense tensors, padded per batch; audited for
stock TF Serving (export_saved_model refuses otherwise); kbl-export --task_type fill_mask from a pretraining run."""

import json

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite import BertConfig, fill_mask
from keras_bert_lite.artifacts import PRETRAINER_FILE, TaskSpec
from keras_bert_lite.checkpoints import load_masked_lm
from keras_bert_lite.export.exporter import export_saved_model
from keras_bert_lite.export.serving_module import ServingModule
from keras_bert_lite.models import build_encoder
from keras_bert_lite.runners import export as export_command
from keras_bert_lite.text import Vocab
from tests.conftest import GOLDEN_DIR

GOLDEN = json.loads((GOLDEN_DIR / "fill_mask_goldens.json").read_text(encoding="utf-8"))
MODEL = GOLDEN_DIR / "hf_tiny_masked_lm"
VOCAB = Vocab.from_file(MODEL / "vocab.txt")
CUT = "[MASK] " + "cat " * 70 + "[MASK]"  # its second mask lies past seq_length - 2 tokens


@pytest.fixture(scope="module")
def pretrainer():
    return load_masked_lm(str(MODEL))


@pytest.fixture(scope="module")
def served(pretrainer, tmp_path_factory):
    spec = TaskSpec("fill_mask", lower_case=True, seq_length=64)
    path = export_saved_model(pretrainer, spec, VOCAB, str(tmp_path_factory.mktemp("exports")))
    return tf.saved_model.load(path)


def test_the_signature_gives_the_pipelines_tokens_and_scores(served):
    assert {"fill_mask", "serving_default", "preprocess", "encode"} <= set(served.signatures)
    out = {k: v.numpy() for k, v in served.signatures["fill_mask"](text=tf.constant(GOLDEN["texts"])).items()}
    assert out["tokens"].shape == out["scores"].shape == out["token_ids"].shape == (9, 3, 5)
    assert out["mask_positions"].dtype == np.int32 and out["scores"].dtype == np.float32
    for row, masks in enumerate(GOLDEN["models"]["hf_tiny_masked_lm"]):
        for m, mask in enumerate(masks):
            assert out["token_ids"][row, m].tolist() == [p["token"] for p in mask]
            assert [t.decode() for t in out["tokens"][row, m]] == [p["token_str"] for p in mask]
            assert np.abs(out["scores"][row, m] - [p["score"] for p in mask]).max() <= 1e-5
        padding = {k: v[row, len(masks) :] for k, v in out.items()}
        assert (padding["mask_positions"] == -1).all() and (padding["token_ids"] == -1).all()
        assert (padding["tokens"] == b"").all() and (padding["scores"] == 0).all()
    assert out["mask_positions"][1, :2].tolist() == [4, 6]


def test_masks_past_seq_length_and_texts_without_one_are_padding(served):
    out = served.signatures["serving_default"](text=tf.constant([CUT, "no mask"]))
    assert out["mask_positions"].numpy().tolist() == [[1], [-1]]
    out = served.signatures["fill_mask"](text=tf.constant(["no mask", "[mask] is text"]))
    assert out["tokens"].shape == (2, 0, 5)


def test_preprocess_keeps_each_mask_as_the_mask_token(served):
    ids = served.signatures["preprocess"](text=tf.constant(["a[MASK]b"]))["input_word_ids"].numpy()[0]
    assert [VOCAB.tokens[i] for i in ids[:5]] == ["[CLS]", "a", "[MASK]", "b", "[SEP]"]


@pytest.mark.parametrize(
    "task_type, top_k, message",
    [
        (
            "encoder",
            0,
            r"task_type 'encoder' for model 'pretrainer': a BertPretrainer exports with task_type "
            r"'fill_mask'",
        ),
        ("fill_mask", 121, r"top_k 121 is more than the model's 120 tokens"),
    ],
)
def test_specs_the_pretrainer_cannot_serve_are_refused(pretrainer, task_type, top_k, message):
    with pytest.raises(ValueError, match=message):
        ServingModule(pretrainer, TaskSpec(task_type, lower_case=True, seq_length=64, top_k=top_k), VOCAB)


def test_fill_mask_needs_a_pretrainer():
    encoder = build_encoder(BertConfig(vocab_size=120, hidden_size=8, num_layers=1, num_heads=1, intermediate_size=8))
    with pytest.raises(ValueError, match=r"task_type 'fill_mask' for model 'encoder'.*only a BertPretrainer"):
        ServingModule(encoder, TaskSpec("fill_mask", lower_case=True, seq_length=64), VOCAB)


def pretraining_run(pretrainer, run):
    """What kbl-pretrain leaves that kbl-export reads: pretrainer.keras and the vocabulary."""
    run.mkdir()
    pretrainer.save(run / PRETRAINER_FILE)
    VOCAB.save(run / "vocab.txt")
    return run


def test_kbl_export_of_a_pretraining_run(pretrainer, tmp_path, capsys):
    run = pretraining_run(pretrainer, tmp_path / "run")
    export_command.main(
        [
            "--model",
            str(run),
            "--task_type",
            "fill_mask",
            "--top_k",
            "3",
            "--model_base_path",
            str(tmp_path / "exports"),
        ]
    )
    assert "signatures serving_default, preprocess, encode, fill_mask" in capsys.readouterr().out
    served = tf.saved_model.load(str(tmp_path / "exports" / "1"))
    out = served.signatures["fill_mask"](text=tf.constant([GOLDEN["texts"][0]]))
    expected = GOLDEN["models"]["hf_tiny_masked_lm"][0][0][:3]
    assert out["token_ids"].numpy()[0, 0].tolist() == [p["token"] for p in expected]
    spec = TaskSpec.load(str(tmp_path / "exports" / "1" / "assets.extra" / "task.json"))
    assert (spec.task_type, spec.top_k, spec.seq_length) == ("fill_mask", 3, 64)


def test_top_k_belongs_to_fill_mask(tmp_path, capsys):
    with pytest.raises(SystemExit):
        export_command.main(
            [
                "--model",
                "m",
                "--task_type",
                "classification",
                "--top_k",
                "3",
                "--model_base_path",
                str(tmp_path / "exports"),
            ]
        )
    assert "--top_k is a setting of --task_type fill_mask, not classification: drop it." in capsys.readouterr().err
    assert not (tmp_path / "exports").exists()


def test_kbl_export_for_hugging_face_writes_the_pretrainer_with_its_head(pretrainer, tmp_path):
    run = pretraining_run(pretrainer, tmp_path / "run")
    export_command.main(
        ["--model", str(run), "--task_type", "fill_mask", "--target", "hf", "--model_base_path", str(tmp_path / "hf")]
    )
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["architectures"] == ["BertForPreTraining"]
    fills = fill_mask(str(tmp_path / "hf"), GOLDEN["texts"][:2])
    assert [[list(f.token_ids) for f in masks] for masks in fills] == [
        [[p["token"] for p in mask] for mask in masks] for masks in GOLDEN["models"]["hf_tiny_masked_lm"][:2]
    ]

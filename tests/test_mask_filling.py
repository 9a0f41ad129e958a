"""kbl.fill_mask: Hugging Face's pipeline("fill-mask") tokens and probabilities (fill_mask_goldens.json, made by
tests/golden/make_fill_mask_goldens.py) from a BertForMaskedLM, a BertForPreTraining, an original TF1 checkpoint and
a pretraining run directory; checkpoints without a masked-LM head and texts without [MASK] refused by name."""

import json
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import keras_bert_lite as kbl
from keras_bert_lite.artifacts import PRETRAINER_FILE
from keras_bert_lite.checkpoints import CheckpointMismatchError, load_masked_lm
from keras_bert_lite.mask_filling import MaskFill
from keras_bert_lite.models import build_classifier, build_encoder
from keras_bert_lite.text import Vocab
from tests.conftest import GOLDEN_DIR
from tests.test_checkpoints import tiny_tf1_checkpoint  # noqa: F401  (a fixture)

GOLDEN = json.loads((GOLDEN_DIR / "fill_mask_goldens.json").read_text(encoding="utf-8"))
MASKED_LM = GOLDEN_DIR / "hf_tiny_masked_lm"
VOCAB = str(MASKED_LM / "vocab.txt")


def assert_as_pipeline(fills, expected):
    """Per text and mask: the pipeline's token ids and strings, and its scores to 1e-5."""
    assert [len(masks) for masks in fills] == [len(masks) for masks in expected]
    for ours, theirs in zip((f for masks in fills for f in masks), (m for masks in expected for m in masks)):
        assert list(ours.token_ids) == [p["token"] for p in theirs]
        assert list(ours.tokens) == [p["token_str"] for p in theirs]
        assert np.abs(np.array(ours.scores) - [p["score"] for p in theirs]).max() <= 1e-5


def test_a_bert_for_masked_lm_fills_as_the_pipeline_does():
    # The vocabulary beside the checkpoint; 9 texts in batches of 4: padding changes nothing.
    fills = kbl.fill_mask(str(MASKED_LM), GOLDEN["texts"], top_k=GOLDEN["top_k"], batch_size=4)
    assert_as_pipeline(fills, GOLDEN["models"]["hf_tiny_masked_lm"])


def test_a_bert_for_pretraining_and_its_tf1_checkpoint_fill_as_the_pipeline_does(tiny_tf1_checkpoint):  # noqa: F811
    expected = GOLDEN["models"]["hf_tiny_pretraining"]
    assert_as_pipeline(kbl.fill_mask(str(GOLDEN_DIR / "hf_tiny_pretraining"), GOLDEN["texts"], vocab=VOCAB), expected)
    assert_as_pipeline(kbl.fill_mask(str(tiny_tf1_checkpoint[0]), GOLDEN["texts"], vocab=VOCAB), expected)


def test_a_pretraining_run_directory_fills_with_its_vocabulary(tmp_path):
    load_masked_lm(str(MASKED_LM)).save(tmp_path / PRETRAINER_FILE)
    Vocab.from_file(VOCAB).save(tmp_path / "vocab.txt")
    build_encoder(kbl.BertConfig(vocab_size=120, hidden_size=8, num_layers=1, num_heads=1, intermediate_size=8)).save(
        tmp_path / "encoder.keras"
    )  # what kbl-pretrain leaves too: not the one used
    assert_as_pipeline(kbl.fill_mask(str(tmp_path), GOLDEN["texts"]), GOLDEN["models"]["hf_tiny_masked_lm"])


def test_one_text_gives_its_masks_and_positions_count_from_cls():
    fills = kbl.fill_mask(str(MASKED_LM), "Paris is the [MASK] of [MASK].", top_k=3)
    assert [f.position for f in fills] == [4, 6]  # [CLS] paris is the [MASK] of [MASK] . [SEP]
    assert all(isinstance(f, MaskFill) and len(f.tokens) == 3 for f in fills)
    assert fills[0].scores == tuple(sorted(fills[0].scores, reverse=True))


def test_a_model_object_needs_its_vocabulary():
    model = load_masked_lm(str(MASKED_LM))
    assert_as_pipeline(
        kbl.fill_mask(model, GOLDEN["texts"][:2], vocab=Vocab.from_file(VOCAB)),
        GOLDEN["models"]["hf_tiny_masked_lm"][:2],
    )
    with pytest.raises(ValueError, match=r"^a model object; pass vocab="):
        kbl.fill_mask(model, GOLDEN["texts"][:1])


def without_mlm_head(tensors):
    for key in [k for k in tensors if k.startswith("cls.predictions")]:
        del tensors[key]


def untied(tensors):
    shape = tensors["bert.embeddings.word_embeddings.weight"].shape
    tensors["cls.predictions.decoder.weight"] = np.ones(shape, np.float32)


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            without_mlm_head,
            r"the checkpoint \(BertForMaskedLM\) has no masked-LM head \(cls/predictions\); give a "
            r"pretraining run",
        ),
        (untied, r"its MLM decoder \(cls.predictions.decoder.weight\) is not tied to the word embeddings"),
    ],
)
def test_a_checkpoint_without_its_own_masked_lm_head_is_refused(tmp_path, edit, message):
    shutil.copytree(MASKED_LM, tmp_path / "hf")
    tensors = load_file(str(tmp_path / "hf" / "model.safetensors"))
    edit(tensors)
    save_file(tensors, str(tmp_path / "hf" / "model.safetensors"))
    with pytest.raises(CheckpointMismatchError, match=message):
        kbl.fill_mask(str(tmp_path / "hf"), ["a [MASK]"])


def test_a_fine_tuned_model_is_refused(tmp_path):
    encoder = build_encoder(
        kbl.BertConfig(vocab_size=120, hidden_size=8, num_layers=1, num_heads=1, intermediate_size=8)
    )
    build_classifier(encoder, num_classes=2).save(tmp_path / "model.keras")
    with pytest.raises(
        CheckpointMismatchError,
        match=r"model.keras holds a Functional .* which has no masked-LM "
        r"head; give a pretraining run",
    ):
        kbl.fill_mask(str(tmp_path), ["a [MASK]"], vocab=VOCAB)


@pytest.mark.parametrize(
    "texts, message",
    [
        (
            ["a [MASK]", "no mask here, only [mask]"],
            r"^texts\[1\] 'no mask here, only \[mask\]' holds no \[MASK\]: put "
            r"\[MASK\] where a token is to be predicted\.$",
        ),
        (
            ["[MASK] " + "cat " * 62],
            r"^texts\[0\] '\[MASK\] cat cat .*\.\.\.' has 63 tokens, more than the 62 the "
            r"model's 64 positions leave beside \[CLS\] and \[SEP\]: shorten it\.$",
        ),
    ],
)
def test_texts_the_model_cannot_fill_are_named(texts, message):
    with pytest.raises(ValueError, match=message):
        kbl.fill_mask(str(MASKED_LM), texts)


def test_top_k_batch_size_and_the_vocabulary_are_checked(tmp_path):
    with pytest.raises(ValueError, match=r"^top_k must be <= 120, got 121\.$"):
        kbl.fill_mask(str(MASKED_LM), ["a [MASK]"], top_k=121)
    with pytest.raises(ValueError, match=r"^batch_size must be >= 1, got 0\.$"):
        kbl.fill_mask(str(MASKED_LM), ["a [MASK]"], batch_size=0)
    assert len(kbl.fill_mask(str(MASKED_LM), ["a [MASK]"], top_k=120)[0][0].tokens) == 120
    shutil.copytree(GOLDEN_DIR / "hf_tiny_pretraining", tmp_path / "hf")
    with pytest.raises(ValueError, match=r"no vocab.txt or tokenizer.json beside it; pass vocab="):
        kbl.fill_mask(str(tmp_path / "hf"), ["a [MASK]"])
    (tmp_path / "small.txt").write_text("".join(t + "\n" for t in Vocab.from_file(VOCAB).tokens[:60]))
    with pytest.raises(ValueError, match=r"pass the vocabulary the model was trained with"):
        kbl.fill_mask(str(MASKED_LM), ["a [MASK]"], vocab=str(tmp_path / "small.txt"))

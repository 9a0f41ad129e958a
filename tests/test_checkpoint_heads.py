"""Pretraining heads a checkpoint lacks or holds otherwise: an MLM decoder not tied to the word embeddings is
refused where the MLM head is wanted as it was (ours is tied), tied with a warning where new heads are allowed,
and ignored for the encoder; a Hugging Face BertForMaskedLM (no pooler, no NSP head) continues pretraining with
those parts new, the rest loaded exactly."""

import logging
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from keras_bert_lite.checkpoints import CheckpointMismatchError, load_encoder, load_pretrainer
from tests.conftest import GOLDEN_DIR

TINY_HF = GOLDEN_DIR / "hf_tiny_pretraining"
INPUTS = ("input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions")


def edited_copy(tmp_path, edit):
    """A copy of the tiny HF BertForPreTraining directory with its tensors edited by `edit(tensors)`."""
    out = tmp_path / "hf"
    shutil.copytree(TINY_HF, out)
    tensors = load_file(str(out / "model.safetensors"))
    edit(tensors)
    save_file(tensors, str(out / "model.safetensors"))
    return str(out)


def outputs(model):
    golden = np.load(GOLDEN_DIR / "hf_tiny_pretraining.npz")
    return model({k: golden[k] for k in INPUTS}, training=False)


def test_an_untied_mlm_decoder_is_refused_or_tied_with_a_warning(tmp_path, caplog):
    def untie(tensors):
        shape = tensors["bert.embeddings.word_embeddings.weight"].shape
        tensors["cls.predictions.decoder.weight"] = np.random.default_rng(0).normal(size=shape).astype(np.float32)

    path = edited_copy(tmp_path, untie)
    with pytest.raises(
        CheckpointMismatchError,
        match=r"its MLM decoder \(cls.predictions.decoder.weight\) is not "
        r"tied to the word embeddings.*"
        r"part=\"pretrainer\", new_heads=True",
    ):
        load_pretrainer(path)
    with caplog.at_level(logging.WARNING):
        tied = load_pretrainer(path, new_heads=True)
    assert "the head uses the word embeddings and output bias instead" in caplog.text
    golden = np.load(GOLDEN_DIR / "hf_tiny_pretraining.npz")
    assert np.abs(outputs(tied)["mlm_logits"].numpy() - golden["mlm_logits"]).max() <= 1e-5
    caplog.clear()
    load_encoder(path)  # the encoder alone: the decoder does not matter
    assert "decoder" not in caplog.text


def test_a_tied_decoder_saved_twice_loads_as_it_is(tmp_path, caplog):
    def duplicate(tensors):
        tensors["cls.predictions.decoder.weight"] = tensors["bert.embeddings.word_embeddings.weight"].copy()
        tensors["cls.predictions.decoder.bias"] = tensors["cls.predictions.bias"].copy()

    with caplog.at_level(logging.WARNING):
        load_pretrainer(edited_copy(tmp_path, duplicate))
    assert "decoder" not in caplog.text


def test_a_masked_lm_checkpoint_continues_pretraining_with_a_new_pooler_and_nsp_head(tmp_path, caplog):
    def masked_lm(tensors):
        for key in (
            "bert.pooler.dense.weight",
            "bert.pooler.dense.bias",
            "cls.seq_relationship.weight",
            "cls.seq_relationship.bias",
        ):
            del tensors[key]

    path = edited_copy(tmp_path, masked_lm)
    with pytest.raises(
        CheckpointMismatchError,
        match=r"has no pooler and no next-sentence head \(a model saved "
        r"without them\); pass new_heads=True",
    ):
        load_pretrainer(path)
    with caplog.at_level(logging.WARNING):
        pretrainer = load_pretrainer(path, new_heads=True)
    assert "the checkpoint has no pooler and no next-sentence head; they start from scratch" in caplog.text
    golden = np.load(GOLDEN_DIR / "hf_tiny_pretraining.npz")
    assert np.abs(outputs(pretrainer)["mlm_logits"].numpy() - golden["mlm_logits"]).max() <= 1e-5

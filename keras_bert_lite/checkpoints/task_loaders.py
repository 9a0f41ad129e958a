"""Loaders for one use each, on `load`'s order: a masked-LM model (`fill_mask`), a text embedder, a run's model
with its task spec and vocabulary (`export`)."""

from __future__ import annotations

import os

import keras

from keras_bert_lite.artifacts import TASK_SPEC_FILE, TaskSpec, run_dir_of, vocab_beside
from keras_bert_lite.checkpoints.loader import load, pretrainer_holding
from keras_bert_lite.checkpoints.locate import locate
from keras_bert_lite.checkpoints.names import CheckpointMismatchError
from keras_bert_lite.checkpoints.readers import hf_architecture, read_checkpoint, read_keras
from keras_bert_lite.checkpoints.weights import absent_parts
from keras_bert_lite.config import BertConfig
from keras_bert_lite.hf_hub import resolve_model
from keras_bert_lite.models import BertPretrainer, build_embedder
from keras_bert_lite.models.embedder import is_embedder
from keras_bert_lite.sentence_transformers_files import EmbeddingSettings, read_embedding_settings

_MLM_SOURCES = (
    "a pretraining run (its pretrainer.keras), a Hugging Face BertForMaskedLM or BertForPreTraining, or "
    "an original TF1 checkpoint (bert_model.ckpt)"
)


def load_masked_lm(path: str, config: BertConfig | None = None, revision: str | None = None) -> BertPretrainer:
    """A BertPretrainer whose masked-LM head is the checkpoint's own, to predict masked tokens (`fill_mask`).

    Args:
        path: as for `load(path, "pretrainer")`, which reads the same file: a pretraining run directory or
            `.keras` pretrainer, a Hugging Face BertForPreTraining or BertForMaskedLM directory or Hub name, or an
            original TF1 checkpoint.
        config: overrides the config file found beside the weights.
        revision: the branch, tag or commit of a Hub model name.

    Returns:
        The pretrainer; a pooler or next-sentence head the checkpoint lacks (BertForMaskedLM) starts freshly
        initialised, silently: neither takes part in masked-LM predictions.

    Raises:
        CheckpointMismatchError: the checkpoint has no masked-LM head (a BertModel, a fine-tuned model), or an MLM
            decoder not tied to the word embeddings, whose predictions keras_bert_lite's tied head cannot give.
    """
    path = resolve_model(path, revision)
    fmt, location, config_path = locate(path, "pretrainer")
    if fmt == "keras":
        model = read_keras(location)
        if not isinstance(model, BertPretrainer):
            raise CheckpointMismatchError(
                f"{location} holds a {type(model).__name__} ({model.name!r}), which has no "
                f"masked-LM head; give {_MLM_SOURCES}."
            )
        return model
    config, tensors = read_checkpoint(path, config, untied_decoder="refuse")
    if "masked-LM head" in absent_parts(config, tensors, heads=True):
        kind = hf_architecture(config_path) if fmt == "hf" else "TF1 checkpoint"
        raise CheckpointMismatchError(
            f"{path}: the checkpoint ({kind or 'BertModel'}) has no masked-LM head "
            f"(cls/predictions); give {_MLM_SOURCES}."
        )
    return pretrainer_holding(path, config, tensors)[0]


def embedding_settings(path: str, revision: str | None = None) -> EmbeddingSettings | None:
    """The sentence-transformers settings (pooling, normalisation, longest input) of the checkpoint at `path` (a
    directory, `.zip` or Hub name, as for `load`); None where it has none (`sentence_transformers_files`)."""
    fmt, _, config_path = locate(resolve_model(path, revision), "encoder")
    return read_embedding_settings(os.path.dirname(config_path)) if fmt == "hf" else None


def load_embedder(path: str, settings: EmbeddingSettings | None = None, revision: str | None = None) -> keras.Model:
    """Builds a text embedder (`build_embedder`) with pretrained weights.

    Args:
        path: as for `load`; in a run directory, the file `load(path, "task")` reads. A `.keras` embedder (a
            run that trained one) is returned as saved. A sentence-transformers checkpoint (all-MiniLM-L6-v2)
            pools and normalises as its `modules.json` and `1_Pooling/config.json` say (`embedding_settings`), so
            its vectors are the ones `SentenceTransformer(path).encode(texts)` gives for texts within its
            `max_seq_length`; any other encoder pools by the masked mean.
        settings: overrides the checkpoint's pooling and normalisation.
        revision: the branch, tag or commit of a Hub model name.
    """
    path = resolve_model(path, revision)
    fmt, location, _ = locate(path, "task")
    if fmt == "keras":
        model = read_keras(location)
        if settings is None and is_embedder(model):
            return model
    settings = settings or embedding_settings(path) or EmbeddingSettings()
    return build_embedder(load(path), pooling=settings.pooling, normalize=settings.normalize)


def load_trained(path: str) -> tuple[keras.Model, TaskSpec | None, str | None]:
    """A run's directory or `.keras` file -> (its model, `load(path, "task")`; its `TaskSpec` (task.json) or None;
    the vocabulary beside it or None)."""
    spec_path = os.path.join(run_dir_of(path), TASK_SPEC_FILE)
    model = load(path, "task")
    return model, TaskSpec.load(spec_path) if os.path.exists(spec_path) else None, vocab_beside(path)

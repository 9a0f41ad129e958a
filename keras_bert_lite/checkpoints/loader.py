"""`load`, the one loader: a model, or a part of one, from any file keras_bert_lite reads, in one order.

`load_encoder`, `load_pretrainer`, `load_keras_file` (here) and `saving.load_model` are `load` with a part, kept
for code that calls them.
"""

from __future__ import annotations

import logging

import keras
import numpy as np

from keras_bert_lite.artifacts import model_files, require_keras_file
from keras_bert_lite.checkpoints.locate import locate
from keras_bert_lite.checkpoints.names import HEAD_PREFIXES, POOLER, CheckpointMismatchError
from keras_bert_lite.checkpoints.readers import hf_architecture, read_checkpoint, read_keras
from keras_bert_lite.checkpoints.weights import absent_parts, assign_weights, fill_fresh, is_encoder
from keras_bert_lite.config import BertConfig
from keras_bert_lite.hf_hub import resolve_model
from keras_bert_lite.models import BertPretrainer, build_encoder, build_pretrainer

logger = logging.getLogger(__name__)


def load(
    path: str,
    part: str = "encoder",
    *,
    config: BertConfig | None = None,
    new_heads: bool = False,
    revision: str | None = None,
    **kwargs,
) -> keras.Model:
    """Loads a model, or the part of one named by `part`, from any file keras_bert_lite reads.

    `path` is read as the first of these that it is:

    1. A Hugging Face Hub model name (`bert-base-uncased`, `google-bert/bert-base-uncased@<revision>`) or an
       original `.zip` archive: first made a local directory (`hf_hub.resolve_model`; HF_HUB_OFFLINE and
       HF_HUB_CACHE are honoured). A local path that exists always wins over a name.
    2. A `.keras` file: the model it holds.
    3. One of our run directories (`artifacts`): the `.keras` file of the part asked for (encoder.keras,
       pretrainer.keras, model.keras), else the first there of encoder.keras, pretrainer.keras, model.keras
       (`artifacts.model_files`).
    4. A Hugging Face directory: config.json and model.safetensors (or its shards), BertModel,
       BertForPreTraining, BertForMaskedLM or a fine-tuned BertFor... (whose task head is skipped).
    5. An original google-research/bert TF1 checkpoint: a directory (bert_config.json + bert_model.ckpt.*; of
       several checkpoints, the latest) or a checkpoint prefix.

    Part "task" reads our `.keras` files only (2 and 3). Checkpoints are read strictly: a variable nothing takes,
    a weight no variable fills, or a wrong shape raises `CheckpointMismatchError`, listing all of them.

    Args:
        path: a model name or path, as above.
        part: what to return. "encoder": the encoder (`build_encoder`), also of a saved task model or pretrainer;
            a checkpoint's pretraining heads are skipped, and a Hugging Face model saved without a pooler gets a
            freshly initialised one, as in transformers (with a warning). "pretrainer": a `BertPretrainer`, the
            encoder with its masked-LM and next-sentence heads. "task": the model a `.keras` file holds, as saved
            (a fine-tuning run's task model; a pretraining run's encoder).
        config: overrides the config file beside a checkpoint's weights (4 and 5).
        new_heads: "pretrainer" from a source without some of the heads (an encoder, a Hugging Face BertModel):
            start those freshly initialised instead of raising.
        revision: the branch, tag or commit of a Hub model name (or write `name@revision`).
        **kwargs: `keras.saving.load_model`'s own (`compile`, `safe_mode`), for `.keras` files.

    Returns:
        A `keras.Model`. An encoder takes `input_word_ids`, `input_mask` and `input_type_ids` (int32
        `[batch, seq]`) and gives `sequence_output` `[batch, seq, hidden]`, `pooled_output` `[batch, hidden]`
        and `encoder_outputs` (one `[batch, seq, hidden]` per layer); a pretrainer also takes
        `masked_lm_positions` `[batch, predictions]` and gives `mlm_logits` `[batch, predictions, vocab]` and
        `nsp_logits` `[batch, 2]`; a task model is as built (`build_classifier`, ...).

    Raises:
        FileNotFoundError: no such path or Hub model; for "task", no `.keras` file at `path`.
        InputFileError: files that are not a model keras_bert_lite reads; the message names the fix.
        CheckpointMismatchError: a checkpoint that does not match the model one to one.
        ValueError: an unknown part, or a pretrainer from a model without heads and `new_heads` False.
    """
    order = model_files(part)  # refuses an unknown part
    if part == "task":
        return read_keras(require_keras_file(str(path), order), **kwargs)
    path = resolve_model(path, revision)
    fmt, location, config_path = locate(path, part)
    if fmt == "keras":
        return _part_of(read_keras(location, **kwargs), part, new_heads, location)
    if part == "encoder":
        return _encoder_from_checkpoint(path, fmt, config_path, config)
    return _pretrainer_from_checkpoint(path, config, new_heads)


def _part_of(model: keras.Model, part: str, new_heads: bool, location: str) -> keras.Model:
    """The encoder or pretrainer `part` of a model read from the `.keras` file `location`."""
    if part == "pretrainer":
        if isinstance(model, BertPretrainer):
            return model
        if not new_heads:
            raise ValueError(
                f"{location} holds a {type(model).__name__}, not a BertPretrainer; pass "
                "new_heads=True to add freshly initialised MLM/NSP heads to its encoder."
            )
    encoder = model if is_encoder(model) else model.get_layer("encoder")
    return encoder if part == "encoder" else build_pretrainer(encoder)


def _encoder_from_checkpoint(path: str, fmt: str, config_path: str, config: BertConfig | None) -> keras.Model:
    """An encoder with the weights of the Hugging Face ("hf") or TF1 ("tf1") checkpoint at `path`."""
    config, tensors = read_checkpoint(path, config)
    heads = sorted(n for n in tensors if n.startswith(HEAD_PREFIXES))
    if heads:
        logger.info('%s: skipping %d pretraining-head variables (part="pretrainer" keeps them).', path, len(heads))
    encoder = build_encoder(config)
    tensors = {n: t for n, t in tensors.items() if n not in heads}
    if fmt == "hf" and not any(n in tensors for n in POOLER):
        logger.warning(
            "%s: the checkpoint (a %s) has no pooler; pooled_output comes from a freshly initialised one "
            "(as in transformers).",
            path,
            hf_architecture(config_path) or "BertModel",
        )
        fill_fresh(encoder, config, tensors)
    assign_weights(encoder, config, tensors, source=path)
    return encoder


def _pretrainer_from_checkpoint(path: str, config: BertConfig | None, new_heads: bool) -> BertPretrainer:
    """A pretrainer with the weights of the checkpoint at `path`; heads it lacks new only with `new_heads`."""
    config, tensors = read_checkpoint(path, config, untied_decoder="tie" if new_heads else "refuse")
    absent = list(absent_parts(config, tensors, heads=True))
    if absent and not new_heads:
        raise CheckpointMismatchError(
            f"{path}: the checkpoint has no {' and no '.join(absent)} (a model saved without them); pass "
            "new_heads=True to start them from scratch (kbl-pretrain --init does), or load the encoder alone "
            "(kbl.load(path))."
        )
    pretrainer, fresh = pretrainer_holding(path, config, tensors)
    if fresh:  # only with new_heads: refused above otherwise
        logger.warning(
            "%s: the checkpoint has no %s; %s from scratch.",
            path,
            " and no ".join(fresh),
            "they start" if len(fresh) > 1 else "it starts",
        )
    return pretrainer


def pretrainer_holding(
    path: str, config: BertConfig, tensors: dict[str, np.ndarray]
) -> tuple[BertPretrainer, list[str]]:
    """A new pretrainer with the checkpoint's `tensors` assigned, each part they lack entirely (`FRESH_PARTS`) as
    freshly initialised; returns it and the names of those parts."""
    pretrainer = build_pretrainer(config)
    fresh = fill_fresh(pretrainer, config, tensors)
    assign_weights(pretrainer, config, tensors, source=path)
    return pretrainer, fresh


def load_encoder(path: str, config: BertConfig | None = None, revision: str | None = None) -> keras.Model:
    """`load(path, "encoder", ...)`: an encoder with pretrained weights."""
    return load(path, "encoder", config=config, revision=revision)


def load_pretrainer(
    path: str, config: BertConfig | None = None, new_heads: bool = False, revision: str | None = None
) -> BertPretrainer:
    """`load(path, "pretrainer", ...)`: a BertPretrainer with pretrained encoder and MLM/NSP head weights."""
    return load(path, "pretrainer", config=config, new_heads=new_heads, revision=revision)


def load_keras_file(path: str, **kwargs) -> keras.Model:
    """`load(path, "task", **kwargs)`: the model one of our `.keras` files holds, as saved."""
    return load(path, "task", **kwargs)

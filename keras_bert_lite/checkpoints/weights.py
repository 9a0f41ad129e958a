"""Checkpoint arrays into and out of a model's variables, by the name table (`names`), strictly."""

from __future__ import annotations

import keras
import numpy as np

from keras_bert_lite.checkpoints.names import (
    FRESH_PARTS,
    CheckpointMismatchError,
    assemble,
    disassemble,
    hf_name,
    weight_sources,
)
from keras_bert_lite.config import BertConfig
from keras_bert_lite.models import BertPretrainer
from keras_bert_lite.models.introspect import encoder_config


def absent_parts(config: BertConfig, tensors: dict[str, np.ndarray], heads: bool) -> dict[str, dict[str, list[str]]]:
    """The `FRESH_PARTS` that `tensors` lack entirely (a part held in part is not one: assign_weights names what
    it misses): {part name: its entries of the name table}."""
    table = weight_sources(config, heads=heads)
    absent = {}
    for prefix, part in FRESH_PARTS.items():
        entries = {path: names for path, names in table.items() if names[0].startswith(prefix)}
        if entries and not any(name in tensors for names in entries.values() for name in names):
            absent[part] = entries
    return absent


def fill_fresh(model, config: BertConfig, tensors: dict[str, np.ndarray]) -> list[str]:
    """Adds to `tensors` the freshly initialised weights of `model` for each of `FRESH_PARTS` that the checkpoint
    lacks entirely; returns those parts' names."""
    variables = model_variables(model)
    absent = absent_parts(config, tensors, heads=isinstance(model, BertPretrainer))
    for entries in absent.values():
        for path, names in entries.items():
            value = keras.ops.convert_to_numpy(variables[path].value)
            tensors.update(zip(names, disassemble(path, value, len(names))))
    return list(absent)


def assign_weights(model: keras.Model, config: BertConfig, tensors: dict[str, np.ndarray], source: str) -> None:
    """Assigns TF1-named arrays to an encoder (or a BertPretrainer: encoder + heads), strictly."""
    is_pretrainer = isinstance(model, BertPretrainer)
    variables = model_variables(model)
    table = weight_sources(config, heads=is_pretrainer)
    missing, bad_shape, values = [], [], {}
    for path, names in table.items():
        absent = [n for n in names if n not in tensors]
        if absent:
            missing += absent
            continue
        value = assemble(path, [tensors[n] for n in names])
        if path not in variables:
            raise CheckpointMismatchError(f"model has no weight {path!r}: was it built by keras_bert_lite?")
        if tuple(value.shape) != tuple(variables[path].shape):
            bad_shape.append(
                f"{path} <- {names}: checkpoint {tuple(value.shape)}, model {tuple(variables[path].shape)}"
            )
        values[path] = value
    unassigned = sorted(set(variables) - set(table))
    problems = []
    if missing:
        problems.append(f"missing from the checkpoint: {missing}")
    if bad_shape:
        problems.append(f"shape mismatch: {bad_shape}")
    if unassigned:
        problems.append(f"model weights with no checkpoint source: {unassigned}")
    if problems:
        raise CheckpointMismatchError(f"{source}: " + "; ".join(problems))
    for path, value in values.items():
        variables[path].assign(value.astype(variables[path].dtype))


def model_variables(model: keras.Model) -> dict[str, keras.Variable]:
    """Our weight path -> variable, of an encoder or a BertPretrainer (encoder + MLM/NSP heads)."""
    is_pretrainer = isinstance(model, BertPretrainer)
    variables = {v.path: v for v in (model.encoder if is_pretrainer else model).weights}
    if is_pretrainer:
        variables.update({v.path: v for name in ("masked_lm", "next_sentence") for v in model.get_layer(name).weights})
    return variables


def hf_tensors(model: keras.Model, bert_prefix: bool | None = None) -> dict[str, np.ndarray]:
    """The weights of an encoder (or a BertPretrainer: + MLM/NSP heads) under the names and in the layout of
    Hugging Face transformers (`weight_sources` read backwards): the tensors of a BertModel (or
    BertForPreTraining) `model.safetensors`.

    Args:
        bert_prefix: prefix the encoder's names with `bert.`, as every HF model with a head does (default: for
            a BertPretrainer only).
    """
    is_pretrainer = isinstance(model, BertPretrainer)
    config = encoder_config(model.encoder if is_pretrainer else model)
    prefix = is_pretrainer if bert_prefix is None else bert_prefix
    variables = model_variables(model)
    out = {}
    for path, names in weight_sources(config, heads=is_pretrainer).items():
        value = keras.ops.convert_to_numpy(variables[path].value).astype(np.float32)
        for name, array in zip(names, disassemble(path, value, len(names))):
            key, transpose = hf_name(name, prefix)
            out[key] = np.ascontiguousarray(array.T if transpose else array)
    return out


def is_encoder(model: keras.Model) -> bool:
    """Whether `model` is an encoder (`build_encoder`), not a model holding one."""
    names = {layer.name for layer in model.layers}
    return "embeddings" in names and "layer_0" in names

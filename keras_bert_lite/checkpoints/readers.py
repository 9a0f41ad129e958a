"""The file readers: Hugging Face safetensors, original TF1 checkpoints, their config files, our `.keras` files.

A checkpoint is read into (config, {TF1 variable name: array in TF1 layout}) (`read_checkpoint`), whatever its
format, so that one name table (`names`) assembles either into a model (`weights.assign_weights`).
"""

from __future__ import annotations

import json
import logging
import os
import zipfile

import keras
import numpy as np
import tensorflow as tf
from safetensors import SafetensorError
from safetensors.numpy import load_file

from keras_bert_lite import layers, models, training  # noqa: F401  (their classes register with Keras on import)
from keras_bert_lite.checkpoints.locate import locate, safetensors_files, tf1_indexes
from keras_bert_lite.checkpoints.names import (
    HF_TASK_HEADS,
    IGNORED_HF,
    IGNORED_TF1,
    TF1_TASK_HEADS,
    TIED_DECODER,
    CheckpointMismatchError,
    hf_candidates,
    weight_sources,
)
from keras_bert_lite.config import BertConfig
from keras_bert_lite.hf_hub import resolve_model
from keras_bert_lite.utils.errors import InputFileError

logger = logging.getLogger(__name__)


def read_keras(path: str, **kwargs) -> keras.Model:
    """`keras.saving.load_model(path, **kwargs)` of one of our `.keras` files, every class it may hold registered,
    refusing a file that is no `.keras` archive first (Keras' own error for one, truncated or of another kind,
    says "File not found").

    Raises:
        FileNotFoundError: no such file.
        InputFileError: `path` is not a zip archive.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file.")
    if not zipfile.is_zipfile(path):
        raise InputFileError(
            f"{path}: not a .keras archive (truncated, or a file of another kind); use the file as Keras saved it."
        )
    return keras.saving.load_model(path, **kwargs)


def read_safetensors(paths: list[str]) -> dict[str, np.ndarray]:
    """The tensors of `paths`, the files of one checkpoint.

    Raises:
        InputFileError: a file is not readable, or two files hold the same tensor (two checkpoints).
    """
    tensors, origin = {}, {}
    for p in paths:
        try:
            part = load_file(p)
        except SafetensorError as error:
            raise InputFileError(
                f"{p}: not a readable safetensors file ({error}); download or save it again."
            ) from None
        twice = sorted(part.keys() & tensors.keys())
        if twice:
            raise InputFileError(
                f"{p}: {len(twice)} of its tensors ({twice[0]}, ...) are in {origin[twice[0]]} "
                "too: the directory holds more than one checkpoint; move out the one not to load, "
                "or name it model.safetensors."
            )
        tensors.update(part)
        origin.update(dict.fromkeys(part, p))
    return tensors


def read_tf1(prefix: str) -> dict[str, np.ndarray]:
    """The variables of a name-based TF1 checkpoint, optimizer slots and counters left out.

    Raises:
        InputFileError: an object-based TF2 checkpoint (`tf.train.Checkpoint`: TF Model Garden's BERT), whose
            variables are named by object path instead of google-research/bert's names.
    """
    reader = tf.train.load_checkpoint(prefix)
    names = reader.get_variable_to_shape_map()
    object_based = sorted(n for n in names if "/.ATTRIBUTES/" in n)
    if object_based:
        raise InputFileError(
            f"{prefix}: a TF2 object-based checkpoint (tf.train.Checkpoint, as TF Model Garden "
            f"saves BERT; e.g. {object_based[0]}), not one of google-research/bert's name-based "
            "TF1 checkpoints; pass the model's original checkpoint or its Hugging Face "
            "safetensors instead."
        )
    return {name: reader.get_tensor(name) for name in names if not IGNORED_TF1.search(name)}


def tf1_view_of_hf(hf: dict[str, np.ndarray], tf1_names: list[str]) -> tuple[dict[str, np.ndarray], set[str]]:
    """Finds each TF1 name among the HF tensors; returns {tf1_name: array in TF1 layout} and the keys used."""
    found, used = {}, set()
    for tf1_name in tf1_names:
        candidates, transpose = hf_candidates(tf1_name)
        for key in candidates:
            if key in hf:
                found[tf1_name] = hf[key].T if transpose else hf[key]
                used.add(key)
                break
    return found, used


def read_config(config_path: str | None, config: BertConfig | None, weights: str) -> BertConfig:
    """The model's config: `config` if given, else the file `config_path`, else the other config file name
    (`config.json`, `bert_config.json`) in its directory, read in the dialect of the `weights` ("tf1", "hf")
    unless it names its own (`BertConfig.from_json`).

    Raises:
        InputFileError: neither config file is beside the weights (the message says where to put one).
    """
    if config is not None:
        return config
    directory = os.path.dirname(config_path or "") or "."
    candidates = [config_path] if config_path else []
    candidates += [os.path.join(directory, n) for n in ("config.json", "bert_config.json")]
    found = next((c for c in candidates if os.path.isfile(c)), None)
    if found is None:
        raise InputFileError(
            f"{directory}: no config.json or bert_config.json beside the weights; put the model's "
            "config file there (in Python you may pass config=BertConfig(...))."
        )
    return BertConfig.from_json(found, weights)


def read_checkpoint(
    path: str, config: BertConfig | None = None, revision: str | None = None, untied_decoder: str = "ignore"
) -> tuple[BertConfig, dict[str, np.ndarray]]:
    """Reads a HF directory or TF1 checkpoint (or a Hub name or `.zip` archive of one: `hf_hub`) into
    (config, {TF1 variable name: array in TF1 layout}).

    Hugging Face fine-tuning heads (`HF_TASK_HEADS`) are skipped; any other checkpoint variable that has no
    place in a BERT pretrainer raises CheckpointMismatchError.

    Args:
        path: as for `load`, which reads the same files; our `.keras` files and run directories are refused
            (`load` reads them whole).
        config: overrides the config file beside the weights.
        revision: the branch, tag or commit of a Hub model name.
        untied_decoder: what to do with a Hugging Face MLM decoder that is not tied to the word embeddings
            (`tie_word_embeddings: false`), which keras_bert_lite's MLM head cannot hold (it is tied): "ignore" (the
            encoder alone is wanted), "refuse" (CheckpointMismatchError) or "tie" (a warning: the head uses the
            word embeddings).
    """
    path = resolve_model(path, revision)
    fmt, location, config_path = locate(path, "encoder")
    if fmt == "keras":
        raise ValueError(f"{path}: a .keras file holds a whole model; use kbl.load({path!r}, part=...).")
    config = read_config(config_path, config, fmt)
    expected = [n for names in weight_sources(config, heads=True).values() for n in names]
    if fmt == "tf1":
        if os.path.isdir(path):
            index = tf1_indexes(path)
            if len(index) > 1:  # locate took the latest
                logger.info(
                    "%s: %d TF1 checkpoints; reading %s, the latest (as the `checkpoint` file says).",
                    path,
                    len(index),
                    os.path.basename(location),
                )
        tensors = read_tf1(location)
        unused = sorted(set(tensors) - set(expected))
        task_heads = [n for n in unused if n in TF1_TASK_HEADS]
        if task_heads:
            logger.info("%s: skipping the fine-tuning head %s.", path, task_heads)
            unused = [n for n in unused if n not in task_heads]
            tensors = {n: t for n, t in tensors.items() if n not in task_heads}
    else:
        hf = read_safetensors(safetensors_files(location))
        tensors, used = tf1_view_of_hf(hf, expected)
        _check_tied_decoder(path, hf, untied_decoder)
        unused = sorted(k for k in set(hf) - used if k.removeprefix("bert.") not in IGNORED_HF)
        task_heads = [k for k in unused if k.split(".")[0] in HF_TASK_HEADS]
        if task_heads:
            logger.info("%s: skipping the fine-tuning head %s.", path, task_heads)
            unused = [k for k in unused if k not in task_heads]
    if unused:
        raise CheckpointMismatchError(
            f"{path}: {len(unused)} checkpoint variable(s) match no weight of a BERT model with "
            f"{config.num_layers} layers (is the config right?): {unused[:20]}{' ...' if len(unused) > 20 else ''}"
        )
    return config, tensors


def _check_tied_decoder(path: str, hf: dict[str, np.ndarray], action: str) -> None:
    """Refuses or warns about (`action`: read_checkpoint's `untied_decoder`) a HF MLM decoder that differs from
    the tensors keras_bert_lite ties it to."""
    untied = [
        decoder
        for decoder, tied in TIED_DECODER.items()
        if decoder in hf
        and not any(np.array_equal(hf[decoder], hf[key]) for key in (tied, "bert." + tied) if key in hf)
    ]
    if not untied or action == "ignore":
        return
    what = (
        f"{path}: its MLM decoder ({', '.join(untied)}) is not tied to the word embeddings and output bias "
        "(tie_word_embeddings false), and keras_bert_lite's masked-LM head is"
    )
    if action == "refuse":
        raise CheckpointMismatchError(
            f"{what}: its MLM predictions would not be the checkpoint's. Fine-tune it (kbl.load(path), the "
            "encoder; --init of a fine-tuning command), or continue pretraining with the decoder tied (kbl.load(path, "
            'part="pretrainer", new_heads=True); kbl-pretrain --init).'
        )
    logger.warning("%s: the head uses the word embeddings and output bias instead.", what)


def hf_architecture(config_path: str | None) -> str | None:
    """The first `architectures` entry of a Hugging Face config.json (`BertForMaskedLM`, ...); None if unknown."""
    try:
        with open(config_path, encoding="utf-8") as f:
            architectures = json.load(f).get("architectures") or [None]
    except (OSError, TypeError, ValueError, AttributeError):
        return None
    return architectures[0]

"""Locating a model's files: which `.keras` file of a run directory, which safetensors files, which TF1 checkpoint.

Nothing is read here but directory listings and a TF1 `checkpoint` state file; `readers` reads what `locate`
finds.
"""

from __future__ import annotations

import glob
import json
import os
import re

import tensorflow as tf

from keras_bert_lite.artifacts import keras_file_of, model_files
from keras_bert_lite.utils.errors import InputFileError

# Weight files of other frameworks, found where no readable checkpoint is: glob -> (what they are, what to do).
_CONVERT = (
    "save it as safetensors with transformers where torch is installed: <class>.from_pretrained(dir{})"
    ".save_pretrained(dir), <class> being config.json's architectures entry (BertModel, ...)."
)
_OTHER_WEIGHTS = {
    "pytorch_model*.bin": ("PyTorch", _CONVERT.format("")),
    "tf_model.h5": ("Hugging Face TensorFlow", _CONVERT.format(", from_tf=True")),
    "flax_model*.msgpack": ("Flax", _CONVERT.format(", from_flax=True")),
    "saved_model.pb*": (
        "TF SavedModel (TF Hub)",
        "pass the model's checkpoint instead: google-research/bert's "
        ".zip or directory (bert_config.json + bert_model.ckpt.*), or its Hugging Face name.",
    ),
}


def locate(path: str, part: str) -> tuple[str, str, str | None]:
    """Where the model at a local `path` is, and in which format.

    Args:
        path: a `.keras` file, one of our run directories, a Hugging Face directory, or a TF1 checkpoint directory
            or prefix.
        part: "encoder", "pretrainer" or "task": in a run directory, the `.keras` file read is the first of
            `artifacts.model_files(part)` there.

    Returns:
        (format: "keras", "hf" or "tf1"; the `.keras` file, HF directory or TF1 prefix; the config file to read
        beside the weights, None for "keras").

    Raises:
        InputFileError: no model at `path`, or one keras_bert_lite does not read; the message names the fix.
    """
    path = os.fspath(path)
    ours = keras_file_of(path, model_files(part))
    if ours:
        return "keras", ours, None
    if os.path.isdir(path):
        return _locate_in_directory(path)
    if os.path.exists(path + ".index"):
        return "tf1", path, os.path.join(os.path.dirname(path), "bert_config.json")
    prefix = re.sub(r"\.(index|data-\d+-of-\d+)$", "", path)
    if prefix != path and os.path.exists(prefix + ".index"):
        raise InputFileError(f"{path}: one file of a TF1 checkpoint; pass its prefix, {prefix}, or its directory.")
    if os.path.isfile(path) and path.endswith((".safetensors", ".json")):
        raise InputFileError(
            f"{path}: pass the directory that holds it (its weights and config.json), {os.path.dirname(path) or '.'}."
        )
    raise InputFileError(f"{path}: not a .keras file, a Hugging Face directory, a TF1 checkpoint directory or prefix.")


def _locate_in_directory(path: str) -> tuple[str, str, str]:
    """`locate` for a directory that is no run of ours: a Hugging Face model's, else a TF1 checkpoint's."""
    if safetensors_files(path):
        return "hf", path, os.path.join(path, "config.json")
    index = tf1_indexes(path)
    if index:
        prefix = index[0][: -len(".index")] if len(index) == 1 else _latest_tf1(path, index)
        return "tf1", prefix, os.path.join(path, "bert_config.json")
    for pattern, (kind, fix) in _OTHER_WEIGHTS.items():
        found = sorted(os.path.basename(f) for f in glob.glob(os.path.join(path, pattern)))
        if found:
            raise InputFileError(
                f"{path}: only {kind} weights ({', '.join(found)}), which keras_bert_lite does not read; {fix}"
            )
    raise InputFileError(
        f"{path}: no *.safetensors file and no TF1 checkpoint (*.index) found; a Hugging Face "
        "model needs its model.safetensors here (one published as pytorch_model.bin only: "
        f"{_CONVERT.format('')[:-1]}), an original one its bert_model.ckpt.* files."
    )


def _latest_tf1(path: str, index: list[str]) -> str:
    """The prefix of the latest of several TF1 checkpoints in `path` (a TF1 training directory keeps the last
    few): the one the `checkpoint` state file names (absolute, or relative to the directory; if the directory
    moved, its name here).

    Raises:
        InputFileError: no `checkpoint` file names one of them.
    """
    state = tf.train.get_checkpoint_state(path)
    name = state.model_checkpoint_path if state else ""
    candidates = [name, os.path.join(path, os.path.basename(name))] if name else []
    latest = next((c for c in candidates if os.path.exists(c + ".index")), None)
    if latest:  # read_checkpoint logs which one
        return latest
    prefixes = sorted(
        (os.path.basename(i)[: -len(".index")] for i in index),
        key=lambda n: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", n)],
    )
    raise InputFileError(
        f"{path}: {len(index)} TF1 checkpoints ({', '.join(prefixes)}) and no `checkpoint` "
        "file naming one of them as the latest; pass the one to load, e.g. "
        f"{os.path.join(path, prefixes[-1])}."
    )


def tf1_indexes(directory: str) -> list[str]:
    """The `.index` files of the TF1 checkpoints in `directory` (`*.ckpt*.index`, else any `*.index`)."""
    return glob.glob(os.path.join(directory, "*.ckpt*.index")) or glob.glob(os.path.join(directory, "*.index"))


def safetensors_files(directory: str) -> list[str]:
    """The safetensors files of a HF directory, chosen as transformers chooses them: `model.safetensors`, else the
    shards `model.safetensors.index.json` names, else every `*.safetensors` file (`read_safetensors` refuses a
    tensor found in two).

    Raises:
        InputFileError: the index is unreadable, or shards it names are missing.
    """
    single = os.path.join(directory, "model.safetensors")
    shard_index = os.path.join(directory, "model.safetensors.index.json")
    if os.path.isfile(single) or not os.path.exists(shard_index):
        return [single] if os.path.isfile(single) else sorted(glob.glob(os.path.join(directory, "*.safetensors")))
    try:
        with open(shard_index, encoding="utf-8") as f:
            named = sorted(set(json.load(f)["weight_map"].values()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise InputFileError(
            f"{shard_index}: not a readable safetensors index (a JSON object with a "
            f"weight_map; {type(error).__name__}: {error}); download it again."
        ) from None
    absent = [name for name in named if not os.path.exists(os.path.join(directory, name))]
    if absent:
        raise InputFileError(
            f"{directory}: {len(absent)} of the {len(named)} shard files that "
            f"model.safetensors.index.json names are missing: {', '.join(absent)}; "
            "download them again into this directory."
        )
    return [os.path.join(directory, name) for name in named]

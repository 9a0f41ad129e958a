"""Import pretrained weights: Hugging Face safetensors, original google-research/bert TF1 checkpoints, `.keras`.

One name table: every weight of our encoder and pretraining heads is described by the original TF1 variable
name(s) it comes from (`bert/encoder/layer_0/attention/self/query/kernel`, ...). Hugging Face names are derived
from those (`encoder.layer.0.attention.self.query.weight`, transposed), so both formats go through the same
assembly, and `hf_tensors` reads the same table backwards to export (`export.hf`). Loading is strict: a
checkpoint variable that nothing consumes, a weight that finds no variable, or a shape mismatch raises a
`CheckpointMismatchError` listing all of them.

A model argument may also be a Hugging Face Hub name or an original `.zip` archive (`hub_names.resolve_model`).
"""

from __future__ import annotations

import glob
import json
import logging
import os
import re

import keras
import numpy as np
import tensorflow as tf
from safetensors import SafetensorError
from safetensors.numpy import load_file

from keras_bert_lite.artifacts import ENCODER_FILE, PRETRAINER_FILE, TASK_MODEL_FILE, load_keras_file, model_file
from keras_bert_lite.config import BertConfig
from keras_bert_lite.hub_names import resolve_model
from keras_bert_lite.models import BertPretrainer, build_embedder, build_encoder, build_pretrainer
from keras_bert_lite.models.embedder import is_embedder
from keras_bert_lite.models.introspect import encoder_config
from keras_bert_lite.sentence_transformers_files import EmbeddingSettings, read_embedding_settings
from keras_bert_lite.utils.errors import InputFileError

logger = logging.getLogger(__name__)

# Variables that are not model weights: optimizer slots and step counters of released TF1 checkpoints, and
# Hugging Face buffers / duplicated tied tensors.
_IGNORED_TF1 = re.compile(r"(^|/)(global_step|adam_[mv]|Adam(_\d+)?|Momentum|beta[12]_power|bad_steps|loss_scale"
                          r"|good_steps|current_loss_scale)($|/)")
_IGNORED_HF = {"embeddings.position_ids", "cls.predictions.decoder.weight", "cls.predictions.decoder.bias"}
_HEAD_PREFIXES = ("cls/predictions/", "cls/seq_relationship/")
# The fine-tuning heads of Hugging Face's BertFor{SequenceClassification,MultipleChoice,TokenClassification}
# ("classifier") and BertForQuestionAnswering ("qa_outputs"): skipped by load_encoder, written by export.hf.
HF_TASK_HEADS = ("classifier", "qa_outputs")
# The fine-tuning heads of google-research/bert's run_classifier.py and run_squad.py: skipped as well.
TF1_TASK_HEADS = ("output_weights", "output_bias", "cls/squad/output_weights", "cls/squad/output_bias")
_POOLER = ("bert/pooler/dense/kernel", "bert/pooler/dense/bias")
# Parts a checkpoint may lack entirely, which load_pretrainer(new_heads=True) starts from scratch (TF1 name prefixes).
_FRESH_PARTS = {"bert/pooler/": "pooler", "cls/predictions/": "masked-LM head",
                "cls/seq_relationship/": "next-sentence head"}
# Weight files of other frameworks, found where no readable checkpoint is: glob -> (what they are, what to do).
_CONVERT = ("save it as safetensors with transformers where torch is installed: <class>.from_pretrained(dir{})"
            ".save_pretrained(dir), <class> being config.json's architectures entry (BertModel, ...).")
_OTHER_WEIGHTS = {
    "pytorch_model*.bin": ("PyTorch", _CONVERT.format("")),
    "tf_model.h5": ("Hugging Face TensorFlow", _CONVERT.format(", from_tf=True")),
    "flax_model*.msgpack": ("Flax", _CONVERT.format(", from_flax=True")),
    "saved_model.pb*": ("TF SavedModel (TF Hub)", "pass the model's checkpoint instead: google-research/bert's "
                        ".zip or directory (bert_config.json + bert_model.ckpt.*), or its Hugging Face name."),
}
# Hugging Face's MLM decoder and what keras_bert_lite's MLM head ties it to (HF files hold both, or only the latter).
_TIED_DECODER = {"cls.predictions.decoder.weight": "embeddings.word_embeddings.weight",
                 "cls.predictions.decoder.bias": "cls.predictions.bias"}


class CheckpointMismatchError(ValueError):
    """The checkpoint and the model do not match one to one; the message lists every difference."""


# --------------------------------------------------------------------------- the name table
def _weight_sources(config: BertConfig, heads: bool) -> dict[str, list[str]]:
    """Our weight path -> the original TF1 variable names it is assembled from (in TF1 layout)."""
    table = {
        "embeddings/word_embeddings": ["bert/embeddings/word_embeddings"],
        "embeddings/position_embeddings": ["bert/embeddings/position_embeddings"],
        "embeddings/token_type_embeddings": ["bert/embeddings/token_type_embeddings"],
        "embeddings/layer_norm/gamma": ["bert/embeddings/LayerNorm/gamma"],
        "embeddings/layer_norm/beta": ["bert/embeddings/LayerNorm/beta"],
    }
    for i in range(config.num_layers):
        ours, theirs = f"layer_{i}", f"bert/encoder/layer_{i}"
        for kind in ("kernel", "bias"):
            # Fused [H, 3H] projection = query | key | value along the output axis.
            table[f"{ours}/attention/qkv_{kind}"] = [f"{theirs}/attention/self/{p}/{kind}"
                                                     for p in ("query", "key", "value")]
            table[f"{ours}/attention/output_{kind}"] = [f"{theirs}/attention/output/dense/{kind}"]
            table[f"{ours}/intermediate/{kind}"] = [f"{theirs}/intermediate/dense/{kind}"]
            table[f"{ours}/output/{kind}"] = [f"{theirs}/output/dense/{kind}"]
        for ln_ours, ln_theirs in (("attention_layer_norm", "attention/output/LayerNorm"),
                                   ("output_layer_norm", "output/LayerNorm")):
            table[f"{ours}/{ln_ours}/gamma"] = [f"{theirs}/{ln_theirs}/gamma"]
            table[f"{ours}/{ln_ours}/beta"] = [f"{theirs}/{ln_theirs}/beta"]
    table["pooler/dense/kernel"] = ["bert/pooler/dense/kernel"]
    table["pooler/dense/bias"] = ["bert/pooler/dense/bias"]
    if heads:
        table.update({
            "masked_lm/transform/kernel": ["cls/predictions/transform/dense/kernel"],
            "masked_lm/transform/bias": ["cls/predictions/transform/dense/bias"],
            "masked_lm/layer_norm/gamma": ["cls/predictions/transform/LayerNorm/gamma"],
            "masked_lm/layer_norm/beta": ["cls/predictions/transform/LayerNorm/beta"],
            "masked_lm/output_bias": ["cls/predictions/output_bias"],
            # TF1 stores the NSP weights as [2, H]; our Dense kernel is [H, 2] (see _assemble).
            "next_sentence/dense/kernel": ["cls/seq_relationship/output_weights"],
            "next_sentence/dense/bias": ["cls/seq_relationship/output_bias"],
        })
    return table


def _assemble(path: str, arrays: list[np.ndarray]) -> np.ndarray:
    if path == "next_sentence/dense/kernel":
        return arrays[0].T
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays, axis=-1)


def _disassemble(path: str, value: np.ndarray, count: int) -> list[np.ndarray]:
    """The inverse of `_assemble`: our weight -> its `count` TF1 arrays."""
    if path == "next_sentence/dense/kernel":
        return [value.T]
    return [value] if count == 1 else np.split(value, count, axis=-1)


def _hf_candidates(tf1_name: str) -> tuple[list[str], bool]:
    """Hugging Face key candidates for a TF1 variable name, and whether HF stores it transposed."""
    name = tf1_name
    name = re.sub(r"layer_(\d+)", r"layer.\1", name).replace("/", ".")
    transpose = False
    if name.endswith(".kernel"):
        name, transpose = name[: -len(".kernel")] + ".weight", True   # torch Linear: [out, in]
    elif name.endswith("_embeddings"):
        name += ".weight"
    elif name == "cls.predictions.output_bias":
        name = "cls.predictions.bias"
    elif name.startswith("cls.seq_relationship.output_"):
        name = name.replace("output_weights", "weight").replace("output_bias", "bias")  # [2, H] like TF1
    names = [name]
    if name.endswith(".gamma") or name.endswith(".beta"):            # older HF files kept gamma/beta
        names.insert(0, name.replace(".gamma", ".weight").replace(".beta", ".bias"))
    if name.startswith("bert."):                                      # BertModel files have no "bert." prefix
        names += [n[len("bert."):] for n in list(names)]
    return names, transpose


def _hf_name(tf1_name: str, bert_prefix: bool) -> tuple[str, bool]:
    """The Hugging Face key today's transformers writes for a TF1 variable name (`LayerNorm.weight`, not
    `gamma`; `bert.` prefixed in models with heads), and whether it is stored transposed."""
    candidates, transpose = _hf_candidates(tf1_name)
    name = candidates[0]
    if not bert_prefix and name.startswith("bert."):
        name = name[len("bert."):]
    return name, transpose


# --------------------------------------------------------------------------- readers
def _read_safetensors(paths: list[str]) -> dict[str, np.ndarray]:
    """The tensors of `paths`, the files of one checkpoint.

    Raises:
        InputFileError: a file is not readable, or two files hold the same tensor (two checkpoints).
    """
    tensors, origin = {}, {}
    for p in paths:
        try:
            part = load_file(p)
        except SafetensorError as error:
            raise InputFileError(f"{p}: not a readable safetensors file ({error}); download or save it "
                                 "again.") from None
        twice = sorted(part.keys() & tensors.keys())
        if twice:
            raise InputFileError(f"{p}: {len(twice)} of its tensors ({twice[0]}, ...) are in {origin[twice[0]]} "
                                 "too: the directory holds more than one checkpoint; move out the one not to load, "
                                 "or name it model.safetensors.")
        tensors.update(part)
        origin.update(dict.fromkeys(part, p))
    return tensors


def _safetensors_files(directory: str) -> list[str]:
    """The safetensors files of a HF directory, chosen as transformers chooses them: `model.safetensors`, else the
    shards `model.safetensors.index.json` names, else every `*.safetensors` file (`_read_safetensors` refuses a
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
        raise InputFileError(f"{shard_index}: not a readable safetensors index (a JSON object with a "
                             f"weight_map; {type(error).__name__}: {error}); download it again.") from None
    absent = [name for name in named if not os.path.exists(os.path.join(directory, name))]
    if absent:
        raise InputFileError(f"{directory}: {len(absent)} of the {len(named)} shard files that "
                             f"model.safetensors.index.json names are missing: {', '.join(absent)}; "
                             "download them again into this directory.")
    return [os.path.join(directory, name) for name in named]


def _read_tf1(prefix: str) -> dict[str, np.ndarray]:
    """The variables of a name-based TF1 checkpoint, optimizer slots and counters left out.

    Raises:
        InputFileError: an object-based TF2 checkpoint (`tf.train.Checkpoint`: TF Model Garden's BERT), whose
            variables are named by object path instead of google-research/bert's names.
    """
    reader = tf.train.load_checkpoint(prefix)
    names = reader.get_variable_to_shape_map()
    object_based = sorted(n for n in names if "/.ATTRIBUTES/" in n)
    if object_based:
        raise InputFileError(f"{prefix}: a TF2 object-based checkpoint (tf.train.Checkpoint, as TF Model Garden "
                             f"saves BERT; e.g. {object_based[0]}), not one of google-research/bert's name-based "
                             "TF1 checkpoints; pass the model's original checkpoint or its Hugging Face "
                             "safetensors instead.")
    return {name: reader.get_tensor(name) for name in names if not _IGNORED_TF1.search(name)}


def _tf1_view_of_hf(hf: dict[str, np.ndarray], tf1_names: list[str]) -> tuple[dict[str, np.ndarray], set[str]]:
    """Finds each TF1 name among the HF tensors; returns {tf1_name: array in TF1 layout} and the keys used."""
    found, used = {}, set()
    for tf1_name in tf1_names:
        candidates, transpose = _hf_candidates(tf1_name)
        for key in candidates:
            if key in hf:
                found[tf1_name] = hf[key].T if transpose else hf[key]
                used.add(key)
                break
    return found, used


# --------------------------------------------------------------------------- locating files
def _locate(path: str, prefer: tuple[str, ...] = (ENCODER_FILE, PRETRAINER_FILE, TASK_MODEL_FILE)
            ) -> tuple[str, str, str | None]:
    """Returns (format, weights path(s) / prefix, config json path or None) for a user-given path; in one of our
    run directories, the first `.keras` file of `prefer`."""
    path = os.fspath(path)
    ours = model_file(path, prefer)
    if ours:
        return "keras", ours, None
    if os.path.isdir(path):
        if _safetensors_files(path):
            return "hf", path, os.path.join(path, "config.json")
        index = _tf1_indexes(path)
        if len(index) == 1:
            return "tf1", index[0][: -len(".index")], os.path.join(path, "bert_config.json")
        if index:
            # Several checkpoints (a TF1 training directory keeps the last few): the latest, which the `checkpoint`
            # state file names (absolute, or relative to the directory; if the directory moved, its name here).
            state = tf.train.get_checkpoint_state(path)
            name = state.model_checkpoint_path if state else ""
            candidates = [name, os.path.join(path, os.path.basename(name))] if name else []
            latest = next((c for c in candidates if os.path.exists(c + ".index")), None)
            if latest:                          # read_checkpoint logs which one (once; loaders call _locate twice)
                return "tf1", latest, os.path.join(path, "bert_config.json")
            prefixes = sorted((os.path.basename(i)[: -len(".index")] for i in index),
                              key=lambda n: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", n)])
            raise InputFileError(f"{path}: {len(index)} TF1 checkpoints ({', '.join(prefixes)}) and no `checkpoint` "
                                 "file naming one of them as the latest; pass the one to load, e.g. "
                                 f"{os.path.join(path, prefixes[-1])}.")
        for pattern, (kind, fix) in _OTHER_WEIGHTS.items():
            found = sorted(os.path.basename(f) for f in glob.glob(os.path.join(path, pattern)))
            if found:
                raise InputFileError(f"{path}: only {kind} weights ({', '.join(found)}), which keras_bert_lite "
                                     f"does not read; {fix}")
        raise InputFileError(f"{path}: no *.safetensors file and no TF1 checkpoint (*.index) found; a Hugging Face "
                             "model needs its model.safetensors here (one published as pytorch_model.bin only: "
                             f"{_CONVERT.format('')[:-1]}), an original one its bert_model.ckpt.* files.")
    if os.path.exists(path + ".index"):
        return "tf1", path, os.path.join(os.path.dirname(path), "bert_config.json")
    prefix = re.sub(r"\.(index|data-\d+-of-\d+)$", "", path)
    if prefix != path and os.path.exists(prefix + ".index"):
        raise InputFileError(f"{path}: one file of a TF1 checkpoint; pass its prefix, {prefix}, or its directory.")
    if os.path.isfile(path) and path.endswith((".safetensors", ".json")):
        raise InputFileError(f"{path}: pass the directory that holds it (its weights and config.json), "
                             f"{os.path.dirname(path) or '.'}.")
    raise InputFileError(f"{path}: not a .keras file, a Hugging Face directory, a TF1 checkpoint directory or "
                         "prefix.")


def _tf1_indexes(directory: str) -> list[str]:
    """The `.index` files of the TF1 checkpoints in `directory` (`*.ckpt*.index`, else any `*.index`)."""
    return glob.glob(os.path.join(directory, "*.ckpt*.index")) or glob.glob(os.path.join(directory, "*.index"))


def _read_config(config_path: str | None, config: BertConfig | None, weights: str) -> BertConfig:
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
        raise InputFileError(f"{directory}: no config.json or bert_config.json beside the weights; put the model's "
                             "config file there (in Python you may pass config=BertConfig(...)).")
    return BertConfig.from_json(found, weights)


# --------------------------------------------------------------------------- public API
def read_checkpoint(path: str, config: BertConfig | None = None, revision: str | None = None,
                    untied_decoder: str = "ignore") -> tuple[BertConfig, dict[str, np.ndarray]]:
    """Reads a HF directory or TF1 checkpoint (or a Hub name or `.zip` archive of one: `hub_names`) into
    (config, {TF1 variable name: array in TF1 layout}).

    Hugging Face fine-tuning heads (`HF_TASK_HEADS`) are skipped; any other checkpoint variable that has no
    place in a BERT pretrainer raises CheckpointMismatchError.

    Args:
        untied_decoder: what to do with a Hugging Face MLM decoder that is not tied to the word embeddings
            (`tie_word_embeddings: false`), which keras_bert_lite's MLM head cannot hold (it is tied): "ignore" (the
            encoder alone is wanted), "refuse" (CheckpointMismatchError) or "tie" (a warning: the head uses the
            word embeddings).
    """
    path = resolve_model(path, revision)
    fmt, location, config_path = _locate(path)
    if fmt == "keras":
        raise ValueError(f"{path}: a .keras file holds a whole model; use kbl.load_model or load_encoder.")
    config = _read_config(config_path, config, fmt)
    expected = [n for names in _weight_sources(config, heads=True).values() for n in names]
    if fmt == "tf1":
        if os.path.isdir(path):
            index = _tf1_indexes(path)
            if len(index) > 1:                  # _locate took the latest
                logger.info("%s: %d TF1 checkpoints; reading %s, the latest (as the `checkpoint` file says).", path,
                            len(index), os.path.basename(location))
        tensors = _read_tf1(location)
        unused = sorted(set(tensors) - set(expected))
        task_heads = [n for n in unused if n in TF1_TASK_HEADS]
        if task_heads:
            logger.info("%s: skipping the fine-tuning head %s.", path, task_heads)
            unused = [n for n in unused if n not in task_heads]
            tensors = {n: t for n, t in tensors.items() if n not in task_heads}
    else:
        hf = _read_safetensors(_safetensors_files(location))
        tensors, used = _tf1_view_of_hf(hf, expected)
        _check_tied_decoder(path, hf, untied_decoder)
        unused = sorted(k for k in set(hf) - used if k.removeprefix("bert.") not in _IGNORED_HF)
        task_heads = [k for k in unused if k.split(".")[0] in HF_TASK_HEADS]
        if task_heads:
            logger.info("%s: skipping the fine-tuning head %s.", path, task_heads)
            unused = [k for k in unused if k not in task_heads]
    if unused:
        raise CheckpointMismatchError(
            f"{path}: {len(unused)} checkpoint variable(s) match no weight of a BERT model with "
            f"{config.num_layers} layers (is the config right?): {unused[:20]}{' ...' if len(unused) > 20 else ''}")
    return config, tensors


def _check_tied_decoder(path: str, hf: dict[str, np.ndarray], action: str) -> None:
    """Refuses or warns about (`action`: read_checkpoint's `untied_decoder`) a HF MLM decoder that differs from
    the tensors keras_bert_lite ties it to."""
    untied = [decoder for decoder, tied in _TIED_DECODER.items() if decoder in hf and not any(
        np.array_equal(hf[decoder], hf[key]) for key in (tied, "bert." + tied) if key in hf)]
    if not untied or action == "ignore":
        return
    what = (f"{path}: its MLM decoder ({', '.join(untied)}) is not tied to the word embeddings and output bias "
            "(tie_word_embeddings false), and keras_bert_lite's masked-LM head is")
    if action == "refuse":
        raise CheckpointMismatchError(
            f"{what}: its MLM predictions would not be the checkpoint's. Fine-tune it (load_encoder; --init of a "
            "fine-tuning command), or continue pretraining with the decoder tied (load_pretrainer(new_heads=True); "
            "kbl-pretrain --init).")
    logger.warning("%s: the head uses the word embeddings and output bias instead.", what)


def _absent_parts(config: BertConfig, tensors: dict[str, np.ndarray], heads: bool
                  ) -> dict[str, dict[str, list[str]]]:
    """The `_FRESH_PARTS` that `tensors` lack entirely (a part held in part is not one: assign_weights names what
    it misses): {part name: its entries of the name table}."""
    table = _weight_sources(config, heads=heads)
    absent = {}
    for prefix, part in _FRESH_PARTS.items():
        entries = {path: names for path, names in table.items() if names[0].startswith(prefix)}
        if entries and not any(name in tensors for names in entries.values() for name in names):
            absent[part] = entries
    return absent


def _fill_fresh(model, config: BertConfig, tensors: dict[str, np.ndarray]) -> list[str]:
    """Adds to `tensors` the freshly initialised weights of `model` for each of `_FRESH_PARTS` that the checkpoint
    lacks entirely; returns those parts' names."""
    variables = _variables(model)
    absent = _absent_parts(config, tensors, heads=isinstance(model, BertPretrainer))
    for entries in absent.values():
        for path, names in entries.items():
            value = keras.ops.convert_to_numpy(variables[path].value)
            tensors.update(zip(names, _disassemble(path, value, len(names))))
    return list(absent)


def assign_weights(model: keras.Model, config: BertConfig, tensors: dict[str, np.ndarray], source: str) -> None:
    """Assigns TF1-named arrays to an encoder (or a BertPretrainer: encoder + heads), strictly."""
    is_pretrainer = isinstance(model, BertPretrainer)
    variables = _variables(model)
    table = _weight_sources(config, heads=is_pretrainer)
    missing, bad_shape, values = [], [], {}
    for path, names in table.items():
        absent = [n for n in names if n not in tensors]
        if absent:
            missing += absent
            continue
        value = _assemble(path, [tensors[n] for n in names])
        if path not in variables:
            raise CheckpointMismatchError(f"model has no weight {path!r}: was it built by keras_bert_lite?")
        if tuple(value.shape) != tuple(variables[path].shape):
            bad_shape.append(f"{path} <- {names}: checkpoint {tuple(value.shape)}, model "
                             f"{tuple(variables[path].shape)}")
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


def _variables(model: keras.Model) -> dict[str, keras.Variable]:
    """Our weight path -> variable, of an encoder or a BertPretrainer (encoder + MLM/NSP heads)."""
    is_pretrainer = isinstance(model, BertPretrainer)
    variables = {v.path: v for v in (model.encoder if is_pretrainer else model).weights}
    if is_pretrainer:
        variables.update({v.path: v for name in ("masked_lm", "next_sentence")
                          for v in model.get_layer(name).weights})
    return variables


def hf_tensors(model: keras.Model, bert_prefix: bool | None = None) -> dict[str, np.ndarray]:
    """The weights of an encoder (or a BertPretrainer: + MLM/NSP heads) under the names and in the layout of
    Hugging Face transformers (`_weight_sources` read backwards): the tensors of a BertModel (or
    BertForPreTraining) `model.safetensors`.

    Args:
        bert_prefix: prefix the encoder's names with `bert.`, as every HF model with a head does (default: for
            a BertPretrainer only).
    """
    is_pretrainer = isinstance(model, BertPretrainer)
    config = encoder_config(model.encoder if is_pretrainer else model)
    prefix = is_pretrainer if bert_prefix is None else bert_prefix
    variables = _variables(model)
    out = {}
    for path, names in _weight_sources(config, heads=is_pretrainer).items():
        value = keras.ops.convert_to_numpy(variables[path].value).astype(np.float32)
        for name, array in zip(names, _disassemble(path, value, len(names))):
            key, transpose = _hf_name(name, prefix)
            out[key] = np.ascontiguousarray(array.T if transpose else array)
    return out


def load_encoder(path: str, config: BertConfig | None = None, revision: str | None = None) -> keras.Model:
    """Builds an encoder with pretrained weights.

    Args:
        path: a Hugging Face directory (`config.json` + `*.safetensors`, BertModel or BertForPreTraining names;
            a fine-tuned BertFor... model's head is skipped), an original google-research/bert directory
            (`bert_config.json` + `bert_model.ckpt.*`), checkpoint prefix or `.zip` archive, a `.keras` file of
            any keras_bert_lite model (its encoder is returned), a keras_bert_lite run directory (pretraining or
            fine-tuning: `artifacts`), or a Hugging Face Hub model name (`bert-base-uncased`,
            `google-bert/bert-base-uncased@<revision>`: `hub_names`; honours HF_HUB_OFFLINE and HF_HUB_CACHE).
            A local path wins over a name.
        config: overrides the config file found beside the weights.
        revision: the branch, tag or commit of a Hub model name (or write `name@revision`).

    Returns:
        The encoder (see `build_encoder`). Pretraining-head variables in the checkpoint are skipped; anything
        else that does not match raises CheckpointMismatchError. A Hugging Face model saved without a pooler
        (BertForTokenClassification, BertForQuestionAnswering, BertForMaskedLM, BertModel(add_pooling_layer=False))
        gets a freshly initialised one, as transformers gives it (with a warning).
    """
    path = resolve_model(path, revision)
    fmt, location, config_path = _locate(path)
    if fmt == "keras":
        model = load_keras_file(location)
        return model if _is_encoder(model) else model.get_layer("encoder")
    config, tensors = read_checkpoint(path, config)
    heads = sorted(n for n in tensors if n.startswith(_HEAD_PREFIXES))
    if heads:
        logger.info("%s: skipping %d pretraining-head variables (use load_pretrainer to keep them).", path,
                    len(heads))
    encoder = build_encoder(config)
    tensors = {n: t for n, t in tensors.items() if n not in heads}
    if fmt == "hf" and not any(n in tensors for n in _POOLER):
        logger.warning("%s: the checkpoint (a %s) has no pooler; pooled_output comes from a freshly initialised one "
                       "(as in transformers).", path, _hf_architecture(config_path) or "BertModel")
        _fill_fresh(encoder, config, tensors)
    assign_weights(encoder, config, tensors, source=path)
    return encoder


def _hf_architecture(config_path: str | None) -> str | None:
    try:
        with open(config_path, encoding="utf-8") as f:
            architectures = json.load(f).get("architectures") or [None]
    except (OSError, TypeError, ValueError, AttributeError):
        return None
    return architectures[0]


def load_pretrainer(path: str, config: BertConfig | None = None, new_heads: bool = False,
                    revision: str | None = None) -> BertPretrainer:
    """Builds a BertPretrainer with pretrained encoder and MLM/NSP head weights.

    Args:
        path: as for `load_encoder`; a pretraining run directory gives its `pretrainer.keras` (heads included).
        config: overrides the config file found beside the weights.
        new_heads: if the checkpoint has no pretraining heads (e.g. a HF BertModel), start them freshly
            initialised instead of raising.
        revision: the branch, tag or commit of a Hub model name (or write `name@revision`).
    """
    path = resolve_model(path, revision)
    fmt, location, _ = _locate(path, prefer=(PRETRAINER_FILE, ENCODER_FILE, TASK_MODEL_FILE))
    if fmt == "keras":
        model = load_keras_file(location)
        if isinstance(model, BertPretrainer):
            return model
        if not new_heads:
            raise ValueError(f"{path} holds a {type(model).__name__}, not a BertPretrainer; pass new_heads=True "
                             "to add freshly initialised MLM/NSP heads to its encoder.")
        return build_pretrainer(model if _is_encoder(model) else model.get_layer("encoder"))
    config, tensors = read_checkpoint(path, config, untied_decoder="tie" if new_heads else "refuse")
    absent = list(_absent_parts(config, tensors, heads=True))
    if absent and not new_heads:
        raise CheckpointMismatchError(
            f"{path}: the checkpoint has no {' and no '.join(absent)} (a model saved without them); pass "
            "new_heads=True to start them from scratch (kbl-pretrain --init does), or load_encoder for the encoder.")
    pretrainer, fresh = _pretrainer_holding(path, config, tensors)
    if fresh:                                   # only with new_heads: refused above otherwise
        logger.warning("%s: the checkpoint has no %s; %s from scratch.", path, " and no ".join(fresh),
                       "they start" if len(fresh) > 1 else "it starts")
    return pretrainer


def _pretrainer_holding(path: str, config: BertConfig, tensors: dict[str, np.ndarray]
                        ) -> tuple[BertPretrainer, list[str]]:
    """A new pretrainer with the checkpoint's `tensors` assigned, each part they lack entirely (`_FRESH_PARTS`) as
    freshly initialised; returns it and the names of those parts."""
    pretrainer = build_pretrainer(config)
    fresh = _fill_fresh(pretrainer, config, tensors)
    assign_weights(pretrainer, config, tensors, source=path)
    return pretrainer, fresh


_MLM_SOURCES = ("a pretraining run (its pretrainer.keras), a Hugging Face BertForMaskedLM or BertForPreTraining, or "
                "an original TF1 checkpoint (bert_model.ckpt)")


def load_masked_lm(path: str, config: BertConfig | None = None, revision: str | None = None) -> BertPretrainer:
    """A BertPretrainer whose masked-LM head is the checkpoint's own, to predict masked tokens (`fill_mask`).

    Args:
        path: as for `load_pretrainer`: a pretraining run directory or `.keras` pretrainer, a Hugging Face
            BertForPreTraining or BertForMaskedLM directory or Hub name, or an original TF1 checkpoint.
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
    fmt, location, config_path = _locate(path, prefer=(PRETRAINER_FILE, TASK_MODEL_FILE, ENCODER_FILE))
    if fmt == "keras":
        model = load_keras_file(location)
        if not isinstance(model, BertPretrainer):
            raise CheckpointMismatchError(f"{location} holds a {type(model).__name__} ({model.name!r}), which has no "
                                          f"masked-LM head; give {_MLM_SOURCES}.")
        return model
    config, tensors = read_checkpoint(path, config, untied_decoder="refuse")
    if "masked-LM head" in _absent_parts(config, tensors, heads=True):
        kind = _hf_architecture(config_path) if fmt == "hf" else "TF1 checkpoint"
        raise CheckpointMismatchError(f"{path}: the checkpoint ({kind or 'BertModel'}) has no masked-LM head "
                                      f"(cls/predictions); give {_MLM_SOURCES}.")
    return _pretrainer_holding(path, config, tensors)[0]


def embedding_settings(path: str, revision: str | None = None) -> EmbeddingSettings | None:
    """The sentence-transformers settings (pooling, normalisation, longest input) of the checkpoint at `path` (a
    directory, `.zip` or Hub name, as for `load_encoder`); None where it has none (`sentence_transformers_files`)."""
    fmt, _, config_path = _locate(resolve_model(path, revision))
    return read_embedding_settings(os.path.dirname(config_path)) if fmt == "hf" else None


def load_embedder(path: str, settings: EmbeddingSettings | None = None, revision: str | None = None) -> keras.Model:
    """Builds a text embedder (`build_embedder`) with pretrained weights.

    Args:
        path: as for `load_encoder`. A `.keras` embedder (a run that trained one) is returned as saved. A
            sentence-transformers checkpoint (all-MiniLM-L6-v2) pools and normalises as its `modules.json` and
            `1_Pooling/config.json` say (`embedding_settings`), so its vectors are the ones
            `SentenceTransformer(path).encode(texts)` gives for texts within its `max_seq_length`; any other
            encoder pools by the masked mean.
        settings: overrides the checkpoint's pooling and normalisation.
        revision: the branch, tag or commit of a Hub model name.
    """
    path = resolve_model(path, revision)
    fmt, location, _ = _locate(path, prefer=(TASK_MODEL_FILE, ENCODER_FILE, PRETRAINER_FILE))
    if fmt == "keras":
        model = load_keras_file(location)
        if settings is None and is_embedder(model):
            return model
    settings = settings or embedding_settings(path) or EmbeddingSettings()
    return build_embedder(load_encoder(path), pooling=settings.pooling, normalize=settings.normalize)


def _is_encoder(model: keras.Model) -> bool:
    names = {layer.name for layer in model.layers}
    return "embeddings" in names and "layer_0" in names

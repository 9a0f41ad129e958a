"""sentence-transformers' files beside a checkpoint: how its authors turn token vectors into a text's vector.

    modules.json                 the pipeline: Transformer, then Pooling (its `path`), then Normalize (optional)
    1_Pooling/config.json        pooling_mode_cls_token / _mean_tokens / _max_tokens / _mean_sqrt_len_tokens
    sentence_bert_config.json    max_seq_length: the longest input in tokens (longer ones are cut)

`read_embedding_settings` reads them (a checkpoint without modules.json has none); `write_embedding_settings`
writes them beside an exported model, so that `SentenceTransformer(directory)` loads it with the same pooling.
This module is the one owner of these files.
"""

from __future__ import annotations

import dataclasses
import json
import os

from keras_bert_lite.layers.pooling import POOLING_MODES
from keras_bert_lite.utils.errors import InputFileError, read_utf8
from keras_bert_lite.utils.files import atomic_write_text

MODULES_FILE = "modules.json"
SETTINGS_FILE = "sentence_bert_config.json"
_MODULE = "sentence_transformers.models."
_MODE_KEYS = {mode: f"pooling_mode_{'cls_token' if mode == 'cls' else mode + '_tokens'}" for mode in POOLING_MODES}
_UNSUPPORTED_KEYS = ("pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken")


@dataclasses.dataclass(frozen=True)
class EmbeddingSettings:
    """How token vectors become a text's vector (`build_embedder`'s arguments).

    Attributes:
        pooling: the pooling modes, joined in this order (`layers.SentencePooling`).
        normalize: L2-normalise the result.
        max_seq_length: the longest input in tokens; 0: the model's position table.
    """

    pooling: tuple[str, ...] = ("mean",)
    normalize: bool = False
    max_seq_length: int = 0


def _read_json(path: str):
    try:
        return json.loads(read_utf8(path))
    except ValueError as error:
        raise InputFileError(f"{path}: not valid JSON ({error}); restore the file the model came with.") from None


def _pooling_modes(path: str) -> tuple[str, ...]:
    """The pooling modes a `1_Pooling/config.json` turns on, in sentence-transformers' order."""
    config = _read_json(path)
    unsupported = [key for key in _UNSUPPORTED_KEYS if config.get(key)]
    modes = tuple(mode for mode in POOLING_MODES if config.get(_MODE_KEYS[mode]))
    if unsupported or not modes:
        raise InputFileError(
            f"{path}: pooling {unsupported or 'with no mode on'} is not supported; keras_bert_lite "
            f"pools with {', '.join(_MODE_KEYS.values())}."
        )
    return modes


def read_embedding_settings(directory: str) -> EmbeddingSettings | None:
    """The settings of the sentence-transformers checkpoint in `directory`; None without a `modules.json`.

    Raises:
        InputFileError: a file is malformed, or the pipeline holds a module other than Transformer, Pooling and
            Normalize (e.g. a Dense projection), which keras_bert_lite does not build.
    """
    path = os.path.join(directory, MODULES_FILE)
    if not os.path.isfile(path):
        return None
    modules = {module.get("type", "").removeprefix(_MODULE): module for module in _read_json(path)}
    other = sorted(set(modules) - {"Transformer", "Pooling", "Normalize"})
    if other or "Pooling" not in modules:
        raise InputFileError(
            f"{path}: the modules {other or ['(no Pooling)']} are not supported; keras_bert_lite "
            "builds Transformer, Pooling and Normalize."
        )
    modes = _pooling_modes(os.path.join(directory, modules["Pooling"]["path"], "config.json"))
    settings_path = os.path.join(directory, SETTINGS_FILE)
    length = _read_json(settings_path).get("max_seq_length") if os.path.isfile(settings_path) else None
    return EmbeddingSettings(modes, "Normalize" in modules, int(length or 0))


def write_embedding_settings(directory: str, settings: EmbeddingSettings, dimension: int) -> None:
    """Writes sentence-transformers' files for `settings` into `directory` (beside the exported weights).

    Args:
        directory: the exported model's directory.
        settings: the pooling (in sentence-transformers' order, `POOLING_MODES`'), normalisation and longest input.
        dimension: the token vectors' size (the pooling config's `word_embedding_dimension`).

    Raises:
        ValueError: the pooling modes are in another order, which sentence-transformers cannot express.
    """
    if list(settings.pooling) != sorted(settings.pooling, key=POOLING_MODES.index):
        raise ValueError(
            f"pooling {list(settings.pooling)}: sentence-transformers joins modes in the order "
            f"{list(POOLING_MODES)}; build the embedder with them in that order."
        )
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": _MODULE + "Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": _MODULE + "Pooling"},
    ]
    if settings.normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": _MODULE + "Normalize"})
    pooling = {
        "word_embedding_dimension": dimension,
        **{key: mode in settings.pooling for mode, key in _MODE_KEYS.items()},
    }
    os.makedirs(os.path.join(directory, "1_Pooling"), exist_ok=True)
    atomic_write_text(os.path.join(directory, MODULES_FILE), json.dumps(modules, indent=2) + "\n")
    atomic_write_text(os.path.join(directory, "1_Pooling", "config.json"), json.dumps(pooling, indent=2) + "\n")
    atomic_write_text(
        os.path.join(directory, SETTINGS_FILE),
        json.dumps({"max_seq_length": settings.max_seq_length, "do_lower_case": False}, indent=2) + "\n",
    )

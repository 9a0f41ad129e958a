"""BertConfig: the hyperparameters of a BERT encoder, presets, and JSON in the three dialects users have.

Dialects:
  * ours: `BertConfig.to_json()` / `BertConfig.from_json()` — the field names below.
  * original google-research/bert `bert_config.json` — `num_hidden_layers`, `num_attention_heads`,
    `hidden_dropout_prob`, ...; its `"gelu"` is the tanh approximation (modeling.py), i.e. our `gelu_approx`.
  * Hugging Face `config.json` (`"model_type": "bert"`) — same names as the original plus `layer_norm_eps`;
    its `"gelu"` is the exact erf GELU, `"gelu_new"`/`"gelu_pytorch_tanh"` the tanh approximation.

The two reference dialects are told apart by content, never by file name (`_reference_dialect`): a key only
Hugging Face writes (`_HF_KEYS`: `model_type`, `architectures`, `transformers_version`, ..., or `layer_norm_eps`)
makes it HF's; a file with the original's keys alone is an original bert_config.json, however it is named (one
renamed config.json still means tanh by "gelu"), unless the weights beside it are HF's.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

from keras_bert_lite.utils.deprecation import warn_renamed
from keras_bert_lite.utils.errors import InputFileError, read_utf8
from keras_bert_lite.utils.files import atomic_write_text

ACTIVATIONS = ("gelu", "gelu_approx", "relu")

# name -> (num_layers, hidden_size, num_heads); intermediate_size is 4 * hidden_size, vocab 30522.
_PRESET_SHAPES = {
    "tiny": (2, 128, 2),
    "mini": (4, 256, 4),
    "small": (4, 512, 8),
    "medium": (8, 512, 8),
    "base": (12, 768, 12),
    "large": (24, 1024, 16),
}
PRESETS = tuple(_PRESET_SHAPES)  # the preset names, smallest first

# Original bert_config.json / HF config.json key -> our field.
_REFERENCE_KEYS = {
    "vocab_size": "vocab_size",
    "hidden_size": "hidden_size",
    "num_hidden_layers": "num_layers",
    "num_attention_heads": "num_heads",
    "intermediate_size": "intermediate_size",
    "hidden_act": "hidden_act",
    "hidden_dropout_prob": "hidden_dropout",
    "attention_probs_dropout_prob": "attention_dropout",
    "max_position_embeddings": "max_position_embeddings",
    "type_vocab_size": "type_vocab_size",
    "initializer_range": "initializer_range",
    "layer_norm_eps": "layer_norm_eps",
}
# The keys that tell a reference dialect from ours (a HF config.json may leave out any key with HF's default).
_REFERENCE_ONLY_KEYS = set(_REFERENCE_KEYS) - set(_REFERENCE_KEYS.values())
# Keys only Hugging Face writes (transformers' PretrainedConfig and BertConfig fields), besides layer_norm_eps
# (ours too): google-research/bert's bert_config.json has none of them, and every config.json that transformers
# has saved since 2020 has model_type.
_HF_KEYS = {
    "model_type",
    "architectures",
    "transformers_version",
    "pad_token_id",
    "position_embedding_type",
    "use_cache",
    "is_decoder",
    "classifier_dropout",
    "torch_dtype",
    "gradient_checkpointing",
    "_name_or_path",
}
# Activation names per dialect. The original repo's "gelu" is the tanh form; HF's is exact. HF's other names of
# the same two functions come first: the last name of each is the one to_reference_dict writes.
_ORIGINAL_ACT = {"gelu": "gelu_approx", "relu": "relu"}
_HF_ACT = {
    "gelu_python": "gelu",
    "gelu_fast": "gelu_approx",
    "gelu_accurate": "gelu_approx",
    "gelu": "gelu",
    "gelu_new": "gelu_approx",
    "gelu_pytorch_tanh": "gelu_approx",
    "relu": "relu",
}


@dataclasses.dataclass(frozen=True)
class BertConfig:
    """Hyperparameters of a BERT encoder (names as in the paper).

    Attributes:
        vocab_size: WordPiece vocabulary size.
        hidden_size: width H of every layer.
        num_layers: number of Transformer blocks L.
        num_heads: attention heads A; must divide hidden_size.
        intermediate_size: width of the feed-forward inner layer (4H in the paper).
        hidden_act: "gelu" (exact erf), "gelu_approx" (tanh, the original BERT code) or "relu".
        hidden_dropout: dropout on embeddings and on each sub-layer output.
        attention_dropout: dropout on attention probabilities.
        max_position_embeddings: longest sequence the position table covers.
        type_vocab_size: number of segment ids (2 in every released checkpoint).
        initializer_range: stddev of the truncated-normal initializer.
        layer_norm_eps: LayerNorm epsilon (1e-12 in released checkpoints).
    """

    vocab_size: int = 30522
    hidden_size: int = 768
    num_layers: int = 12
    num_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout: float = 0.1
    attention_dropout: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12

    def __post_init__(self):
        for name in (
            "vocab_size",
            "hidden_size",
            "num_layers",
            "num_heads",
            "intermediate_size",
            "max_position_embeddings",
            "type_vocab_size",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"BertConfig.{name} must be a positive integer, got {value!r}.")
        if self.hidden_size % self.num_heads:
            raise ValueError(
                f"BertConfig.hidden_size ({self.hidden_size}) must be divisible by num_heads "
                f"({self.num_heads}); e.g. hidden_size={self.num_heads * max(1, self.hidden_size // self.num_heads)}."
            )
        if self.hidden_act not in ACTIVATIONS:
            raise ValueError(f"BertConfig.hidden_act must be one of {ACTIVATIONS}, got {self.hidden_act!r}.")
        for name in ("hidden_dropout", "attention_dropout", "initializer_range", "layer_norm_eps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"BertConfig.{name} must be a number, got {value!r}.")
        for name in ("hidden_dropout", "attention_dropout"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ValueError(f"BertConfig.{name} must be in [0, 1), got {value!r}.")
        for name in ("initializer_range", "layer_norm_eps"):
            if not getattr(self, name) > 0:
                raise ValueError(f"BertConfig.{name} must be positive, got {getattr(self, name)!r}.")

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_heads

    def replace(self, **changes) -> "BertConfig":
        """Returns a copy with `changes` applied (validated)."""
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------------ presets
    @classmethod
    def of_size(cls, name: str, **overrides) -> "BertConfig":
        """The sizes of a preset: the configuration alone, no weights (a model built from it starts random;
        `kbl.load` reads trained weights).

        Args:
            name: one of `PRESETS`: tiny, mini, small, medium, base, large (Turc et al. 2019 / Devlin et al. 2018
                sizes).
            **overrides: other fields to set (`vocab_size`, `hidden_act`, ...).

        Raises:
            ValueError: an unknown name (the message lists the presets), or an invalid override.
        """
        if name not in _PRESET_SHAPES:
            raise ValueError(f"Unknown preset {name!r}; choose one of {sorted(_PRESET_SHAPES)}.")
        layers, hidden, heads = _PRESET_SHAPES[name]
        return cls(num_layers=layers, hidden_size=hidden, num_heads=heads, intermediate_size=4 * hidden, **overrides)

    @classmethod
    def from_preset(cls, name: str, **overrides) -> "BertConfig":
        """Deprecated (it returns sizes only, while KerasHub's `from_preset` loads weights): `of_size`."""
        warn_renamed("BertConfig.from_preset", "BertConfig.of_size")
        return cls.of_size(name, **overrides)

    # ------------------------------------------------------------------ our JSON
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any], source: str = "config") -> "BertConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise InputFileError(f"{source}: unknown BertConfig field(s) {unknown}; known fields: {sorted(known)}.")
        return cls._checked(source, **values)

    def to_json(self, path: str | os.PathLike) -> None:
        """Writes our JSON dialect atomically."""
        atomic_write_text(path, json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")

    @classmethod
    def from_json(cls, path: str | os.PathLike, weights: str | None = None) -> "BertConfig":
        """Reads any of the three dialects (ours, original bert_config.json, HF config.json).

        The two reference dialects read `"gelu"` differently (tanh against erf), so the dialect is the file's
        content's (`_reference_dialect`), not its name's: a bert_config.json renamed config.json stays original.

        Args:
            path: the JSON file.
            weights: the dialect of the weights beside it ("tf1" original, "hf" HF), for a reference config
                whose keys are the original's alone.
        """
        path = os.fspath(path)
        try:
            values = json.loads(read_utf8(path))
        except json.JSONDecodeError as e:
            raise InputFileError(f"{path}:{e.lineno}: not valid JSON ({e.msg}).") from None
        if not isinstance(values, dict):
            raise InputFileError(f"{path}: expected a JSON object of config fields.")
        if set(values) & (_HF_KEYS | _REFERENCE_ONLY_KEYS):
            return cls.from_reference_dict(values, dialect=_reference_dialect(values, weights), source=path)
        return cls.from_dict(values, source=path)

    # ------------------------------------------------------------------ reference dialects
    @classmethod
    def from_reference_dict(cls, values: dict[str, Any], dialect: str, source: str = "config") -> "BertConfig":
        """Reads an original (`dialect="original"`) or Hugging Face (`"hf"`) BERT config dict."""
        if dialect not in ("original", "hf"):
            raise ValueError(f"dialect must be 'original' or 'hf', got {dialect!r}.")
        _check_architecture(values, source)
        kwargs = {ours: values[theirs] for theirs, ours in _REFERENCE_KEYS.items() if theirs in values}
        acts = _ORIGINAL_ACT if dialect == "original" else _HF_ACT
        act = kwargs.get("hidden_act", "gelu")
        if not isinstance(act, str) or act not in acts:
            raise InputFileError(f"{source}: hidden_act {act!r} is not supported; known: {sorted(acts)}.")
        kwargs["hidden_act"] = acts[act]
        return cls._checked(source, **kwargs)

    @classmethod
    def _checked(cls, source: str, **kwargs) -> "BertConfig":
        """`cls(**kwargs)`, whose validation errors name `source`, the file the values came from."""
        try:
            return cls(**kwargs)
        except ValueError as error:
            raise InputFileError(f"{source}: {error}") from None

    def to_reference_dict(self, dialect: str) -> dict[str, Any]:
        """The config as an original `bert_config.json` (`"original"`) or HF `config.json` (`"hf"`) dict."""
        if dialect == "original" and self.hidden_act == "gelu":
            raise ValueError(
                "The original BERT code has no exact-erf GELU ('gelu' there is the tanh form); "
                "use hidden_act='gelu_approx' to write an original bert_config.json."
            )
        inverse = {v: k for k, v in (_ORIGINAL_ACT if dialect == "original" else _HF_ACT).items()}
        out = {theirs: getattr(self, ours) for theirs, ours in _REFERENCE_KEYS.items()}
        out["hidden_act"] = inverse[self.hidden_act]
        if dialect == "hf":
            out.update(model_type="bert", architectures=["BertModel"], pad_token_id=0)
        else:
            out.pop("layer_norm_eps")
        return out


def _reference_dialect(values: dict[str, Any], weights: str | None) -> str:
    """ "hf" for a config with a key only Hugging Face writes (`_HF_KEYS`); else the dialect of its weights
    ("hf" for HF's); else "original": the original's keys alone are a bert_config.json, whatever the file's name."""
    if set(values) & (_HF_KEYS | {"layer_norm_eps"}) or weights == "hf":
        return "hf"
    return "original"


def _check_architecture(values: dict[str, Any], source: str) -> None:
    """Refuses a reference config whose model computes something a keras_bert_lite encoder does not: another
    model_type, relative position embeddings, or a causal decoder (HF `is_decoder`).

    Raises:
        InputFileError: naming `source`, the key and what to do.
    """
    if values.get("model_type", "bert") != "bert":
        raise InputFileError(f"{source}: model_type is {values['model_type']!r}; only 'bert' is supported.")
    if values.get("position_embedding_type", "absolute") != "absolute":
        raise InputFileError(
            f"{source}: position_embedding_type {values['position_embedding_type']!r} "
            "is not supported (only 'absolute')."
        )
    if values.get("is_decoder", False) is not False:
        raise InputFileError(
            f"{source}: is_decoder is {values['is_decoder']!r}: Hugging Face runs this model "
            "as a causal decoder (each token attends only to earlier ones), which a keras_bert_lite "
            "encoder is not; to use its weights as a bidirectional encoder, set is_decoder to "
            "false in the file."
        )

"""Whether a vocabulary is uncased (lower-case, accents stripped) or cased: a property of the vocabulary.

A vocabulary is only right with the normalisation it was built with, so its casing is read from beside it,
never asked of the user again:

1. `tokenizer_config.json` in the vocabulary's directory (`do_lower_case`, as Hugging Face writes it and as
   `Vocab.save` writes it);
2. a Hugging Face `tokenizer.json` (its `BertNormalizer`'s `lowercase`);
3. the directory name of Google's original checkpoints (`uncased_L-12_H-768_A-12`, `multi_cased_...`);
4. else the tokens themselves: a vocabulary built from lower-cased text has no token that lower-casing changes,
   a cased one has many (bert-base-cased: 14% of its tokens).

`resolve_lower_case` applies a user's explicit choice: refused when it contradicts a recorded casing (1-3),
accepted with a warning when it contradicts one inferred from the tokens (4).
"""

from __future__ import annotations

import json
import logging
import os
import re

from keras_bert_lite.utils.errors import InputFileError, read_utf8
from keras_bert_lite.utils.files import atomic_write_text

logger = logging.getLogger(__name__)

CONFIG_FILE = "tokenizer_config.json"
CASED_SHARE = 0.01  # tokens that lower-casing changes, over tokens with letters, above which a vocab is cased
# tokenizer_config.json fields of Hugging Face's BertTokenizer that change its token ids, and the one value of each
# this library implements; and the tokenizer classes that tokenize as BERT's: BertTokenizer, its subclasses that
# change nothing in the tokenization, and PreTrainedTokenizerFast (whose tokenization is its tokenizer.json's: of that
# file only the BertNormalizer's lowercase is read, so such a config is accepted unchecked, as before).
_IMPLEMENTED = {"do_basic_tokenize": True, "tokenize_chinese_chars": True}
_BERT_TOKENIZERS = {
    f"{family}Tokenizer{fast}"
    for family in ("Bert", "DistilBert", "Electra", "MobileBert", "SqueezeBert", "ConvBert", "LayoutLM")
    for fast in ("", "Fast")
} | {"PreTrainedTokenizerFast"}
_ORIGINAL_DIR = re.compile(r"(?:^|_)(?P<casing>uncased|cased)_L-\d+_H-\d+_A-\d+$|^(?P<multilingual>multilingual)_L-")


def recorded_casing(vocab_path: str) -> tuple[bool | None, str]:
    """The casing recorded beside `vocab_path` (sources 1-3 above): (lower_case or None, where it was found).

    Raises:
        InputFileError: the record asks for a normalisation this library does not have (lower-casing without
            stripping accents), is not a JSON true/false, or the file is not valid JSON.
    """
    directory = os.path.dirname(os.path.abspath(vocab_path))
    config = os.path.join(directory, CONFIG_FILE)
    if os.path.exists(config):
        values = _read_json(config)
        _check_tokenization(values, config)
        if "do_lower_case" in values:
            return _checked(_flag(values, "do_lower_case", config), values.get("strip_accents"), config), config
    if vocab_path.endswith(".json"):
        normalizer = _read_json(vocab_path).get("normalizer") or {}
        if normalizer.get("type") == "BertNormalizer" and "lowercase" in normalizer:
            return _checked(
                _flag(normalizer, "lowercase", vocab_path), normalizer.get("strip_accents"), vocab_path
            ), vocab_path
    match = _ORIGINAL_DIR.search(os.path.basename(directory))
    if match:
        return match.group("multilingual") is not None or match.group(
            "casing"
        ) == "uncased", f"the original checkpoint directory name {os.path.basename(directory)!r}"
    return None, ""


def inferred_casing(tokens) -> bool | None:
    """Casing from the tokens: True (uncased) if lower-casing changes none, False (cased) if it changes more
    than `CASED_SHARE` of the tokens with letters, None in between or without letters."""
    words = [t for t in tokens if not (t.startswith("[") and t.endswith("]")) and any(c.isalpha() for c in t)]
    if not words:
        return None
    changed = sum(t.lower() != t for t in words)
    if changed == 0:
        return True
    return False if changed > CASED_SHARE * len(words) else None


def resolve_lower_case(
    recorded: bool | None, source: str, inferred: bool | None, requested: bool | None, flag: str
) -> bool:
    """The casing to tokenise with.

    Args:
        recorded, source: `recorded_casing`'s answer for the vocabulary.
        inferred: `inferred_casing` of its tokens.
        requested: the user's explicit choice (None: none).
        flag: how the user spells the choice, for messages: "--lower_case" (a command's flag, true/false) or
            "lower_case" (a Python argument, True/False).

    Raises:
        ValueError: `requested` contradicts `recorded` (naming both), or nothing says the casing.
    """
    if recorded is not None:
        if requested is not None and requested != recorded:
            raise ValueError(
                f"{spell(flag, requested)} contradicts the vocabulary: {source} says it is "
                f"{_word(recorded)}. Drop {flag} (the vocabulary's casing is used), or use the "
                "vocabulary the model was trained with."
            )
        return recorded
    if requested is not None:
        if inferred is not None and requested != inferred:
            logger.warning(
                "%s: the vocabulary's tokens look %s; ids will differ from those it was built for if this is wrong.",
                spell(flag, requested),
                _word(inferred),
            )
        return requested
    if inferred is None:
        raise ValueError(
            f"The vocabulary's casing is unknown: no {CONFIG_FILE} beside it and its tokens do not "
            f"tell. Pass {spell(flag, True)} (uncased) or {spell(flag, False)} (cased)."
        )
    return inferred


def spell(flag: str, lower_case: bool) -> str:
    """A casing choice as the user writes it: `--lower_case true` on a command line, `lower_case=True` in Python."""
    return f"{flag} {str(lower_case).lower()}" if flag.startswith("--") else f"{flag}={lower_case}"


def write_casing(vocab_path: str, lower_case: bool) -> None:
    """Records `lower_case` in `tokenizer_config.json` beside `vocab_path` (other fields of an existing file
    are kept), atomically.

    Raises:
        InputFileError: `check_casing_conflict`'s.
    """
    config = check_casing_conflict(vocab_path, lower_case)
    values = _read_json(config) if os.path.exists(config) else {"tokenizer_class": "BertTokenizer"}
    values["do_lower_case"] = bool(lower_case)
    atomic_write_text(config, json.dumps(values, indent=2) + "\n")


def check_casing_conflict(vocab_path: str, lower_case: bool) -> str:
    """Checks that `lower_case` can be recorded beside `vocab_path` (before anything is written); returns the
    `tokenizer_config.json` path it goes to.

    Raises:
        InputFileError: that file records the other casing for another vocabulary in the same directory.
    """
    config = os.path.join(os.path.dirname(os.path.abspath(vocab_path)), CONFIG_FILE)
    recorded = _read_json(config).get("do_lower_case") if os.path.exists(config) else None
    if isinstance(recorded, bool) and recorded != bool(lower_case):
        others = _other_vocabularies(vocab_path)
        if others:
            raise InputFileError(
                f"{config} records that {others[0]} beside it is {_word(recorded)}; writing the "
                f"{_word(lower_case)} {os.path.basename(vocab_path)} there would change that. Write "
                "it into a directory of its own (one casing per directory, as Hugging Face reads it)."
            )
    return config


def _other_vocabularies(vocab_path: str) -> list[str]:
    """The vocabularies other than `vocab_path` in its directory: a tokenizer.json, or text files whose lines
    include [UNK] (a vocab.txt, whatever its name)."""
    directory = os.path.dirname(os.path.abspath(vocab_path))
    found = []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if os.path.abspath(path) == os.path.abspath(vocab_path) or not os.path.isfile(path):
            continue
        if name == "tokenizer.json":
            found.append(path)
        elif name.endswith(".txt"):
            with open(path, encoding="utf-8", errors="replace") as f:
                if any(line.strip() == "[UNK]" for line in f):
                    found.append(path)
    return found


def _check_tokenization(values: dict, source: str) -> None:
    """Refuses a tokenizer_config.json that asks Hugging Face for another tokenization than BERT's BasicTokenizer
    + WordPiece, the one this library has (`_BERT_TOKENIZERS`, `_IMPLEMENTED`).

    Raises:
        InputFileError: naming `source` and the field.
    """
    for field, implemented in _IMPLEMENTED.items():
        if values.get(field, implemented) != implemented:
            raise InputFileError(
                f"{source}: field {field!r} is {values[field]!r}; this library tokenizes as BERT's "
                f"BasicTokenizer with {field} {json.dumps(implemented)} only, so its token ids would "
                "not be the model's."
            )
    name = values.get("tokenizer_class")
    if name is not None and name not in _BERT_TOKENIZERS:
        raise InputFileError(
            f"{source}: field 'tokenizer_class' is {name!r}; this library has BERT's own "
            "tokenizer only (BertTokenizer and the classes that tokenize as it does), so its token "
            "ids would not be the model's."
        )


def _flag(values: dict, field: str, source: str) -> bool:
    value = values[field]
    if not isinstance(value, bool):
        raise InputFileError(f"{source}: field {field!r} is {value!r}; it must be JSON true or false.")
    return value


def _checked(lower_case: bool, strip_accents, source: str) -> bool:
    if strip_accents is not None and bool(strip_accents) != lower_case:
        raise InputFileError(
            f"{source}: lower-casing {lower_case} with strip_accents {strip_accents} is not a BERT "
            "normalisation this library implements (uncased strips accents, cased keeps them)."
        )
    return lower_case


def _word(lower_case: bool) -> str:
    return "uncased" if lower_case else "cased"


def _read_json(path: str) -> dict:
    try:
        values = json.loads(read_utf8(path))
    except json.JSONDecodeError as error:
        raise InputFileError(f"{path}:{error.lineno}: not valid JSON ({error.msg}).") from None
    return values if isinstance(values, dict) else {}

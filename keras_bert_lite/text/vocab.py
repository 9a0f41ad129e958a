"""WordPiece vocabulary: tokens, ids, special tokens and casing; loaded from `vocab.txt` or a Hugging Face
`tokenizer.json`."""

from __future__ import annotations

import json
import os

import numpy as np

from keras_bert_lite.text.casing import (
    check_casing_conflict,
    inferred_casing,
    recorded_casing,
    resolve_lower_case,
    write_casing,
)
from keras_bert_lite.utils.errors import InputFileError, read_utf8
from keras_bert_lite.utils.files import atomic_write_text

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
CONTINUATION_PREFIX = "##"
PADDED_TO = (8, 16, 32, 64, 128)  # the multiples an embedding table may round the vocabulary up to


class Vocab:
    """An immutable WordPiece vocabulary: token i has id i.

    Args:
        tokens: the tokens in id order. Must be unique and contain [PAD] [UNK] [CLS] [SEP] [MASK].
        source: where the tokens came from, for error messages.
        lower_case: the casing the vocabulary was built for, when known (`from_file` reads it from beside the
            file: `text.casing`); None: inferred from the tokens.

    Attributes:
        tokens: tuple of str.
        token_to_id: dict str → int.
        pad_id, unk_id, cls_id, sep_id, mask_id: ids of the special tokens, from this vocabulary.
        is_continuation: bool numpy `[size]`: True for word-continuation pieces (`##` prefix), for whole-word
            masking.
        max_piece_chars: length in characters of the longest piece, `##` not counted.
        lower_case: True (uncased), False (cased) or None (unknown): recorded, or else inferred from the tokens.
        casing_source: where `lower_case` comes from (a file, or "its tokens"), for messages.
    """

    def __init__(self, tokens, source: str = "<tokens>", lower_case: bool | None = None, casing_source: str = ""):
        self.tokens = tuple(tokens)
        self.source = source
        self.token_to_id = {}
        for i, token in enumerate(self.tokens):
            if not isinstance(token, str) or not token:
                raise InputFileError(f"{source}: token {i} is {token!r}; every token must be a non-empty string.")
            if token in self.token_to_id:
                raise InputFileError(
                    f"{source}: token {token!r} appears at ids {self.token_to_id[token]} and "
                    f"{i}; remove the duplicate (ids must stay those the model was trained with)."
                )
            self.token_to_id[token] = i
        missing = [t for t in SPECIAL_TOKENS if t not in self.token_to_id]
        if missing:
            raise InputFileError(
                f"{source}: special tokens {missing} are missing; a BERT vocabulary needs all of "
                f"{list(SPECIAL_TOKENS)} (make one with kbl-vocab)."
            )
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = (self.token_to_id[t] for t in SPECIAL_TOKENS)
        self.is_continuation = np.array([t.startswith(CONTINUATION_PREFIX) for t in self.tokens], bool)
        self.max_piece_chars = max(
            len(t[len(CONTINUATION_PREFIX) :]) if c else len(t) for t, c in zip(self.tokens, self.is_continuation)
        )
        self._recorded = lower_case
        self._inferred = inferred_casing(self.tokens)
        self.lower_case = lower_case if lower_case is not None else self._inferred
        self.casing_source = (casing_source or source) if lower_case is not None else "its tokens"

    def resolve_lower_case(self, requested: bool | None = None, flag: str = "lower_case") -> bool:
        """The casing to tokenise with: this vocabulary's, or `requested` where nothing recorded contradicts it.

        Args:
            requested: the user's explicit choice, or None.
            flag: how the user spells it, for messages ("--lower_case" on a command line).

        Raises:
            ValueError: `requested` contradicts the recorded casing (the message names both), or the casing is
                unknown and nothing was requested.
        """
        return resolve_lower_case(self._recorded, self.casing_source, self._inferred, requested, flag)

    def with_lower_case(self, lower_case: bool, casing_source: str = "the run's settings") -> Vocab:
        """This vocabulary with its casing recorded as `lower_case` (what `save` writes beside it)."""
        return Vocab(self.tokens, self.source, lower_case=lower_case, casing_source=casing_source)

    def __len__(self) -> int:
        return len(self.tokens)

    def __repr__(self) -> str:
        return f"Vocab(size={len(self)}, unk_id={self.unk_id}, cls_id={self.cls_id}, sep_id={self.sep_id})"

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> Vocab:
        """Loads `vocab.txt` (one token per line, as google-research/bert writes it) or HF `tokenizer.json`,
        with the casing recorded beside it (`text.casing`).

        For `vocab.txt`, like the reference's `load_vocab`, surrounding whitespace of each line is stripped. Blank
        lines at the end of the file are ignored: the reference gives them the ids after the last token, which
        no text ever tokenizes to, so every token keeps its id. A blank line between tokens is an error (it would
        give the empty string an id, and the reference would use that id for nothing).
        """
        path = os.fspath(path)
        lower_case, casing_source = recorded_casing(path)
        if path.endswith(".json"):
            return cls(
                cls._tokenizer_json_tokens(path), source=path, lower_case=lower_case, casing_source=casing_source
            )
        lines = read_utf8(path).split("\n")
        while lines and not lines[-1].strip():
            lines.pop()
        for number, line in enumerate(lines, 1):
            if not line.strip():
                raise InputFileError(
                    f"{path}:{number}: empty token line between tokens; a vocab.txt has one token "
                    "per line: delete the line if the ids after it were not trained with it, else "
                    "put a placeholder token there (e.g. [unused_blank]) to keep those ids."
                )
        return cls([line.strip() for line in lines], source=path, lower_case=lower_case, casing_source=casing_source)

    @staticmethod
    def _tokenizer_json_tokens(path: str) -> list[str]:
        try:
            values = json.loads(read_utf8(path))
        except json.JSONDecodeError as error:
            raise InputFileError(f"{path}:{error.lineno}: not valid JSON ({error.msg}).") from None
        model = values.get("model") if isinstance(values, dict) else None
        model = model if isinstance(model, dict) else {}
        if model.get("type") != "WordPiece" or not isinstance(model.get("vocab"), dict):
            raise InputFileError(
                f"{path}: field 'model' is of type {model.get('type')!r}, not a WordPiece model "
                "with a 'vocab' dict; pass a BERT tokenizer.json or a vocab.txt."
            )
        if model.get("continuing_subword_prefix", CONTINUATION_PREFIX) != CONTINUATION_PREFIX:
            raise InputFileError(
                f"{path}: field 'model.continuing_subword_prefix' is "
                f"{model['continuing_subword_prefix']!r}; only {CONTINUATION_PREFIX!r} is supported."
            )
        by_id = {i: t for t, i in model["vocab"].items()}
        if sorted(by_id) != list(range(len(model["vocab"]))):
            raise InputFileError(
                f"{path}: field 'model.vocab' ids are not 0..{len(model['vocab']) - 1} without gaps or repeats."
            )
        return [by_id[i] for i in range(len(by_id))]

    def save(self, path: str | os.PathLike) -> None:
        """Writes `vocab.txt`, one token per line, and its casing (when known) to `tokenizer_config.json` beside
        it, as Hugging Face does; each atomically. Nothing is written where the casing would contradict another
        vocabulary's in the same directory (`check_casing_conflict`)."""
        if self.lower_case is not None:
            check_casing_conflict(os.fspath(path), self.lower_case)
        atomic_write_text(path, "".join(t + "\n" for t in self.tokens))
        if self.lower_case is not None:
            write_casing(os.fspath(path), self.lower_case)


def table_mismatch(rows: int, vocab: Vocab) -> str | None:
    """Why an embedding table of `rows` rows does not fit `vocab`, or None when it does: one row per token, or
    more rows padding the tokens up to the next multiple of 8 to 128 (as NVIDIA's and MosaicBERT's tables are;
    no token id reaches those rows)."""
    tokens = len(vocab)
    if rows == tokens or any(rows % multiple == 0 and 0 < rows - tokens < multiple for multiple in PADDED_TO):
        return None
    return (
        f"the model's vocab_size is {rows} but {vocab.source} has {tokens} tokens (a table may only pad the "
        f"vocabulary to the next multiple of {', '.join(map(str, PADDED_TO))})"
    )

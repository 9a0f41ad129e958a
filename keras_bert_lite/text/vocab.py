"""WordPiece vocabulary: tokens, ids, special tokens; loaded from `vocab.txt` or a Hugging Face `tokenizer.json`."""

from __future__ import annotations

import json
import os

import numpy as np

from keras_bert_lite.utils.files import atomic_write_text

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
CONTINUATION_PREFIX = "##"


class Vocab:
    """An immutable WordPiece vocabulary: token i has id i.

    Args:
        tokens: the tokens in id order. Must be unique and contain [PAD] [UNK] [CLS] [SEP] [MASK].
        source: where the tokens came from, for error messages.

    Attributes:
        tokens: tuple of str.
        token_to_id: dict str → int.
        pad_id, unk_id, cls_id, sep_id, mask_id: ids of the special tokens, from this vocabulary.
        is_continuation: bool numpy `[size]`: True for word-continuation pieces (`##` prefix), for whole-word
            masking.
        max_piece_chars: length in characters of the longest piece, `##` not counted.
    """

    def __init__(self, tokens, source: str = "<tokens>"):
        self.tokens = tuple(tokens)
        self.token_to_id = {}
        for i, token in enumerate(self.tokens):
            if not isinstance(token, str) or not token:
                raise ValueError(f"{source}: token {i} is {token!r}; every token must be a non-empty string.")
            if token in self.token_to_id:
                raise ValueError(f"{source}: token {token!r} appears at ids {self.token_to_id[token]} and {i}; "
                                 "remove the duplicate (ids must stay those the model was trained with).")
            self.token_to_id[token] = i
        missing = [t for t in SPECIAL_TOKENS if t not in self.token_to_id]
        if missing:
            raise ValueError(f"{source}: special tokens {missing} are missing; a BERT vocabulary needs all of "
                             f"{list(SPECIAL_TOKENS)} (create one with tasks/create_vocab.py).")
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = (
            self.token_to_id[t] for t in SPECIAL_TOKENS)
        self.is_continuation = np.array([t.startswith(CONTINUATION_PREFIX) for t in self.tokens], bool)
        self.max_piece_chars = max(len(t[len(CONTINUATION_PREFIX):]) if c else len(t)
                                   for t, c in zip(self.tokens, self.is_continuation))

    def __len__(self) -> int:
        return len(self.tokens)

    def __repr__(self) -> str:
        return f"Vocab(size={len(self)}, unk_id={self.unk_id}, cls_id={self.cls_id}, sep_id={self.sep_id})"

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> Vocab:
        """Loads `vocab.txt` (one token per line, as google-research/bert writes it) or HF `tokenizer.json`.

        For `vocab.txt`, like the reference's `load_vocab`, surrounding whitespace of each line is stripped.
        """
        path = os.fspath(path)
        if path.endswith(".json"):
            return cls._from_tokenizer_json(path)
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for number, line in enumerate(lines, 1):
            if not line.strip():
                raise ValueError(f"{path}:{number}: empty token line; a vocab.txt has one token per line.")
        return cls([line.strip() for line in lines], source=path)

    @classmethod
    def _from_tokenizer_json(cls, path: str) -> Vocab:
        with open(path, encoding="utf-8") as f:
            model = json.load(f).get("model", {})
        if model.get("type") != "WordPiece" or not isinstance(model.get("vocab"), dict):
            raise ValueError(f"{path}: field 'model' is of type {model.get('type')!r}, not a WordPiece model with a "
                             "'vocab' dict; pass a BERT tokenizer.json or a vocab.txt.")
        if model.get("continuing_subword_prefix", CONTINUATION_PREFIX) != CONTINUATION_PREFIX:
            raise ValueError(f"{path}: field 'model.continuing_subword_prefix' is "
                             f"{model['continuing_subword_prefix']!r}; only {CONTINUATION_PREFIX!r} is supported.")
        by_id = {i: t for t, i in model["vocab"].items()}
        if sorted(by_id) != list(range(len(model["vocab"]))):
            raise ValueError(f"{path}: field 'model.vocab' ids are not 0..{len(model['vocab']) - 1} without gaps "
                             "or repeats.")
        return cls([by_id[i] for i in range(len(by_id))], source=path)

    def save(self, path: str | os.PathLike) -> None:
        """Writes `vocab.txt`, one token per line (atomically)."""
        atomic_write_text(path, "".join(t + "\n" for t in self.tokens))

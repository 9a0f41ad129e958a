"""Exports of runs that read long texts in windows (task.json doc_stride): served outputs equal a reference built
window by window in Python (run_squad.py's windows and max-context rule, each window packed alone); the
stock-TF-Serving audit passes (export_saved_model audits); settings the windows cannot have are refused."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the tf-serving export's tokenizer ops)

import keras_bert_lite as kbl
from keras_bert_lite.artifacts import TaskSpec
from keras_bert_lite.export.exporter import export_saved_model
from keras_bert_lite.export.serving_module import ServingModule
from keras_bert_lite.text import BertPacker, BertTokenizer, Vocab
from tests.conftest import tiny_bert_config
from tests.data.test_windows import _reference_is_max_context, _reference_windows

SEQ, STRIDE = 16, 5
WORDS = "the old town river market church visitors summer banks cafes unaffable Zürich".split()


def _texts(seed, lengths=(0, 3, 14, 15, 40, 61)):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, n)) for n in lengths]


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    """These tests share a module-scoped encoder: no per-test Keras reset."""
    yield


@pytest.fixture(scope="module")
def vocab(uncased_vocab_path):
    return Vocab.from_file(uncased_vocab_path)


@pytest.fixture(scope="module")
def encoder(vocab):
    return kbl.build_encoder(tiny_bert_config(len(vocab)))


def _ids(vocab, texts):
    return BertTokenizer(vocab, lower_case=True).tokenize(tf.constant(texts)).to_list()


def _windows_logits(model, vocab, windows):
    """The model's output on each window `(first,)` or `(first, second)`: `[CLS] first [SEP] (second [SEP])`, one
    row per window, each packed on its own to SEQ tokens (one model call for all of them: rows do not interact)."""
    segments = [
        tf.ragged.constant([window[i] for window in windows], tf.int32, ragged_rank=1) for i in range(len(windows[0]))
    ]
    return model(BertPacker(SEQ, vocab=vocab)(*segments), training=False).numpy()


def _reference_logits(model, vocab, texts, texts_b, pooling):
    """Per text (pair): its windows' logits (of a pair: text_a cut at (SEQ - 3) // 2, text_b windowed), pooled."""
    rows, windows = [], []
    for i, ids in enumerate(_ids(vocab, texts)):
        first = ids if texts_b is None else ids[: (SEQ - 3) // 2]
        windowed = ids if texts_b is None else _ids(vocab, texts_b)[i]
        room = SEQ - 2 if texts_b is None else SEQ - 3 - len(first)
        for s, n in _reference_windows(len(windowed), room, STRIDE):
            rows.append(i)
            windows.append((windowed[s : s + n],) if texts_b is None else (first, windowed[s : s + n]))
    logits, rows = _windows_logits(model, vocab, windows), np.array(rows)
    pool = np.mean if pooling == "mean" else np.max
    return np.array([pool(logits[rows == i], axis=0) for i in range(len(texts))])


# Saved and audited (tf-serving) once per signature layout; the other settings through the module's own function.
# (tests/finetune/test_long_documents.py saves a single-text one through kbl-export.)
@pytest.mark.parametrize("pair, pooling, saved", [(False, "mean", False), (False, "max", False), (True, "mean", True)])
def test_classifier_pools_its_windows(encoder, vocab, tmp_path, pair, pooling, saved):
    model = kbl.build_classifier(encoder, num_classes=3)
    spec = TaskSpec(
        "classification",
        True,
        SEQ,
        labels=("a", "b", "c"),
        text_fields=("text", "text_b")[: 1 + pair],
        doc_stride=STRIDE,
        window_pooling=pooling,
    )
    texts, texts_b = _texts(0), _texts(1)[::-1] if pair else None
    inputs = {"text": tf.constant(texts)} | ({"text_b": tf.constant(texts_b)} if pair else {})
    if saved:
        loaded = tf.saved_model.load(export_saved_model(model, spec, vocab, str(tmp_path / "cls")))
        serve = loaded.signatures["serving_default"]
    else:
        module = ServingModule(model, spec, vocab)
        serve = lambda **texts: module._serve(*texts.values())  # noqa: E731
    served = serve(**inputs)
    expected = _reference_logits(model, vocab, texts, texts_b, pooling)
    np.testing.assert_allclose(served["logits"], expected, atol=1e-5)
    assert [label.decode() for label in served["label"].numpy()] == [spec.labels[i] for i in expected.argmax(-1)]
    if not pair:  # a request of one long text gets the answer it gets among others
        alone = serve(text=tf.constant(texts[-1:]))
        np.testing.assert_allclose(alone["logits"], expected[-1:], atol=1e-5)


def test_tagger_labels_each_word_from_its_max_context_window(encoder, vocab, tmp_path):
    model = kbl.build_token_classifier(encoder, num_classes=4)
    spec = TaskSpec("token_classification", True, SEQ, labels=("O", "B-LOC", "I-LOC", "B-PER"), doc_stride=STRIDE)
    texts = _texts(2)
    loaded = tf.saved_model.load(export_saved_model(model, spec, vocab, str(tmp_path / "ner")))
    out = loaded.signatures["serving_default"](text=tf.constant(texts))
    tokens = BertTokenizer(vocab, lower_case=True).tokenize_with_offsets(tf.constant(texts))
    for row, text in enumerate(texts):
        ids, starts = tokens.ids[row].numpy().tolist(), tokens.starts[row].numpy()
        windows = _reference_windows(len(ids), SEQ - 2, STRIDE)
        logits = _windows_logits(model, vocab, [(ids[s : s + n],) for s, n in windows])
        labels = [window.argmax(-1)[1 : 1 + n] for window, (_, n) in zip(logits, windows)]
        token_label = [
            next(
                labels[w][p - s]
                for w, (s, n) in enumerate(windows)
                if s <= p < s + n and _reference_is_max_context(windows, w, p)
            )
            for p in range(len(ids))
        ]
        word_bytes = np.cumsum([0] + [len(word.encode()) + 1 for word in text.split()[:-1]])  # one space between
        first_pieces = [int(np.searchsorted(starts, at)) for at in word_bytes] if text else []
        real = out["word_starts"][row].numpy() >= 0
        assert [w.decode() for w in out["words"][row].numpy()[real]] == text.split()  # every word, none cut
        assert [w.decode() for w in out["word_labels"][row].numpy()[real]] == [
            spec.labels[token_label[p]] for p in first_pieces
        ]


@pytest.mark.parametrize(
    "settings, message",
    [
        (dict(doc_stride=14), "^doc_stride 14 is not smaller than the windows of seq_length 16 .*give doc_stride 7"),
        (
            dict(doc_stride=7, text_fields=("text", "text_b")),
            r"^doc_stride 7 is not smaller .* \(7 tokens of the second",
        ),
        (dict(doc_stride=-1), "doc_stride must be >= 0"),
        (dict(window_pooling="max"), "window_pooling 'max': one of mean, max, for the windows"),
        (dict(doc_stride=4, window_pooling="sum"), "window_pooling 'sum'"),
    ],
)
def test_window_settings_the_spec_refuses(settings, message):
    with pytest.raises(ValueError, match=message):
        TaskSpec(
            **{"task_type": "classification", "lower_case": True, "seq_length": SEQ, "labels": ("a", "b"), **settings}
        )
    with pytest.raises(
        ValueError,
        match="doc_stride 4: a setting of classification, regression, multi_label, token_classification tasks",
    ):
        TaskSpec("span", True, SEQ, text_fields=("text", "text_b"), doc_stride=4)

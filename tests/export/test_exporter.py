"""Text-in SavedModel export: every task type, both targets, fresh-process parity, versions, refusal, serving."""

import dataclasses
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_lite as kbl
from keras_bert_lite.artifacts import TaskSpec
from keras_bert_lite.export.audit import audit_saved_model
from keras_bert_lite.export.exporter import ExportRefusedError, export_saved_model, versions
from keras_bert_lite.export.serving_module import ServingModule
from keras_bert_lite.runners import export as export_cli
from keras_bert_lite.text import BertPacker, BertTokenizer, Vocab
from tests.conftest import tiny_bert_config
from tests.serving.server_process import ServerProcess

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Naïve café in São Paulo — 東京!",
    "",
    "x" * 150,
    "Control\x00chars\u200b and\ttabs",
    "short",
]
QUESTIONS = ["What jumps?", "Where?", "?", "y", "Which chars?", "q"]


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    """These tests share module-scoped models: no per-test Keras reset."""
    yield


@pytest.fixture(scope="module")
def vocab(uncased_vocab_path):
    return Vocab.from_file(uncased_vocab_path)


@pytest.fixture(scope="module")
def trained_classifier(vocab):
    """A tiny classifier trained a few steps on real text (the labels need not be learnable here)."""
    keras.utils.set_random_seed(0)
    model = kbl.build_classifier(tiny_bert_config(len(vocab)), num_classes=3)
    tokenizer, packer = BertTokenizer(vocab, lower_case=True), BertPacker(32, vocab=vocab)
    x = packer(tokenizer.tokenize(tf.constant(TEXTS * 8)))
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, np.arange(len(TEXTS) * 8) % 3, epochs=2, verbose=0)
    return model, TaskSpec("classification", lower_case=True, seq_length=32, labels=("neg", "neutral", "pos"))


def serialized_examples(texts):
    """The classify signature's input: one serialized tf.train.Example per text, its feature "text"."""
    return [
        tf.train.Example(
            features=tf.train.Features(
                feature={"text": tf.train.Feature(bytes_list=tf.train.BytesList(value=[t.encode()]))}
            )
        ).SerializeToString()
        for t in texts
    ]


def in_python_logits(model, vocab, texts, seq_length=32):
    packed = BertPacker(seq_length, vocab=vocab)(BertTokenizer(vocab, lower_case=True).tokenize(tf.constant(texts)))
    return model(packed, training=False).numpy()


@pytest.fixture(scope="module")
def classifier_export(trained_classifier, vocab, tmp_path_factory):
    """`trained_classifier` exported once per target (the path of its version), for the tests that read it."""
    model, spec = trained_classifier
    paths = {}

    def export(target):
        if target not in paths:
            base = str(tmp_path_factory.mktemp(f"cls-{target}"))
            paths[target] = export_saved_model(model, spec, vocab, base, target=target)
        return paths[target]

    return export


# One fresh process per oneDNN setting loads and runs each export of that setting: the portable one first, before
# anything imports tensorflow_text (which it must not need), then the tf-serving one after importing it.
_FRESH_PROCESS = """
import json, sys
import numpy as np
import tensorflow as tf
results = {}
for path, target in json.loads(sys.argv[1]):
    if target == "tf-serving":
        import tensorflow_text  # noqa: F401  (stock TF Serving links these ops)
    loaded = tf.saved_model.load(path)
    out = loaded.signatures["serving_default"](text=tf.constant(json.loads(sys.argv[2])))
    results[target] = {"logits": out["logits"].numpy().tolist(),
                       "label": [s.decode() for s in out["label"].numpy()],
                       "tf_text_imported": "tensorflow_text" in sys.modules}
print("RESULT " + json.dumps(results))
"""

# The export is traced here with TensorFlow's oneDNN kernels on (LayerNorm is then written as FusedBatchNormV3,
# layers/layer_norm.py); the loading process may have them on or off (TF Serving builds, CPUs without AVX-512).
FRESH_PROCESS_CASES = [("portable", "0"), ("tf-serving", "1"), ("tf-serving", "0")]


@pytest.fixture(scope="module")
def fresh_process_results(classifier_export):
    """onednn -> {target: that process's outputs for TEXTS}, each process run once."""
    results = {}

    def run(onednn):
        if onednn not in results:
            targets = sorted({t for t, o in FRESH_PROCESS_CASES if o == onednn}, key=lambda t: t != "portable")
            exports = [(classifier_export(target), target) for target in targets]
            process = subprocess.run(
                [sys.executable, "-c", _FRESH_PROCESS, json.dumps(exports), json.dumps(TEXTS)],
                capture_output=True,
                text=True,
                timeout=300,
                env={**os.environ, "TF_ENABLE_ONEDNN_OPTS": onednn},
            )
            assert process.returncode == 0, process.stderr[-3000:]
            results[onednn] = json.loads(process.stdout.split("RESULT ")[-1])
        return results[onednn]

    return run


@pytest.mark.parametrize("target,onednn", FRESH_PROCESS_CASES)
def test_fresh_process_outputs_equal_the_in_python_model(
    trained_classifier, classifier_export, fresh_process_results, vocab, target, onednn
):
    model, spec = trained_classifier
    assert audit_saved_model(classifier_export(target), target).ok
    result = fresh_process_results(onednn)[target]
    assert result["tf_text_imported"] == (target == "tf-serving")
    expected = in_python_logits(model, vocab, TEXTS)
    assert np.abs(np.array(result["logits"]) - expected).max() <= 1e-5
    assert result["label"] == [spec.labels[i] for i in expected.argmax(-1)]


def test_classifier_signatures(trained_classifier, classifier_export, vocab):
    model, spec = trained_classifier
    loaded = tf.saved_model.load(classifier_export("portable"))
    assert set(loaded.signatures) == {"serving_default", "preprocess", "encode", "classify"}
    texts = tf.constant(TEXTS)
    packed = loaded.signatures["preprocess"](text=texts)
    expected = BertPacker(32, vocab=vocab)(BertTokenizer(vocab, lower_case=True).tokenize(texts))
    for name in expected:
        np.testing.assert_array_equal(packed[name], expected[name])
        assert packed[name].dtype == tf.int32 and packed[name].shape[1] == 32
    encoded = loaded.signatures["encode"](**packed)
    reference = model.get_layer("encoder")(expected, training=False)
    np.testing.assert_allclose(encoded["pooled_output"], reference["pooled_output"], atol=1e-5)
    assert encoded["encoder_outputs"].shape == (2, len(TEXTS), 32, 32)
    examples = serialized_examples(TEXTS)
    classified = loaded.signatures["classify"](inputs=tf.constant(examples))
    served = loaded.signatures["serving_default"](text=texts)
    np.testing.assert_allclose(classified["scores"], served["probabilities"], atol=1e-6)
    assert [c.decode() for c in classified["classes"].numpy()[0]] == list(spec.labels)
    # The Reusable SavedModel API (hub.KerasLayer) returns encoder_outputs as a list, as TF Hub encoders do.
    assert len(loaded(expected)["encoder_outputs"]) == 2
    # A request's ids are checked (tests/export/test_tf_hub.py has each check): an id past the vocabulary.
    bad = dict(packed, input_word_ids=tf.tensor_scatter_nd_update(packed["input_word_ids"], [[1, 2]], [len(vocab)]))
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=rf"input_word_ids holds\] \[{len(vocab)}\] "
        r"\[at \[row, position\]\] \[\[1 2\]\]",
    ):
        loaded.signatures["encode"](**bad)


@pytest.fixture(scope="module")
def tiny_encoder(vocab):
    return kbl.build_encoder(tiny_bert_config(len(vocab)))


def test_token_classifier_labels_whitespace_words_by_their_first_piece(tiny_encoder, vocab, tmp_path):
    # As in training files: "U.S." and "Hewlett-Packard," are one word each, of several pieces. The last row is
    # 36 pieces (una ##ffa ##ble x 12): the 10 whole words within seq_length - 2 = 30 are returned.
    texts = ["The U.S. office of Hewlett-Packard, in Zu\u0308rich.", "  two\tspaced  words ", "unaffable " * 12]
    model = kbl.build_token_classifier(tiny_encoder, num_classes=3)
    spec = TaskSpec("token_classification", True, 32, labels=("O", "B-LOC", "I-LOC"))
    loaded = tf.saved_model.load(export_saved_model(model, spec, vocab, str(tmp_path / "ner"), target="portable"))
    out = {k: v.numpy() for k, v in loaded.signatures["serving_default"](text=tf.constant(texts)).items()}
    tokens = BertTokenizer(vocab, lower_case=True).tokenize_with_offsets(tf.constant(texts))
    label_ids = model(BertPacker(32, vocab=vocab)(tokens.ids), training=False).numpy().argmax(-1)
    for row, text in enumerate(texts):
        raw, at, spans = text.encode(), 0, []
        for word in text.split():  # the whitespace words' byte spans
            at = raw.index(word.encode(), at)
            spans.append((at, at + len(word.encode())))
            at = spans[-1][1]
        starts = tokens.starts[row].numpy()
        pieces = [[i for i, s in enumerate(starts) if a <= s < b] for a, b in spans]
        whole = [(span, p) for span, p in zip(spans, pieces) if p[-1] < 30]
        real = out["word_starts"][row] >= 0
        assert [(s, e) for s, e in zip(out["word_starts"][row][real], out["word_ends"][row][real])] == [
            span for span, _ in whole
        ]
        assert [w.decode() for w in out["words"][row][real]] == [raw[a:b].decode() for (a, b), _ in whole]
        assert [w.decode() for w in out["word_labels"][row][real]] == [
            spec.labels[label_ids[row, p[0] + 1]] for _, p in whole
        ]  # first-piece labels
    assert [w.decode() for w in out["words"][0] if w] == [
        "The",
        "U.S.",
        "office",
        "of",
        "Hewlett-Packard,",
        "in",
        "Zu\u0308rich.",
    ]
    assert (out["word_starts"][2] >= 0).sum() == 10


def test_span_labeler_answers_from_the_context(tiny_encoder, vocab, tmp_path):
    model = kbl.build_span_labeler(tiny_encoder)
    spec = TaskSpec("span", True, 32, text_fields=("text", "text_b"))
    loaded = tf.saved_model.load(export_saved_model(model, spec, vocab, str(tmp_path / "qa"), target="portable"))
    out = {
        k: v.numpy()
        for k, v in loaded.signatures["serving_default"](text=tf.constant(QUESTIONS), text_b=tf.constant(TEXTS)).items()
    }
    for q, context, answer, start, end in zip(QUESTIONS, TEXTS, out["answer"], out["start"], out["end"]):
        if context:
            assert 0 <= start < end <= len(context.encode()) and context.encode()[start:end] == answer
        else:
            assert (answer, start, end) == (b"", -1, -1)


def test_span_exports_cut_questions_and_answers_as_the_run_did(tiny_encoder, vocab):
    model = kbl.build_span_labeler(tiny_encoder)
    long_question = "what is the name of the animal that jumps over the dog"
    contexts = tf.constant(["the quick brown fox jumps over the lazy dog"] * 2)

    def serve(questions, **settings):  # the module the export saves (test_span_labeler_* saves one)
        spec = TaskSpec("span", True, 32, text_fields=("text", "text_b"), **settings)
        out = ServingModule(model, spec, vocab, variant="portable")._serve(tf.constant(questions), contexts)
        return out["answer"].numpy().tolist(), out["score"].numpy()

    # max_query_length 4 keeps "what is the name" of the question, as the run's windows did.
    cut, cut_scores = serve([long_question, "what is the name"], max_query_length=4, max_answer_length=1)
    assert cut[0] == cut[1] and np.allclose(cut_scores[0], cut_scores[1], atol=1e-5)
    assert all(b" " not in answer for answer in cut)  # one-token answers
    _, whole_scores = serve([long_question, "what is the name"])
    assert not np.allclose(whole_scores[0], whole_scores[1], atol=1e-5)  # without it, the whole question counts


def test_regression_and_encoder(tiny_encoder, vocab, tmp_path):
    regression = kbl.build_classifier(tiny_encoder, num_classes=1)
    spec = TaskSpec("regression", True, 32, text_fields=("text", "text_b"))
    loaded = tf.saved_model.load(export_saved_model(regression, spec, vocab, str(tmp_path / "sts"), target="portable"))
    score = loaded.signatures["serving_default"](text=tf.constant(QUESTIONS), text_b=tf.constant(TEXTS))["score"]
    packed = BertPacker(32, vocab=vocab)(
        *(BertTokenizer(vocab, lower_case=True).tokenize(tf.constant(t)) for t in (QUESTIONS, TEXTS))
    )
    np.testing.assert_allclose(score, regression(packed, training=False)[:, 0], atol=1e-5)
    spec = TaskSpec("encoder", True, 32)
    loaded = tf.saved_model.load(
        export_saved_model(tiny_encoder, spec, vocab, str(tmp_path / "enc"), target="portable")
    )
    out = loaded.signatures["serving_default"](text=tf.constant(TEXTS))
    assert out["sequence_output"].shape == (len(TEXTS), 32, 32) and out["pooled_output"].shape == (len(TEXTS), 32)


@pytest.mark.slow
def test_versions_are_atomic_never_overwritten_and_pruned(trained_classifier, vocab, tmp_path):
    model, spec = trained_classifier
    base = str(tmp_path / "versions")
    for expected in (1, 2, 3):
        assert export_saved_model(model, spec, vocab, base, target="portable").endswith(f"/{expected}")
    with pytest.raises(FileExistsError, match="never overwritten"):
        export_saved_model(model, spec, vocab, base, target="portable", version=2)
    export_saved_model(model, spec, vocab, base, target="portable", keep=2)
    assert versions(base) == [3, 4]
    assert sorted(os.listdir(base)) == ["3", "4"], "temporary directories left behind"
    assert json.load(open(os.path.join(base, "4", "assets.extra", "task.json")))["labels"] == list(spec.labels)


def test_export_failing_its_audit_is_refused_and_writes_nothing(trained_classifier, vocab, tmp_path):
    model, spec = trained_classifier
    base = str(tmp_path / "refused")
    with pytest.raises(ExportRefusedError, match="FastWordpieceTokenizeWithOffsets") as err:
        export_saved_model(model, spec, vocab, base, target="portable", variant="default")
    assert "wordpiece" in str(err.value).lower()  # names where the op comes from
    assert os.listdir(base) == []


@pytest.mark.parametrize(
    "change, problem",
    [
        (
            {"seq_length": 65},
            r"seq_length 65 is longer than the model's 64 positions \(max_position_embeddings\); "
            "export with seq_length 64 or less",
        ),
        (
            {"labels": ("neg", "pos")},
            r"2 labels \['neg', 'pos'\] for a model with 3 outputs; give one label name per "
            "output",
        ),
        ({"version": -3}, "version -3: TF Serving serves versions 0 to 9223372036854775807"),
        ({"version": 2**63}, f"version {2**63}: TF Serving serves versions 0 to"),
    ],
)
def test_exports_the_model_cannot_serve_are_refused_and_write_nothing(
    trained_classifier, vocab, tmp_path, change, problem
):
    model, spec = trained_classifier
    version = change.pop("version", None)
    base = tmp_path / "refused"
    with pytest.raises(ValueError, match=problem):
        export_saved_model(
            model, dataclasses.replace(spec, **change), vocab, str(base), target="portable", version=version
        )
    assert not base.exists()


def test_text_pairs_for_a_model_with_one_segment_type_are_refused(vocab, tmp_path):
    config = tiny_bert_config(len(vocab), num_layers=1, type_vocab_size=1)
    spec = TaskSpec(
        "classification", lower_case=True, seq_length=32, labels=("neg", "pos"), text_fields=("text", "text_b")
    )
    with pytest.raises(
        ValueError,
        match=r"text pairs give the second text segment id 1, but the model has 1 "
        r"segment type \(type_vocab_size\): export it for single texts",
    ):
        export_saved_model(
            kbl.build_classifier(config, num_classes=2), spec, vocab, str(tmp_path / "out"), target="portable"
        )
    assert not (tmp_path / "out").exists()


def test_cli_exports_a_bare_keras_classifier_with_the_override_flags(trained_classifier, uncased_vocab_path, tmp_path):
    model, _ = trained_classifier
    model.save(tmp_path / "classifier.keras")
    path = export_cli.run(
        export_cli.parse_args(
            [
                "--model",
                str(tmp_path / "classifier.keras"),
                "--vocab",
                uncased_vocab_path,
                "--task_type",
                "classification",
                "--labels",
                "neg,neutral,pos",
                "--model_base_path",
                str(tmp_path / "out"),
                "--target",
                "portable",
            ]
        )
    )
    spec = json.load(open(os.path.join(path, "assets.extra", "task.json")))
    assert spec["seq_length"] == 64 and spec["labels"] == ["neg", "neutral", "pos"]  # 128 capped at its positions


@pytest.mark.slow
def test_cli_export_then_serve_over_grpc(trained_classifier, vocab, tmp_path):
    from keras_bert_lite.serving import ServingClient

    model, spec = trained_classifier
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    model.save(run_dir / "model.keras")
    vocab.save(str(run_dir / "vocab.txt"))
    spec.save(str(run_dir / "task.json"))
    base = tmp_path / "served"
    cli = subprocess.run(
        [
            sys.executable,
            "export/export_saved_model.py",
            "--model",
            str(run_dir),
            "--model_base_path",
            str(base),
            "--target",
            "portable",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    )
    assert cli.returncode == 0, cli.stderr[-3000:]
    assert versions(str(base)) == [1]
    server = ServerProcess(base, "--no_tf_text", model_name="bert")
    try:
        server.wait_ready()
        with ServingClient("bert", address=server.address, timeout=60) as client:
            labels, probabilities = client.predict_labels(TEXTS)
        expected = in_python_logits(model, vocab, TEXTS)
        assert list(labels) == [spec.labels[i] for i in expected.argmax(-1)]
        np.testing.assert_allclose(probabilities, tf.nn.softmax(expected).numpy(), atol=1e-5)
    finally:
        server.kill()

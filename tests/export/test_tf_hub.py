"""TF Hub's BERT contract: export_tf_hub's encoder + preprocessor pair loaded with tensorflow_hub, the "Classify
text with BERT" tutorial's code run on it (tf-keras with hub.KerasLayer, verbatim; Keras 3 with HubLayer), and
every output against our in-Python model. No network: the handles are local paths."""

import json
import os
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_hub as hub
import tensorflow_text as tf_text

import keras_bert_lite as kbl
from keras_bert_lite.export.audit import audit_saved_model
from keras_bert_lite.export.tf_hub import export_tf_hub
from keras_bert_lite.export.tf_hub_layer import HubLayer
from keras_bert_lite.runners import export as export_runner
from keras_bert_lite.text import BertPacker, BertTokenizer, Vocab
from tests.conftest import tiny_bert_config

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "unaffable tokenization, isn't it?",
    "",
    "Naïve café in São Paulo — 東京!",
    "word " * 140,
    "x",
]
ASCII_TEXTS = [t for t in TEXTS if t.isascii()]
CLS, SEP, PAD = 101, 102, 0  # bert-base-uncased's ids


@pytest.fixture(scope="module")
def vocab(uncased_vocab_path):
    return Vocab.from_file(uncased_vocab_path).with_lower_case(True)


@pytest.fixture(scope="module")
def encoder(vocab):
    keras.utils.set_random_seed(0)
    return kbl.build_encoder(tiny_bert_config(len(vocab), max_position_embeddings=128))


@pytest.fixture(scope="module")
def hub_base(tmp_path_factory):
    return str(tmp_path_factory.mktemp("hub") / "bert")


@pytest.fixture(scope="module")
def exported(encoder, vocab, hub_base):
    return export_tf_hub(encoder, vocab, hub_base)


@pytest.fixture(scope="module")
def hub_encoder(exported):
    return hub.load(exported[0])


@pytest.fixture(scope="module")
def preprocessor(exported):
    return hub.load(exported[1])


def packed(vocab, texts, seq_length=128):
    return BertPacker(seq_length, vocab=vocab)(BertTokenizer(vocab).tokenize(tf.constant(texts)))


def assert_outputs_equal(hub_outputs, ours):
    """TF Hub's output dict (list encoder_outputs, `default`) against our encoder's outputs, to 1e-5."""
    assert set(hub_outputs) == {"pooled_output", "sequence_output", "encoder_outputs", "default"}
    assert isinstance(hub_outputs["encoder_outputs"], list)
    assert len(hub_outputs["encoder_outputs"]) == len(ours["encoder_outputs"])
    for key in ("pooled_output", "sequence_output"):
        np.testing.assert_allclose(np.asarray(hub_outputs[key]), np.asarray(ours[key]), atol=1e-5, rtol=0)
    np.testing.assert_array_equal(np.asarray(hub_outputs["default"]), np.asarray(hub_outputs["pooled_output"]))
    for got, want in zip(hub_outputs["encoder_outputs"], ours["encoder_outputs"]):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=1e-5, rtol=0)


# ------------------------------------------------------------------ encoder
@pytest.mark.parametrize("seq_length", [128, 16])
def test_encoder_call_returns_tf_hubs_outputs_equal_to_the_in_python_model(hub_encoder, encoder, vocab, seq_length):
    inputs = packed(vocab, TEXTS, seq_length)
    assert_outputs_equal(hub_encoder(inputs), encoder(inputs, training=False))
    assert_outputs_equal(hub_encoder(inputs, training=False), encoder(inputs, training=False))
    dropped = hub_encoder(inputs, training=True)["pooled_output"]
    assert np.abs(dropped - hub_encoder(inputs)["pooled_output"]).max() > 1e-3  # training=True: dropout


def test_encoder_is_a_reusable_saved_model(hub_encoder, encoder, vocab):
    assert len(hub_encoder.trainable_variables) == len(encoder.trainable_weights)
    assert {id(v) for v in hub_encoder.trainable_variables} <= {id(v) for v in hub_encoder.variables}
    assert all(v.trainable for v in hub_encoder.trainable_variables)
    assert list(hub_encoder.regularization_losses) == []
    assert bool(hub_encoder.do_lower_case.numpy()) is True
    with open(hub_encoder.vocab_file.asset_path.numpy().decode(), encoding="utf-8") as f:
        assert f.read().split("\n")[:-1] == list(vocab.tokens)


def test_encoder_serving_default_has_tf_hubs_output_names(hub_encoder, encoder, vocab):
    signature = hub_encoder.signatures["serving_default"]
    assert set(signature.structured_input_signature[1]) == {"input_word_ids", "input_mask", "input_type_ids"}
    inputs = packed(vocab, TEXTS[:3], 24)
    out = signature(**inputs)
    ours = encoder(inputs, training=False)
    # tf_keras's names for TF Hub's model: "bert_encoder" + a counter over the sorted outputs (default,
    # encoder_outputs..., pooled_output, sequence_output).
    assert sorted(out) == ["bert_encoder", "bert_encoder_1", "bert_encoder_2", "bert_encoder_3", "bert_encoder_4"]
    for name, want in [
        ("bert_encoder", ours["pooled_output"]),
        ("bert_encoder_1", ours["encoder_outputs"][0]),
        ("bert_encoder_2", ours["encoder_outputs"][1]),
        ("bert_encoder_3", ours["pooled_output"]),
        ("bert_encoder_4", ours["sequence_output"]),
    ]:
        np.testing.assert_allclose(out[name], want, atol=1e-5, rtol=0)


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"input_word_ids": [[101, 40000, 102]]},
            r"input_word_ids holds\] \[40000\] \[at \[row, position\]\] \[\[0 1\]\] "
            r"\[outside \[0, 30522\): ids in the vocabulary",
        ),
        ({"input_type_ids": [[0, 0, 2]]}, r"input_type_ids holds\] \[2\] .*\[\[0 2\]\] \[outside \[0, 2\)"),
        ({"input_mask": [[1, -1, 1]]}, r"input_mask holds\] \[-1\] .*\[outside \[0, 2\): 1 for a token, 0 for padding"),
        ({"input_mask": [[1, 1]]}, r"input_mask has shape\] \[1 2\] \[and input_word_ids\] \[1 3\]"),
    ],
    ids=["word id past the vocabulary", "type id 2", "mask -1", "mask shorter"],
)
def test_encoder_serving_default_names_ids_the_model_cannot_take(hub_encoder, change, message):
    """A request's ids failed deep in an op (or, for a mask of 2 or on a GPU, not at all: wrong outputs)."""
    inputs = {"input_word_ids": [[101, 2023, 102]], "input_mask": [[1, 1, 1]], "input_type_ids": [[0, 0, 0]]}
    inputs = {name: tf.constant(value, tf.int32) for name, value in dict(inputs, **change).items()}
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        hub_encoder.signatures["serving_default"](**inputs)


def test_encoder_serving_default_names_a_sequence_longer_than_the_position_table(hub_encoder):
    inputs = {name: tf.zeros([1, 129], tf.int32) for name in ("input_word_ids", "input_mask", "input_type_ids")}
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"the inputs have\] \[129\] \[positions; this model "
        r"takes at most 128 \(max_position_embeddings\)",
    ):
        hub_encoder.signatures["serving_default"](**inputs)


# ------------------------------------------------------------------ preprocessor
def test_preprocess_call_equals_our_tokenizer_and_packer(preprocessor, vocab):
    out = preprocessor(tf.constant(TEXTS))
    want = packed(vocab, TEXTS)
    assert sorted(out) == ["input_mask", "input_type_ids", "input_word_ids"]
    for key in want:
        assert out[key].dtype == tf.int32 and out[key].shape == (len(TEXTS), 128)
        np.testing.assert_array_equal(out[key], want[key])
    served = preprocessor.signatures["serving_default"](sentences=tf.constant(TEXTS))
    assert sorted(served) == ["bert_pack_inputs", "bert_pack_inputs_1", "bert_pack_inputs_2"]
    for name, key in [
        ("bert_pack_inputs", "input_mask"),
        ("bert_pack_inputs_1", "input_type_ids"),
        ("bert_pack_inputs_2", "input_word_ids"),
    ]:
        np.testing.assert_array_equal(served[name], want[key])


def test_tokenize_groups_wordpieces_by_word_as_tf_hub(preprocessor, vocab, uncased_vocab_path):
    tokens = preprocessor.tokenize(tf.constant(TEXTS))
    assert isinstance(tokens, tf.RaggedTensor) and tokens.ragged_rank == 2 and tokens.dtype == tf.int32
    ours = BertTokenizer(vocab).tokenize_with_offsets(tf.constant(TEXTS))
    assert tokens.merge_dims(1, -1).to_list() == ours.ids.to_list()
    for row, words in zip(tokens.to_list(), ours.words.to_list()):
        assert [len(word) for word in row] == np.bincount(np.asarray(words, dtype=int), minlength=len(row)).tolist()
    assert tokens.to_list()[1][:3] == [[14477, 20961, 3468], [19204, 3989], [1010]]  # un ##aff ##able, token ##ization
    # TF Hub's own tokenizer (tf_text.BertTokenizer, as text_layers.BertTokenizer calls it): same ragged ids.
    tf_hubs = tf_text.BertTokenizer(uncased_vocab_path, token_out_type=tf.int32, lower_case=True)
    assert (
        preprocessor.tokenize(tf.constant(ASCII_TEXTS)).to_list()
        == tf_hubs.tokenize(tf.constant(ASCII_TEXTS)).to_list()
    )
    tokens, starts, limits = preprocessor.tokenize_with_offsets(tf.constant(TEXTS))
    assert starts.to_list() == tokens.with_flat_values(ours.starts.flat_values).to_list()
    assert limits.merge_dims(1, -1).to_list() == ours.ends.to_list()
    special = {k: int(v) for k, v in preprocessor.tokenize.get_special_tokens_dict().items()}
    assert special == {
        "start_of_sequence_id": CLS,
        "end_of_segment_id": SEP,
        "padding_id": PAD,
        "mask_id": 103,
        "vocab_size": len(vocab),
    }


def round_robin(lengths, budget):
    """TF Hub's rule as its docstring states it: one token at a time, in turn, to each segment that still has
    tokens left, until the budget is used."""
    keep = [0] * len(lengths)
    while sum(keep) < budget and keep != list(lengths):
        for i, length in enumerate(lengths):
            if keep[i] < length and sum(keep) < budget:
                keep[i] += 1
    return keep


def test_bert_pack_inputs_truncates_round_robin_as_tf_hub(preprocessor):
    first = tf.ragged.constant(
        [[1, 2, 3, 4, 5, 6], [1, 2], [1, 2, 3, 4, 5, 6, 7, 8], [], [1, 2, 3, 4, 5], [1, 2]], tf.int32
    )
    second = tf.ragged.constant(
        [[11, 12, 13, 14], [11, 12, 13, 14, 15, 16, 17], [11], [11, 12], [11, 12, 13, 14, 15], [11]], tf.int32
    )
    out = preprocessor.bert_pack_inputs([first, second], seq_length=8)  # 5 tokens for the two segments
    # Written out from TF Hub's round_robin_truncate_inputs: quota_a = min(a, ceil(5/2) + relu(floor(5/2) - b)),
    # quota_b = min(b, floor(5/2) + relu(ceil(5/2) - a)).
    np.testing.assert_array_equal(
        out["input_word_ids"],
        [
            [CLS, 1, 2, 3, SEP, 11, 12, SEP],  # 6+4: 3 and 2
            [CLS, 1, 2, SEP, 11, 12, 13, SEP],  # 2+7: the first keeps 2, the second takes the rest
            [CLS, 1, 2, 3, 4, SEP, 11, SEP],  # 8+1
            [CLS, SEP, 11, 12, SEP, PAD, PAD, PAD],  # 0+2: fits
            [CLS, 1, 2, 3, SEP, 11, 12, SEP],  # 5+5: the first segment gets the odd token
            [CLS, 1, 2, SEP, 11, SEP, PAD, PAD],
        ],
    )  # 2+1: fits
    np.testing.assert_array_equal(
        out["input_type_ids"],
        [
            [0, 0, 0, 0, 0, 1, 1, 1],
            [0, 0, 0, 0, 1, 1, 1, 1],
            [0, 0, 0, 0, 0, 0, 1, 1],
            [0, 0, 1, 1, 1, 0, 0, 0],
            [0, 0, 0, 0, 0, 1, 1, 1],
            [0, 0, 0, 0, 1, 1, 0, 0],
        ],
    )
    np.testing.assert_array_equal(out["input_mask"], (out["input_word_ids"].numpy() != PAD).astype(np.int32))

    # The rule over all small length pairs and lengths, against the one-token-at-a-time loop.
    lengths = [(a, b) for a in range(7) for b in range(7)]
    first = tf.ragged.constant([list(range(1, a + 1)) for a, _ in lengths], tf.int32, ragged_rank=1)
    second = tf.ragged.constant([list(range(11, 11 + b)) for _, b in lengths], tf.int32, ragged_rank=1)
    for seq_length in (3, 4, 7, 10):
        mask = preprocessor.bert_pack_inputs([first, second], seq_length=seq_length)["input_mask"].numpy()
        assert mask.sum(axis=1).tolist() == [sum(round_robin(ab, seq_length - 3)) + 3 for ab in lengths]
        single = preprocessor.bert_pack_inputs([first], seq_length=seq_length)["input_mask"].numpy()
        assert single.sum(axis=1).tolist() == [min(a, seq_length - 2) + 2 for a, _ in lengths]


def test_bert_pack_inputs_below_three_tokens_keeps_the_special_tokens_that_fit_and_refuses_negative(preprocessor):
    first, second = tf.ragged.constant([[1, 2], []], tf.int32), tf.ragged.constant([[11], [11, 12]], tf.int32)
    for seq_length in (0, 1, 2):
        pair = preprocessor.bert_pack_inputs([first, second], seq_length=seq_length)
        single = preprocessor.bert_pack_inputs([first], seq_length=seq_length)
        assert pair["input_word_ids"].numpy().tolist() == [[CLS, SEP, SEP][:seq_length]] * 2
        assert single["input_word_ids"].numpy().tolist() == [[CLS, SEP][:seq_length]] * 2
        assert pair["input_mask"].numpy().tolist() == [[1] * seq_length] * 2
        assert pair["input_type_ids"].numpy().tolist() == [[0] * seq_length] * 2
    with pytest.raises(tf.errors.InvalidArgumentError, match="seq_length must be 0 or more"):
        preprocessor.bert_pack_inputs([first], seq_length=-1)


def test_bert_pack_inputs_takes_tokenize_output_and_defaults_to_128(preprocessor, vocab):
    premises, hypotheses = tf.constant(TEXTS[:3]), tf.constant(TEXTS[3:])
    out = preprocessor.bert_pack_inputs([preprocessor.tokenize(premises), preprocessor.tokenize(hypotheses)])
    tokenizer = BertTokenizer(vocab)
    want = BertPacker(128, vocab=vocab)(tokenizer.tokenize(premises), tokenizer.tokenize(hypotheses))
    for key in want:
        np.testing.assert_array_equal(out[key], want[key])
    with pytest.raises(ValueError, match="matching concrete function"):  # 1 or 2 segments, as TF Hub's
        preprocessor.bert_pack_inputs([preprocessor.tokenize(premises)] * 3)


# ------------------------------------------------------------------ the tutorial
# tensorflow.org/text/tutorials/classify_text_with_bert, unchanged but for the handles, the data and the
# optimizer (the tutorial's official.nlp.optimization AdamW is Keras' AdamW here: tf-models-official is no
# dependency), one epoch.
TUTORIAL = """
bert_preprocess_model = hub.KerasLayer(tfhub_handle_preprocess)
text_test = ['this is such an amazing movie!']
text_preprocessed = bert_preprocess_model(text_test)

bert_model = hub.KerasLayer(tfhub_handle_encoder)
bert_results = bert_model(text_preprocessed)

def build_classifier_model():
  text_input = tf.keras.layers.Input(shape=(), dtype=tf.string, name='text')
  preprocessing_layer = hub.KerasLayer(tfhub_handle_preprocess, name='preprocessing')
  encoder_inputs = preprocessing_layer(text_input)
  encoder = hub.KerasLayer(tfhub_handle_encoder, trainable=True, name='BERT_encoder')
  outputs = encoder(encoder_inputs)
  net = outputs['pooled_output']
  net = tf.keras.layers.Dropout(0.1)(net)
  net = tf.keras.layers.Dense(1, activation=None, name='classifier')(net)
  return tf.keras.Model(text_input, net)

classifier_model = build_classifier_model()
bert_raw_result = classifier_model(tf.constant(text_test))

loss = tf.keras.losses.BinaryCrossentropy(from_logits=True)
metrics = tf.metrics.BinaryAccuracy()
epochs = 1
init_lr = 3e-5
optimizer = tf.keras.optimizers.AdamW(learning_rate=init_lr)
classifier_model.compile(optimizer=optimizer, loss=loss, metrics=metrics)
history = classifier_model.fit(x=train_ds, validation_data=val_ds, epochs=epochs)
"""

_DATA = """
import tensorflow as tf
reviews = ["a wonderful, moving film", "dull and far too long", "great acting!", "I want my money back."]
train_ds = tf.data.Dataset.from_tensor_slices((reviews, [1, 0, 1, 0])).batch(2)
val_ds = train_ds.take(1)
"""

_LEGACY_KERAS = (
    """
import json, os, sys
import numpy as np
import tensorflow as tf
import tensorflow_hub as hub
tfhub_handle_preprocess, tfhub_handle_encoder = sys.argv[1], sys.argv[2]
assert tf.keras.Model.__module__.startswith("tf_keras"), tf.keras.Model.__module__
"""
    + _DATA
    + TUTORIAL
    + """
fresh = tf.saved_model.load(tfhub_handle_encoder).trainable_variables
trained = classifier_model.get_layer("BERT_encoder").trainable_weights
print("RESULT " + json.dumps({
    "bert_results": {key: [x.numpy().tolist() for x in value] if isinstance(value, list) else value.numpy().tolist()
                     for key, value in bert_results.items()},
    "loss": history.history["loss"], "weights": len(trained),
    "weight_change": max(float(np.abs(a.numpy() - b.numpy()).max()) for a, b in zip(fresh, trained)),
    "tensorflow_text_loaded": "tensorflow_text" in sys.modules}))
"""
)


def test_tutorial_runs_unchanged_with_hub_keras_layer_under_tf_keras(exported, encoder, vocab):
    """The tutorial's code as it is (hub.KerasLayer) in a tf-keras process, as TF Hub's pages run it."""
    encoder_path, preprocess_path = exported
    run = subprocess.run(
        [sys.executable, "-c", _LEGACY_KERAS, preprocess_path, encoder_path],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "TF_USE_LEGACY_KERAS": "1"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.split("RESULT ")[-1])
    ours = encoder(packed(vocab, ["this is such an amazing movie!"]), training=False)
    assert_outputs_equal(result["bert_results"], ours)
    assert np.isfinite(result["loss"]).all()
    assert result["weights"] == len(encoder.trainable_weights) and result["weight_change"] > 0
    assert not result["tensorflow_text_loaded"]  # the portable preprocessor needs no tensorflow_text


def test_tutorial_runs_with_hub_layer_under_keras_3(exported, hub_encoder, encoder, vocab):
    """The same code in this (Keras 3) process, hub.KerasLayer replaced by HubLayer (and the one metric passed
    in a list, which Keras 3's compile requires of any model)."""
    namespace = {"HubLayer": HubLayer, "tfhub_handle_preprocess": exported[1], "tfhub_handle_encoder": exported[0]}
    code = TUTORIAL.replace("hub.KerasLayer", "HubLayer").replace("metrics=metrics", "metrics=[metrics]")
    exec(_DATA + code, namespace)  # noqa: S102
    assert_outputs_equal(namespace["bert_results"], encoder(packed(vocab, namespace["text_test"]), training=False))
    model, history = namespace["classifier_model"], namespace["history"]
    assert isinstance(model, keras.Model) and np.isfinite(history.history["loss"]).all()
    trained = model.get_layer("BERT_encoder").trainable_weights
    assert len(trained) == len(encoder.trainable_weights)
    assert max(np.abs(a.numpy() - b.numpy()).max() for a, b in zip(trained, encoder.trainable_weights)) > 0
    frozen = HubLayer(exported[0], name="frozen")
    assert frozen.trainable_weights == [] and len(frozen.non_trainable_weights) == len(hub_encoder.variables)


# ------------------------------------------------------------------ writing
def test_export_writes_an_audited_versioned_pair_and_never_overwrites(exported, hub_base, encoder, vocab, tmp_path):
    """The first export is the module's (`exported`, into an empty `hub_base`); the next ones go into a copy of
    its directory, so the other tests keep their version 1."""
    enc, pre = exported
    assert (enc, pre) == (os.path.join(hub_base, "encoder", "1"), os.path.join(hub_base, "preprocess", "1"))
    assert audit_saved_model(enc, "portable").ok and audit_saved_model(pre, "portable").ok
    base = str(tmp_path / "bert")
    shutil.copytree(hub_base, base)
    with pytest.raises(FileExistsError):
        export_tf_hub(encoder, vocab, base, version=1)
    assert export_tf_hub(encoder, vocab, base, seq_length=32, keep=1)[1] == os.path.join(base, "preprocess", "2")
    assert hub.load(os.path.join(base, "preprocess", "2"))(tf.constant(["x"]))["input_word_ids"].shape == (1, 32)
    assert (
        sorted(os.listdir(os.path.join(base, "encoder")))
        == sorted(os.listdir(os.path.join(base, "preprocess")))
        == ["2"]
    )
    with pytest.raises(ValueError, match="max_position_embeddings"):
        export_tf_hub(encoder, vocab, base, seq_length=129)


def test_kbl_export_target_tf_hub_takes_the_casing_from_the_vocabulary(encoder, vocab, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    encoder.save(run_dir / "encoder.keras")
    cased_vocab = Vocab(vocab.tokens, lower_case=False)
    cased_vocab.save(run_dir / "vocab.txt")  # a cased vocabulary
    base = tmp_path / "exports"
    export_runner.run(
        export_runner.parse_args(["--model", str(run_dir), "--model_base_path", str(base), "--target", "tf-hub"])
    )
    preprocessor, hub_encoder = hub.load(str(base / "preprocess" / "1")), hub.load(str(base / "encoder" / "1"))
    cased = BertTokenizer(cased_vocab).tokenize(tf.constant(["Hello World"]))
    assert preprocessor.tokenize(tf.constant(["Hello World"])).merge_dims(1, -1).to_list() == cased.to_list()
    assert cased.to_list() != BertTokenizer(vocab).tokenize(tf.constant(["Hello World"])).to_list()
    assert bool(hub_encoder.do_lower_case.numpy()) is False
    assert preprocessor(tf.constant(["x"]))["input_word_ids"].shape == (1, 128)


def test_export_of_a_model_without_an_encoder_names_the_loader(vocab, tmp_path):
    other = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, name="dense")], name="other")
    with pytest.raises(ValueError, match=r"'other' is no encoder .*\(keras_bert_lite\.load\(path\)"):
        export_tf_hub(other, vocab, str(tmp_path / "bert"))
    assert not os.path.exists(tmp_path / "bert")

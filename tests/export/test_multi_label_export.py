"""Text-in export of a multi-label classifier: sigmoid probabilities, the labels above task.json's threshold as
dense padded tensors, the Classify API, and the spec's checks."""

import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_lite as kbl
from keras_bert_lite.artifacts import TaskSpec
from keras_bert_lite.export.exporter import export_saved_model
from keras_bert_lite.export.serving_module import ServingModule
from keras_bert_lite.text import Vocab
from keras_bert_lite.training.thresholds import threshold_logit
from tests.conftest import tiny_bert_config
from tests.export.test_exporter import TEXTS, in_python_logits, serialized_examples

LABELS = ("arts", "politics", "science", "sports")


@pytest.fixture(scope="module")
def vocab(uncased_vocab_path):
    return Vocab.from_file(uncased_vocab_path)


THRESHOLD = 0.3


@pytest.fixture(scope="module")
def model(vocab):
    """A random tiny classifier with one output per label, its biases set so that on every text the second and
    fourth labels' probabilities exceed THRESHOLD (the second's not 0.5) and the others' do not."""
    keras.utils.set_random_seed(3)
    model = kbl.build_classifier(tiny_bert_config(len(vocab)), num_classes=len(LABELS))
    logits = in_python_logits(model, vocab, TEXTS).mean(axis=0)
    head = model.get_layer("logits").dense
    head.bias.assign(head.bias - logits + threshold_logit(THRESHOLD) + np.array([-2.0, 0.5, -0.5, 2.0]))
    return model


@pytest.fixture(scope="module")
def served(model, vocab, tmp_path_factory):
    """serving_default's and classify's outputs on TEXTS, exported with THRESHOLD."""
    logits = in_python_logits(model, vocab, TEXTS)
    threshold = THRESHOLD
    spec = TaskSpec("multi_label", lower_case=True, seq_length=32, labels=LABELS, threshold=threshold)
    loaded = tf.saved_model.load(
        export_saved_model(model, spec, vocab, str(tmp_path_factory.mktemp("ml") / "m"), target="portable")
    )
    out = {k: v.numpy() for k, v in loaded.signatures["serving_default"](text=tf.constant(TEXTS)).items()}
    examples = serialized_examples(TEXTS)
    classified = {k: v.numpy() for k, v in loaded.signatures["classify"](inputs=tf.constant(examples)).items()}
    return out, classified, logits, threshold


def test_probabilities_are_each_labels_sigmoid(served):
    out, _, logits, _ = served
    np.testing.assert_allclose(out["logits"], logits, atol=1e-5)
    np.testing.assert_allclose(out["probabilities"], 1 / (1 + np.exp(-out["logits"].astype(np.float64))), atol=1e-6)


def test_the_labels_above_the_threshold_come_first_in_label_order_then_padding(served):
    out, _, _, threshold = served
    above = out["logits"] > threshold_logit(threshold)
    assert above.tolist() == [[False, True, False, True]] * len(TEXTS)  # as the biases say
    assert out["labels"].shape == out["label_ids"].shape == (len(TEXTS), len(LABELS))
    for row, ids, names in zip(above, out["label_ids"], out["labels"]):
        want = np.flatnonzero(row).tolist()
        assert ids.tolist() == want + [-1] * (len(LABELS) - len(want))
        assert [n.decode() for n in names] == [LABELS[i] for i in want] + [""] * (len(LABELS) - len(want))


def test_classify_gives_every_label_and_its_probability(served):
    out, classified, _, _ = served
    assert classified["classes"].tolist() == [[n.encode() for n in LABELS]] * len(TEXTS)
    np.testing.assert_allclose(classified["scores"], out["probabilities"], atol=1e-6)


def test_the_spec_is_checked(model, vocab):
    spec = TaskSpec("multi_label", lower_case=True, seq_length=32, labels=LABELS, threshold=0.3)
    with pytest.raises(ValueError, match=r"3 labels \['arts', 'politics', 'science'\] for a model with 4 outputs"):
        ServingModule(model, dataclasses.replace(spec, labels=LABELS[:3]), vocab)
    with pytest.raises(ValueError, match="threshold 1.0: a setting of multi_label tasks, in \\(0, 1\\)"):
        dataclasses.replace(spec, threshold=1.0)
    with pytest.raises(ValueError, match="threshold 0.3: a setting of multi_label tasks"):
        TaskSpec("classification", lower_case=True, seq_length=32, labels=LABELS, threshold=0.3)
    with pytest.raises(ValueError, match="A multi_label task needs its label names"):
        TaskSpec("multi_label", lower_case=True, seq_length=32)

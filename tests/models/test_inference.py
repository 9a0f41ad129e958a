"""inference_function: the batch split into slices gives exactly the outputs of one call, for any batch size."""

import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite import build_classifier, build_encoder, inference_function
from keras_bert_lite.models import inference
from tests.conftest import random_inputs


def _inputs(batch, seq=7, vocab=120, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, seq + 1, batch)
    mask = (np.arange(seq)[None, :] < lengths[:, None]).astype("int32")
    return {
        "input_word_ids": tf.constant(rng.integers(0, vocab, (batch, seq)) * mask, tf.int32),
        "input_mask": tf.constant(mask),
        "input_type_ids": tf.zeros((batch, seq), tf.int32),
    }


@pytest.mark.parametrize("parts", [2, 3])
@pytest.mark.parametrize("batch", [1, 2, 5, 32])  # fewer rows than slices, uneven slices, the bench's batch
def test_sliced_batch_gives_the_outputs_of_one_call(no_dropout_config, parts, batch):
    encoder = build_encoder(no_dropout_config)
    x = _inputs(batch)
    expected = encoder(x, training=False)
    got = inference_function(encoder, parts=parts)(x)
    assert set(got) == set(expected) and len(got["encoder_outputs"]) == no_dropout_config.num_layers
    for want, have in zip(tf.nest.flatten(expected), tf.nest.flatten(got)):
        assert have.shape == want.shape
        np.testing.assert_allclose(have.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


def test_selected_outputs_and_one_trace_for_every_shape(no_dropout_config):
    encoder = build_encoder(no_dropout_config)
    signature = [{name: tf.TensorSpec([None, None], tf.int32) for name in _inputs(1)}]
    sequence = inference_function(encoder, outputs="sequence_output", parts=2, input_signature=signature)
    both = inference_function(encoder, outputs=["pooled_output", "sequence_output"], parts=2)
    for batch, seq in [(4, 7), (3, 5), (9, 12)]:
        x = _inputs(batch, seq, seed=batch)
        expected = encoder(x, training=False)
        np.testing.assert_allclose(sequence(x).numpy(), expected["sequence_output"].numpy(), rtol=1e-5, atol=1e-5)
        got = both(x)
        assert set(got) == {"pooled_output", "sequence_output"}
        np.testing.assert_allclose(
            got["pooled_output"].numpy(), expected["pooled_output"].numpy(), rtol=1e-5, atol=1e-5
        )
    assert sequence.experimental_get_tracing_count() == 1


def test_tensor_output_models(no_dropout_config):
    classifier = build_classifier(build_encoder(no_dropout_config), num_classes=3)
    x = _inputs(6)
    np.testing.assert_allclose(
        inference_function(classifier, parts=2)(x).numpy(), classifier(x, training=False).numpy(), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize(
    "cores, devices, parts",
    [(2, {"CPU"}, 2), (16, {"CPU"}, 2), (1, {"CPU"}, 1), (2, {"CPU", "GPU"}, 1), (16, {"CPU", "GPU"}, 1)],
)
def test_default_parts_follow_the_cores_and_devices(cores, devices, parts):
    assert inference.default_parts(cores, devices) == parts


def test_default_parts_read_this_process(monkeypatch):
    monkeypatch.setattr(inference, "visible_device_types", lambda: frozenset({"CPU"}))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert inference._default_parts() == 2
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert inference._default_parts() == 1
    with pytest.raises(ValueError, match="parts must be >= 1"):
        inference_function(None, parts=0)


@pytest.mark.parametrize("parts", [1, 2, 3])
@pytest.mark.parametrize("batch", [1, 5])
def test_length_sorted_slices_give_each_texts_output_in_input_order(no_dropout_config, parts, batch):
    model = build_classifier(no_dropout_config, num_classes=3)
    lengths = [9, 3, 16, 2, 12][:batch]
    inputs = random_inputs(no_dropout_config, batch=batch, seq=16, lengths=lengths)
    widths = []

    def spy(x, training):
        widths.append(x["input_word_ids"].shape[1])
        return model(x, training=training)

    got = inference.by_length_slices(spy, {k: tf.constant(v) for k, v in inputs.items()}, parts)
    np.testing.assert_allclose(got.numpy(), model(inputs, training=False).numpy(), rtol=1e-5, atol=1e-6)
    ordered = sorted(lengths)
    assert widths == [max(ordered[batch * i // parts : batch * (i + 1) // parts], default=1) for i in range(parts)]

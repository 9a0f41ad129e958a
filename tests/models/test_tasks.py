"""Task models: shapes, shared encoder, .keras round trips, and training with model.fit."""

import keras
import numpy as np
import pytest

import keras_bert_lite as kbl
from tests.conftest import random_inputs


def _build_all(encoder):
    return {
        "classifier": kbl.build_classifier(encoder, num_classes=3),
        "regression": kbl.build_classifier(encoder, num_classes=1),
        "token_classifier": kbl.build_token_classifier(encoder, num_classes=5),
        "span_labeler": kbl.build_span_labeler(encoder),
    }


def test_output_shapes_and_shared_encoder(tiny_config):
    encoder = kbl.build_encoder(tiny_config)
    inputs = random_inputs(tiny_config, batch=2, seq=7)
    models = _build_all(encoder)
    assert models["classifier"](inputs).shape == (2, 3)
    assert models["regression"](inputs).shape == (2, 1)
    assert models["token_classifier"](inputs).shape == (2, 7, 5)
    span = models["span_labeler"](inputs)
    assert span["start_logits"].shape == span["end_logits"].shape == (2, 7)
    for model in models.values():
        assert model.get_layer("encoder") is encoder


def test_multiple_choice(tiny_config):
    model = kbl.build_multiple_choice(tiny_config, num_choices=4)
    flat = random_inputs(tiny_config, batch=8, seq=6)
    inputs = {k: v.reshape(2, 4, 6) for k, v in flat.items()}
    logits = model(inputs, training=False)
    assert logits.shape == (2, 4)
    # Each choice's logit is the head applied to that choice's own pooled vector.
    pooled = model.get_layer("encoder")(flat, training=False)["pooled_output"]
    expected = model.get_layer("choice_logits").logits(pooled).numpy().reshape(2, 4)
    np.testing.assert_allclose(logits, expected, atol=1e-6)


def test_pretrainer_weights_move_to_classifier(tiny_config):
    pretrainer = kbl.build_pretrainer(tiny_config)
    classifier = kbl.build_classifier(pretrainer.encoder, num_classes=2)
    inputs = random_inputs(tiny_config)
    before = classifier(inputs, training=False).numpy()
    word = pretrainer.encoder.get_layer("embeddings").word_embeddings
    word.assign(word * 3.0)  # training the pretrainer changes the classifier: the encoder is shared
    assert not np.allclose(before, classifier(inputs, training=False).numpy())


@pytest.mark.parametrize("name", ["classifier", "regression", "token_classifier", "span_labeler"])
def test_keras_file_round_trip(tiny_config, tmp_path, name):
    model = _build_all(kbl.build_encoder(tiny_config))[name]
    inputs = random_inputs(tiny_config)
    model.save(tmp_path / "m.keras")
    restored = keras.saving.load_model(tmp_path / "m.keras")
    keras.tree.map_structure(np.testing.assert_array_equal, model(inputs), restored(inputs))


def test_pretrainer_round_trip_keeps_weight_tying(tiny_config, tmp_path):
    model = kbl.build_pretrainer(tiny_config)
    inputs = dict(random_inputs(tiny_config), masked_lm_positions=np.array([[1, 2], [0, 3], [1, 1]], "int32"))
    model.save(tmp_path / "p.keras")
    restored = keras.saving.load_model(tmp_path / "p.keras")
    keras.tree.map_structure(np.testing.assert_array_equal, model(inputs), restored(inputs))
    table = restored.encoder.get_layer("embeddings").word_embeddings
    assert not any(w is table for w in restored.get_layer("masked_lm").weights)  # not a copy: the encoder's
    before = restored(inputs)["mlm_logits"].numpy()
    table.assign(table * 0.0)
    np.testing.assert_allclose(
        restored(inputs)["mlm_logits"].numpy(),
        np.broadcast_to(restored.get_layer("masked_lm").output_bias.numpy(), before.shape),
    )


def synthetic_task(n, seq=16, vocab=50, seed=0):
    """Label 1 iff token 7 occurs in the sequence: learnable only by attending over positions."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(10, vocab, size=(n, seq)).astype("int32")
    labels = rng.integers(0, 2, size=n).astype("int32")
    where = rng.integers(1, seq, size=n)
    ids[labels == 1, where[labels == 1]] = 7
    x = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}
    return x, labels


@pytest.mark.slow
def test_classifier_learns_with_fit(tiny_config):
    keras.utils.set_random_seed(1)
    model = kbl.build_classifier(tiny_config.replace(vocab_size=50), num_classes=2)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    x, y = synthetic_task(2048)
    model.fit(x, y, batch_size=32, epochs=6, verbose=0)
    x_test, y_test = synthetic_task(512, seed=1)
    accuracy = model.evaluate(x_test, y_test, verbose=0, return_dict=True)["accuracy"]
    assert accuracy > 0.95, accuracy


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16", "mixed_float16"])
def test_fit_with_xla_and_mixed_precision(tiny_config, policy):
    keras.mixed_precision.set_global_policy(policy)
    model = kbl.build_classifier(tiny_config.replace(vocab_size=50), num_classes=2)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=True)
    x, y = synthetic_task(64)
    history = model.fit(x, y, batch_size=16, epochs=2, verbose=0).history["loss"]
    assert np.isfinite(history).all()

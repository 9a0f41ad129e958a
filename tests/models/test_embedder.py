"""build_embedder pools the chosen blocks' outputs; load_embedder reads a sentence-transformers checkpoint's
pooling and normalisation; the settings files round-trip."""

import json

import numpy as np
import pytest

import keras_bert_lite as kbl
from keras_bert_lite.checkpoints import embedding_settings
from keras_bert_lite.sentence_transformers_files import (
    EmbeddingSettings,
    read_embedding_settings,
    write_embedding_settings,
)
from keras_bert_lite.utils.errors import InputFileError
from tests.conftest import GOLDEN_DIR, random_inputs


def test_the_last_four_layers_concatenated_then_pooled(tiny_config):
    config = tiny_config.replace(num_layers=4)
    encoder = kbl.build_encoder(config)
    inputs = random_inputs(config)
    embedder = kbl.build_embedder(encoder, pooling="cls", layers=(-4, -3, -2, -1))
    blocks = encoder(inputs)["encoder_outputs"]
    expected = np.concatenate([np.asarray(b)[:, 0] for b in blocks], axis=-1)
    np.testing.assert_allclose(embedder(inputs).numpy(), expected, rtol=1e-5, atol=1e-6)
    assert embedder.output.shape == (None, 4 * config.hidden_size)
    with pytest.raises(ValueError, match="layers must index the encoder's 4 blocks"):
        kbl.build_embedder(encoder, layers=(4,))


def test_an_embedder_survives_a_keras_file(tmp_path, tiny_config):
    embedder = kbl.build_embedder(tiny_config, pooling=("max", "mean"), normalize=True)
    embedder.save(tmp_path / "embedder.keras")
    inputs = random_inputs(tiny_config)
    np.testing.assert_array_equal(
        kbl.load_embedder(str(tmp_path / "embedder.keras"))(inputs).numpy(), embedder(inputs).numpy()
    )


def test_minilm_pools_as_its_files_say(minilm_dir):
    assert embedding_settings(minilm_dir) == EmbeddingSettings(("mean",), normalize=True, max_seq_length=256)
    pooling = kbl.load_embedder(minilm_dir).get_layer("pooling")
    assert pooling.modes == ("mean",) and pooling.normalize


def test_settings_round_trip_through_sentence_transformers_files(tmp_path):
    settings = EmbeddingSettings(("cls", "mean"), normalize=True, max_seq_length=128)
    write_embedding_settings(str(tmp_path), settings, dimension=32)
    assert read_embedding_settings(str(tmp_path)) == settings
    assert json.loads((tmp_path / "1_Pooling" / "config.json").read_text())["word_embedding_dimension"] == 32
    with pytest.raises(ValueError, match="sentence-transformers joins modes in the order"):
        write_embedding_settings(str(tmp_path), EmbeddingSettings(("mean", "cls")), dimension=32)
    assert read_embedding_settings(str(tmp_path / "1_Pooling")) is None  # no modules.json


def test_a_projection_module_is_refused_by_name(tmp_path):
    write_embedding_settings(str(tmp_path), EmbeddingSettings(max_seq_length=128), dimension=32)
    modules = json.loads((tmp_path / "modules.json").read_text())
    modules.append({"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"})
    (tmp_path / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(InputFileError, match=r"modules.json: the modules \['Dense'\] are not supported"):
        read_embedding_settings(str(tmp_path))


def test_minilm_embeddings_equal_sentence_transformers(minilm_dir):
    """80 texts (every length, 11 scripts, empty, blank, three cut at 256 tokens) against
    `SentenceTransformer.encode(normalize_embeddings=True)` (tests/golden/make_embedding_goldens.py)."""
    import tensorflow as tf

    from keras_bert_lite.text import BertPacker, BertTokenizer, Vocab

    golden = np.load(GOLDEN_DIR / "minilm_embeddings.npz")
    vocab = Vocab.from_file(f"{minilm_dir}/vocab.txt")
    packer = BertPacker(embedding_settings(minilm_dir).max_seq_length, vocab=vocab, dynamic=True)
    ids = packer(BertTokenizer(vocab).tokenize(tf.constant([str(t) for t in golden["texts"]])))
    np.testing.assert_allclose(kbl.load_embedder(minilm_dir)(ids).numpy(), golden["embeddings"], atol=1e-5, rtol=0)

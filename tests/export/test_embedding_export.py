"""Text-in SavedModels of sentence embedders (task_type "embedding"): all-MiniLM-L6-v2 exported from its
sentence-transformers checkpoint gives sentence-transformers' vectors (tests/golden/minilm_embeddings.npz) through
the SavedModel and through kbl-serve, and kbl-client prints them; a run's embedder exports as trained; exports
that cannot serve an embedder are refused."""

import json
import os
import re

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the tf-serving target's tokenizer ops, which stock TF Serving links)

import keras_bert_lite as kbl
from keras_bert_lite.artifacts import TaskSpec
from keras_bert_lite.checkpoints import embedding_settings
from keras_bert_lite.export.audit import audit_saved_model
from keras_bert_lite.export.exporter import export_saved_model
from keras_bert_lite.runners import export as export_cli
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.sentence_transformers_files import EmbeddingSettings, read_embedding_settings
from keras_bert_lite.serving import ServingClient, ServingClientError
from keras_bert_lite.serving.client_cli import main as client_main
from keras_bert_lite.text import BertPacker, BertTokenizer, Vocab
from tests.conftest import GOLDEN_DIR, tiny_bert_config
from tests.serving.server_process import ServerProcess

TEXTS = ["The quick brown fox jumps over the lazy dog.", "Naïve café in São Paulo — 東京!", "", "x " * 40, "short"]


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    """These tests share module-scoped models: no per-test Keras reset."""
    yield


@pytest.fixture(scope="module")
def golden():
    data = np.load(GOLDEN_DIR / "minilm_embeddings.npz")
    return [str(t) for t in data["texts"]], data["embeddings"]


@pytest.fixture(scope="module")
def minilm_export(minilm_dir, tmp_path_factory):
    """all-MiniLM-L6-v2 exported by kbl-export straight from its checkpoint, for stock TF Serving."""
    base = tmp_path_factory.mktemp("minilm") / "exports"
    path = export_cli.run(
        export_cli.parse_args(["--model", minilm_dir, "--task_type", "embedding", "--model_base_path", str(base)])
    )
    return base, path


def test_minilm_savedmodel_gives_sentence_transformers_vectors(minilm_export, golden):
    _, path = minilm_export
    assert audit_saved_model(path, "tf-serving").ok
    spec = TaskSpec.load(os.path.join(path, "assets.extra", "task.json"))
    assert (spec.task_type, spec.lower_case, spec.seq_length) == ("embedding", True, 256)  # its sentence_bert_config
    loaded = tf.saved_model.load(path)
    assert set(loaded.signatures) == {"serving_default", "embed", "preprocess", "encode"}
    texts, expected = golden
    for key in ("serving_default", "embed"):
        out = loaded.signatures[key](text=tf.constant(texts))
        assert list(out) == ["embeddings"] and out["embeddings"].dtype == tf.float32
        np.testing.assert_allclose(out["embeddings"].numpy(), expected, atol=1e-5, rtol=0)
    packed = loaded.signatures["preprocess"](text=tf.constant(texts[:2]))
    assert packed["input_word_ids"].shape == (2, 256)


@pytest.mark.slow
def test_minilm_served_by_kbl_serve_and_printed_by_kbl_client(minilm_export, golden, tmp_path, capsys):
    base, _ = minilm_export
    texts, expected = golden
    server = ServerProcess(base, "--max_batch_size", "16", model_name="minilm")
    try:
        server.wait_ready()
        with ServingClient("minilm", address=server.address, timeout=120) as client:
            vectors = client.embed(texts)
            np.testing.assert_allclose(vectors, expected, atol=1e-5, rtol=0)
            # the same function; another batch pads to other widths, so the last bits may differ
            np.testing.assert_allclose(client.embed(texts[:3], signature="embed"), vectors[:3], atol=1e-6, rtol=0)
            with pytest.raises(
                ServingClientError,
                match=r"signature 'preprocess' has no output \['embeddings'\]; "
                r"its outputs are \['input_mask'",
            ):
                client.embed(["x"], signature="preprocess")
        lines = [t for t in texts if t.strip() and "\n" not in t]  # kbl-client skips blank lines
        (tmp_path / "texts.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        capsys.readouterr()
        assert (
            client_main(
                [
                    "--model_name",
                    "minilm",
                    "--server",
                    server.address,
                    "--batch_size",
                    "32",
                    "--timeout",
                    "120",
                    str(tmp_path / "texts.txt"),
                ]
            )
            == 0
        )
        out = capsys.readouterr().out
    finally:
        server.kill()
    records = [json.loads(line) for line in out.splitlines()]
    assert [list(r) for r in records] == [["text", "embedding"]] * len(lines)
    assert [r["text"] for r in records] == lines
    printed = np.array([r["embedding"] for r in records], dtype=np.float32)
    np.testing.assert_allclose(printed, expected[[texts.index(t) for t in lines]], atol=1e-5, rtol=0)
    numbers = re.findall(r"(\d+)\.(\d+)", out.split('"embedding"')[1])
    assert max(len((whole + fraction).lstrip("0")) for whole, fraction in numbers) <= 9  # no 0.10000000149011612


@pytest.fixture(scope="module")
def vocab(uncased_vocab_path):
    return Vocab.from_file(uncased_vocab_path)


@pytest.fixture(scope="module")
def tiny_embedder(vocab):
    return kbl.build_embedder(tiny_bert_config(len(vocab)), pooling=("cls", "mean"), normalize=True)


def in_python(model, vocab, texts, seq_length):
    packer = BertPacker(seq_length, vocab=vocab, dynamic=True)
    return model(packer(BertTokenizer(vocab, lower_case=True).tokenize(tf.constant(texts))), training=False).numpy()


def embedder_run(directory, embedder, vocab):
    """A run directory as an embedder-training run leaves it: model.keras, task.json (seq_length 16), vocab.txt."""
    directory.mkdir()
    embedder.save(directory / "model.keras")
    vocab.save(str(directory / "vocab.txt"))
    TaskSpec("embedding", lower_case=True, seq_length=16).save(str(directory / "task.json"))
    return directory


def test_a_runs_embedder_exports_as_trained(tiny_embedder, vocab, tmp_path, capsys):
    run = embedder_run(tmp_path / "run", tiny_embedder, vocab)
    path = export_cli.run(
        export_cli.parse_args(["--model", str(run), "--model_base_path", str(tmp_path / "out"), "--target", "portable"])
    )
    assert "signatures serving_default, preprocess, encode, embed" in capsys.readouterr().out
    out = tf.saved_model.load(path).signatures["serving_default"](text=tf.constant(TEXTS))["embeddings"].numpy()
    assert out.shape == (len(TEXTS), 64)  # cls + mean of 32
    np.testing.assert_allclose(out, in_python(tiny_embedder, vocab, TEXTS, 16), atol=1e-5, rtol=0)
    assert not np.allclose(out, in_python(tiny_embedder, vocab, TEXTS, 64), atol=1e-3)  # "x " * 40 cut at 16


def test_task_type_embedding_mean_pools_a_pretraining_runs_encoder(tiny_embedder, vocab, tmp_path):
    run = tmp_path / "pretrain"
    run.mkdir()
    encoder = tiny_embedder.get_layer("encoder")
    encoder.save(run / "encoder.keras")
    vocab.save(str(run / "vocab.txt"))
    path = export_cli.run(
        export_cli.parse_args(
            [
                "--model",
                str(run),
                "--task_type",
                "embedding",
                "--target",
                "portable",
                "--model_base_path",
                str(tmp_path / "out"),
            ]
        )
    )
    assert json.load(open(os.path.join(path, "assets.extra", "task.json")))["seq_length"] == 64  # its positions
    out = tf.saved_model.load(path).signatures["embed"](text=tf.constant(TEXTS))["embeddings"].numpy()
    np.testing.assert_allclose(out, in_python(kbl.build_embedder(encoder), vocab, TEXTS, 64), atol=1e-5, rtol=0)
    with pytest.raises(SettingsError, match="export failed: An embedding model takes one text"):
        export_cli.run(
            export_cli.parse_args(
                [
                    "--model",
                    str(run),
                    "--task_type",
                    "embedding",
                    "--pair",
                    "--model_base_path",
                    str(tmp_path / "pairs"),
                ]
            )
        )
    assert not (tmp_path / "pairs").exists()


def test_a_runs_embedder_exports_for_sentence_transformers(tiny_embedder, vocab, tmp_path, capsys):
    """--target hf: the run's pooling, normalisation and seq_length in sentence-transformers' files, read back by
    load_embedder into the same embedder (tests/export/test_hf.py has sentence-transformers' own vectors)."""
    run = embedder_run(tmp_path / "run", tiny_embedder, vocab)
    hf = str(tmp_path / "hf")
    export_cli.run(export_cli.parse_args(["--model", str(run), "--model_base_path", hf, "--target", "hf"]))
    assert "vocab.txt; sentence-transformers: modules.json)" in capsys.readouterr().out
    assert read_embedding_settings(hf) == EmbeddingSettings(("cls", "mean"), normalize=True, max_seq_length=16)
    np.testing.assert_allclose(
        in_python(kbl.load_embedder(hf), vocab, TEXTS, 16),
        in_python(tiny_embedder, vocab, TEXTS, 16),
        atol=1e-6,
        rtol=0,
    )


def test_minilm_checkpoint_exports_for_sentence_transformers_with_its_settings(minilm_dir, tmp_path):
    hf = str(tmp_path / "hf")
    export_cli.run(
        export_cli.parse_args(
            ["--model", minilm_dir, "--task_type", "embedding", "--target", "hf", "--model_base_path", hf]
        )
    )
    assert read_embedding_settings(hf) == embedding_settings(minilm_dir) == EmbeddingSettings(("mean",), True, 256)


@pytest.mark.parametrize(
    "model, spec, problem",
    [
        (
            "embedder",
            TaskSpec("encoder", True, 16),
            r"model 'embedder' is an embedder \(build_embedder\): export it "
            r"with task_type 'embedding'",
        ),
        (
            "encoder",
            TaskSpec("embedding", True, 16),
            r"task_type 'embedding' needs an embedder \(build_embedder, "
            r"load_embedder\); model 'encoder' has no pooling layer",
        ),
    ],
)
def test_the_task_type_must_match_the_model(tiny_embedder, vocab, tmp_path, model, spec, problem):
    model = tiny_embedder if model == "embedder" else tiny_embedder.get_layer("encoder")
    with pytest.raises(ValueError, match=problem):
        export_saved_model(model, spec, vocab, str(tmp_path / "out"), target="portable")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("settings", [{"text_fields": ("text", "text_b")}, {"labels": ("a", "b")}])
def test_an_embedding_spec_takes_one_text_and_no_labels(settings):
    with pytest.raises(ValueError, match="An embedding model takes one text and has no labels"):
        TaskSpec("embedding", True, 16, **settings)

"""New versions (written by the library's exporter) are picked up under load without a failed request; a version
that fails to load is skipped, then retried: a version copied non-atomically is served once complete."""

import pathlib
import shutil
import threading
import time

import keras

import keras_bert_lite as kbl
from keras_bert_lite.artifacts import TaskSpec
from keras_bert_lite.export.exporter import export_saved_model
from keras_bert_lite.serving import ServingClient
from keras_bert_lite.text import Vocab
from tests.serving.toy_models import ToyModel, export_version, tf_text_tokenizer_model


def export_classifier(base_path, labels, vocab_path, seed):
    """A tiny BERT classifier exported by the library's exporter; `labels` tell its versions apart."""
    keras.utils.set_random_seed(seed)
    vocab = Vocab.from_file(vocab_path)
    config = kbl.BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_layers=1,
        num_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    model = kbl.build_classifier(config, num_classes=len(labels))
    return export_saved_model(
        model,
        TaskSpec("classification", lower_case=True, seq_length=32, labels=labels),
        vocab,
        str(base_path),
        target="portable",
    )


def wait_until(condition, seconds=120):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        threading.Event().wait(0.01)


def test_new_version_is_served_under_load_without_failed_requests(tmp_path, start_server, uncased_vocab_path):
    v1, v2 = ("neg", "pos"), ("bad", "good")
    export_classifier(tmp_path, v1, uncased_vocab_path, seed=1)
    server = start_server(tmp_path, "--poll_seconds", "0.2", "--max_batch_size", "8")
    (tmp_path / ".tmp-export-unfinished").mkdir()  # hidden: an export still being written
    (tmp_path / "not-a-version").mkdir()
    seen = {thread: [] for thread in range(4)}
    errors = []
    stop = threading.Event()

    def stream(thread):
        with ServingClient("toy", server.address, timeout=30) as client:
            while not stop.is_set():
                try:
                    label = client.predict(["a fine film"], output_filter=["label"])["label"][0].decode()
                    seen[thread].append("v1" if label in v1 else "v2" if label in v2 else label)
                except Exception as error:  # noqa: BLE001 - counted and reported below
                    errors.append(error)

    threads = [threading.Thread(target=stream, args=(thread,)) for thread in seen]
    for thread in threads:
        thread.start()
    try:
        wait_until(lambda: all(len(s) >= 3 for s in seen.values()) or errors)  # every client is served v1
        export_classifier(tmp_path, v2, uncased_vocab_path, seed=2)  # hidden temp dir, renamed to 2/
        server.wait_for_log("Successfully unloaded servable version {name: toy version: 1}")
        wait_until(lambda: all(s.count("v2") >= 3 for s in seen.values()) or errors)
    finally:
        stop.set()
        for thread in threads:
            thread.join()

    assert errors == []
    for tags in seen.values():
        switch = tags.index("v2")  # every client saw v1, then only v2: the swap is atomic
        assert switch > 0 and set(tags[:switch]) == {"v1"} and set(tags[switch:]) == {"v2"}
    with ServingClient("toy", server.address) as client:
        assert client.status() == [
            {"version": 2, "state": "AVAILABLE", "error_code": "OK", "error_message": ""},
            {"version": 1, "state": "END", "error_code": "OK", "error_message": ""},
        ]


def test_version_that_fails_to_load_is_reported_and_the_previous_one_kept(tmp_path, start_server):
    # Without tensorflow_text, a model using its ops cannot load (as in a portable runtime); a core-ops model can.
    export_version(ToyModel("v1"), tmp_path, 1)
    server = start_server(tmp_path, "--poll_seconds", "0.2", "--no_tf_text")
    tokenizer, signatures = tf_text_tokenizer_model()
    export_version(tokenizer, tmp_path, 2, signatures)
    server.wait_for_log("Loading servable: {name: toy version: 2} failed")
    assert "Op type not registered" in server.log()

    with ServingClient("toy", server.address) as client:
        assert client.predict(["abc"])["tag"].tolist() == [b"v1"]
        v2, v1 = client.status()
        assert v1 == {"version": 1, "state": "AVAILABLE", "error_code": "OK", "error_message": ""}
        assert (v2["version"], v2["state"], v2["error_code"]) == (2, "END", "UNKNOWN")
        assert "Op type not registered 'CaseFoldUTF8'" in v2["error_message"]
        assert "python -m keras_bert_lite.export.audit" in v2["error_message"]


def test_version_copied_non_atomically_is_served_once_complete(tmp_path, start_server):
    # `cp -r` / rsync land saved_model.pb before variables/: the first load fails, the complete copy is served.
    base, source = tmp_path / "models", tmp_path / "source"
    export_version(ToyModel("v1"), base, 1)
    complete = pathlib.Path(export_version(ToyModel("v2"), source, 2))
    server = start_server(base, "--poll_seconds", "0.2")
    partial = base / "2"
    partial.mkdir()
    for entry in complete.iterdir():
        if entry.name != "variables":
            shutil.copytree(entry, partial / entry.name) if entry.is_dir() else shutil.copy(entry, partial)
    server.wait_for_log("Loading servable: {name: toy version: 2} failed")
    assert "retrying in 0.2 s, or as soon as its files change" in server.log()
    copied = time.monotonic()
    shutil.copytree(complete / "variables", partial / "variables")
    server.wait_for_log("Successfully loaded servable version {name: toy version: 2}")
    print(f"served {time.monotonic() - copied:.2f} s after the copy completed (polling every 0.2 s)")
    with ServingClient("toy", server.address) as client:
        assert client.predict(["abc"])["tag"].tolist() == [b"v2"]
        assert client.status()[0] == {"version": 2, "state": "AVAILABLE", "error_code": "OK", "error_message": ""}

"""New versions are picked up under load without a failed request; a version that fails to load is skipped,
then retried: a version copied non-atomically is served once complete."""

import pathlib
import shutil
import threading
import time

from keras_bert_lite.serving import ServingClient
from tests.serving.toy_models import ToyModel, export_version, tf_text_tokenizer_model


def test_new_version_is_served_under_load_without_failed_requests(tmp_path, start_server):
    export_version(ToyModel("v1"), tmp_path, 1)
    server = start_server(tmp_path, "--poll_seconds", "0.2", "--max_batch_size", "8")
    (tmp_path / ".tmp-export-unfinished").mkdir()  # hidden: an export still being written
    (tmp_path / "not-a-version").mkdir()
    tags = {thread: [] for thread in range(4)}
    errors = []
    stop = threading.Event()

    def stream(thread):
        with ServingClient("toy", server.address, timeout=30) as client:
            while not stop.is_set():
                try:
                    tags[thread].append(client.predict(["abc"], output_filter=["tag"])["tag"][0].decode())
                except Exception as error:  # noqa: BLE001 - counted and reported below
                    errors.append(error)

    threads = [threading.Thread(target=stream, args=(thread,)) for thread in tags]
    for thread in threads:
        thread.start()
    try:
        time.sleep(0.5)
        export_version(ToyModel("v2"), tmp_path, 2)  # written to a hidden temp dir, then renamed to 2/
        server.wait_for_log("Successfully unloaded servable version {name: toy version: 1}")
        time.sleep(0.5)
    finally:
        stop.set()
        for thread in threads:
            thread.join()

    assert errors == []
    for seen in tags.values():
        switch = seen.index("v2")  # every client saw v1, then only v2: the swap is atomic
        assert switch > 0 and set(seen[:switch]) == {"v1"} and set(seen[switch:]) == {"v2"}
    with ServingClient("toy", server.address) as client:
        assert client.status() == [
            {"version": 2, "state": "AVAILABLE", "error_code": "OK", "error_message": ""},
            {"version": 1, "state": "END", "error_code": "OK", "error_message": ""}]


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

"""New versions (written by the library's exporter) are picked up under load without a failed request; a version
that fails to load is skipped, then retried: a version copied non-atomically is served once complete."""

import pathlib
import re
import shutil
import threading
import time

import pytest

from keras_bert_lite.serving import ServingClient
from tests.serving.exports import export_tiny_classifier
from tests.serving.server_process import ServerProcess
from tests.serving.toy_models import ToyModel, export_version, tf_text_tokenizer_model


def wait_until(condition, seconds=120):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        threading.Event().wait(0.01)


def test_new_version_is_served_under_load_without_failed_requests(tmp_path, start_server, uncased_vocab_path):
    v1, v2 = ("neg", "pos"), ("bad", "good")

    def export(labels, seed):  # the tiny classifier with one layer of 2 heads
        export_tiny_classifier(uncased_vocab_path, tmp_path, seed, labels, num_layers=1, num_heads=2)

    export(v1, seed=1)
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
        export(v2, seed=2)  # hidden temp dir, renamed to 2/
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


@pytest.fixture(scope="module")
def watched(tmp_path_factory):
    """(a server, the directory of its models' base paths): models "broken" and "copied", each with version 1 of
    the toy model, polled every 0.2 s, without tensorflow_text; each test below adds version 2 to its own model."""
    root = tmp_path_factory.mktemp("versions")
    configs = ""
    for name in ("broken", "copied"):
        export_version(ToyModel("v1"), root / name, 1)
        configs += f'  config {{ name: "{name}" base_path: "{root / name}" model_platform: "tensorflow" }}\n'
    (root / "models.config").write_text("model_config_list {\n" + configs + "}\n")
    server = ServerProcess(None, "--poll_seconds", "0.2", "--no_tf_text", config_file=root / "models.config")
    try:
        yield server.wait_ready(), root
    finally:
        server.kill()


def test_version_that_fails_to_load_is_reported_and_the_previous_one_kept(watched):
    # Without tensorflow_text, a model using its ops cannot load (as in a portable runtime); a core-ops model can.
    server, root = watched
    tokenizer, signatures = tf_text_tokenizer_model()
    export_version(tokenizer, root / "broken", 2, signatures)
    wait_for_failure(server, "broken", "Op type not registered")

    with ServingClient("broken", server.address) as client:
        assert client.predict(["abc"])["tag"].tolist() == [b"v1"]
        v2, v1 = client.status()
        assert v1 == {"version": 1, "state": "AVAILABLE", "error_code": "OK", "error_message": ""}
        assert (v2["version"], v2["state"], v2["error_code"]) == (2, "END", "UNKNOWN")
        assert "Op type not registered 'CaseFoldUTF8'" in v2["error_message"]
        assert "python -m keras_bert_lite.export.audit" in v2["error_message"]


def test_version_copied_non_atomically_is_served_once_complete(watched, tmp_path):
    # `cp -r` / rsync land saved_model.pb before variables/: the first load fails, the complete copy is served.
    server, root = watched
    complete = pathlib.Path(export_version(ToyModel("v2"), tmp_path / "source", 2))
    partial = root / "copied" / "2"
    partial.mkdir()
    for entry in complete.iterdir():
        if entry.name != "variables":
            shutil.copytree(entry, partial / entry.name) if entry.is_dir() else shutil.copy(entry, partial)
    wait_for_failure(server, "copied", "retrying in 0.2 s, or as soon as its files change")
    copied = time.monotonic()
    shutil.copytree(complete / "variables", partial / "variables")
    server.wait_for_log("Successfully loaded servable version {name: copied version: 2}")
    print(f"served {time.monotonic() - copied:.2f} s after the copy completed (polling every 0.2 s)")
    with ServingClient("copied", server.address) as client:
        assert client.predict(["abc"])["tag"].tolist() == [b"v2"]
        assert client.status()[0] == {"version": 2, "state": "AVAILABLE", "error_code": "OK", "error_message": ""}


def wait_for_failure(server, name, text, timeout=60):
    """Waits for the log record (lines up to the next timestamped one) saying that version 2 of model `name`
    failed to load, and holding `text`: the other model's records do not count."""
    record = re.compile(
        re.escape(f"Loading servable: {{name: {name} version: 2}} failed")
        + r"(?:(?!\n\d{4}-\d\d-\d\d )[\s\S])*?"
        + re.escape(text)
    )
    deadline = time.monotonic() + timeout
    while not record.search(server.log()):
        assert time.monotonic() < deadline, f"no failed load of {name} version 2 with {text!r}:\n{server.log()}"
        threading.Event().wait(0.05)

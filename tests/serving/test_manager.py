"""Version discovery and the version swap, in-process with a fake loader (no TensorFlow model involved)."""

import os
import threading
import time

import grpc
import pytest
from tensorflow_serving.apis import model_pb2

from keras_bert_lite.serving.errors import ServingError
from keras_bert_lite.serving.manager import ModelManager, State, scan_versions


class FakeServable:
    def __init__(self, name, version, path):
        self.name, self.version, self.path = name, version, path


def fake_load(name, version, path):
    if os.path.exists(os.path.join(path, "broken")):
        raise ValueError("cannot parse saved_model.pb")
    return FakeServable(name, version, path)


def add_version(base_path, name, broken=False):
    directory = base_path / name
    directory.mkdir()
    (directory / "saved_model.pb").write_bytes(b"")
    if broken:
        (directory / "broken").write_bytes(b"")
    return directory


class HangingLoader:
    """A loader that blocks until `release` is set for versions holding a "hang" file; `started` tells it has."""

    def __init__(self):
        self.started = threading.Event()
        self.release = threading.Event()

    def __call__(self, name, version, path):
        if os.path.exists(os.path.join(path, "hang")):
            self.started.set()
            self.release.wait()
        return fake_load(name, version, path)


def spec(name="m", version=None, label=None):
    model_spec = model_pb2.ModelSpec(name=name)
    if version is not None:
        model_spec.version.value = version
    if label is not None:
        model_spec.version_label = label
    return model_spec


def test_scan_versions_keeps_integer_directories_with_a_saved_model(tmp_path):
    add_version(tmp_path, "1")
    add_version(tmp_path, "12")
    add_version(tmp_path, ".tmp-export-3")
    add_version(tmp_path, "v4")
    (tmp_path / "5").mkdir()  # no saved_model.pb yet: not ready
    (tmp_path / "6").write_text("a file")
    assert scan_versions(tmp_path) == {1: str(tmp_path / "1"), 12: str(tmp_path / "12")}


def test_versions_beyond_int64_are_skipped_with_one_warning(tmp_path, caplog):
    # Loaded as "latest", such a version made every call fail: TF Serving's protos hold int64 versions.
    add_version(tmp_path, "1")
    add_version(tmp_path, str(2**63 - 1))
    add_version(tmp_path, str(2**63))
    add_version(tmp_path, "99999999999999999999")
    assert scan_versions(tmp_path) == {1: str(tmp_path / "1"), 2**63 - 1: str(tmp_path / str(2**63 - 1))}
    (tmp_path / str(2**63 - 1)).rename(tmp_path / "2")
    manager = ModelManager("m", tmp_path, poll_seconds=0, load=fake_load)
    caplog.clear()
    manager.start()
    manager.poll()
    assert manager.servable(spec()).version == 2
    warnings = [record.getMessage() for record in caplog.records if record.levelname == "WARNING"]
    too_large = sorted((str(2**63), "99999999999999999999"))
    assert sorted(warnings) == [f"Ignoring version directory {tmp_path / name}: version {name} is beyond the largest "
                                f"TF Serving allows ({2**63 - 1}, int64); rename it to a smaller integer"
                                for name in too_large]


def test_latest_version_is_served_and_swapped(tmp_path):
    add_version(tmp_path, "1")
    manager = ModelManager("m", tmp_path, poll_seconds=0, load=fake_load)
    manager.start()
    assert manager.servable(spec()).version == 1
    add_version(tmp_path, "3")
    add_version(tmp_path, "2")
    manager.poll()
    assert manager.servable(spec()).version == 3
    assert manager.servable(spec(version=3)).version == 3
    states = manager.version_states()
    assert (states[3].state, states[1].state) == (State.AVAILABLE, State.END)
    assert 2 not in states  # never loaded: only the latest version is served


def test_failed_version_is_reported_and_the_previous_one_kept(tmp_path):
    add_version(tmp_path, "1")
    manager = ModelManager("m", tmp_path, poll_seconds=0, load=fake_load)
    manager.start()
    add_version(tmp_path, "2", broken=True)
    manager.poll()
    manager.poll()  # not retried yet: its files did not change and its backoff (1 s) is not over
    assert manager.servable(spec()).version == 1
    state = manager.version_states()[2]
    assert state.state == State.END and "cannot parse saved_model.pb" in state.error.message


def test_failed_version_is_retried_as_soon_as_its_files_change(tmp_path):
    add_version(tmp_path, "1")
    manager = ModelManager("m", tmp_path, poll_seconds=0, load=fake_load)
    manager.start()
    broken = add_version(tmp_path, "2", broken=True)
    manager.poll()
    (broken / "broken").unlink()  # the rest of the copy lands
    manager.poll()
    assert manager.servable(spec()).version == 2
    assert manager.version_states()[2].state == State.AVAILABLE


def test_a_load_that_hangs_times_out_and_a_newer_version_is_served(tmp_path):
    loader = HangingLoader()
    manager = ModelManager("m", tmp_path, poll_seconds=0, load=loader, load_timeout_seconds=0.2)
    add_version(tmp_path, "1")
    (tmp_path / "1" / "hang").write_bytes(b"")
    try:
        manager.start()
        state = manager.version_states()[1]
        assert state.state == State.END and state.error.code == grpc.StatusCode.DEADLINE_EXCEEDED
        assert "loading did not finish within 0.2 s (--load_timeout_seconds)" in state.error.message
        add_version(tmp_path, "2")
        manager.poll()
        assert manager.servable(spec()).version == 2
    finally:
        loader.release.set()


def test_stop_abandons_a_load_that_hangs(tmp_path):
    loader = HangingLoader()
    manager = ModelManager("m", tmp_path, poll_seconds=0.1, load=loader)  # the default timeout: 300 s
    add_version(tmp_path, "1")
    (tmp_path / "1" / "hang").write_bytes(b"")
    starting = threading.Thread(target=manager.start, daemon=True)
    starting.start()
    try:
        assert loader.started.wait(30)
        started = time.monotonic()
        manager.stop()
        starting.join(30)
        assert not starting.is_alive() and time.monotonic() - started < 5
        assert manager.version_states()[1].error.code == grpc.StatusCode.CANCELLED
    finally:
        loader.release.set()


def test_health_callback_follows_whether_a_version_is_served(tmp_path):
    changes = []
    first = add_version(tmp_path, "1")
    manager = ModelManager("m", tmp_path, poll_seconds=0, load=fake_load, on_change=changes.append)
    manager.start()
    (first / "saved_model.pb").unlink()
    manager.poll()
    assert changes == [True, False]


def test_removed_version_falls_back_to_the_next_latest(tmp_path):
    add_version(tmp_path, "1")
    newest = add_version(tmp_path, "2")
    manager = ModelManager("m", tmp_path, poll_seconds=0, load=fake_load)
    manager.start()
    (newest / "saved_model.pb").unlink()
    newest.rmdir()
    manager.poll()
    assert manager.servable(spec()).version == 1


@pytest.mark.parametrize("model_spec, code, message", [
    (spec(name="other"), grpc.StatusCode.NOT_FOUND, "Servable not found for request: Latest(other)"),
    (spec(version=2), grpc.StatusCode.NOT_FOUND, "Servable not found for request: Specific(m, 2)"),
    (spec(label="stable"), grpc.StatusCode.INVALID_ARGUMENT, "Unrecognized servable version label: stable"),
])
def test_resolution_errors(tmp_path, model_spec, code, message):
    add_version(tmp_path, "1")
    manager = ModelManager("m", tmp_path, poll_seconds=0, load=fake_load)
    manager.start()
    with pytest.raises(ServingError) as raised:
        manager.servable(model_spec)
    assert (raised.value.code, raised.value.message) == (code, message)


def test_nothing_loaded_yet_is_not_found_and_a_misplaced_savedmodel_is_pointed_out(tmp_path, caplog):
    (tmp_path / "saved_model.pb").write_bytes(b"")  # the version directory given as the base path
    manager = ModelManager("m", tmp_path, poll_seconds=0, load=fake_load)
    manager.start()
    with pytest.raises(ServingError, match=r"Latest\(m\)"):
        manager.servable(spec())
    assert f"{tmp_path} itself holds a SavedModel: move it into {tmp_path}/1/" in caplog.text

"""Version discovery and the version swap, in-process with a fake loader (no TensorFlow model involved)."""

import logging
import os
import threading
import time

import grpc

from keras_bert_lite.serving.manager import ModelManager, State, scan_versions
from keras_bert_lite.serving.model_config import ModelConfig
from keras_bert_lite.serving.version_policy import VersionPolicy


class FakeServable:
    def __init__(self, name, version, path):
        self.name, self.version, self.path = name, version, path


def fake_load(name, version, path, cancelled=None):
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

    def __call__(self, name, version, path, cancelled=None):
        if os.path.exists(os.path.join(path, "hang")):
            self.started.set()
            self.release.wait()
        return fake_load(name, version, path)


def make_manager(base_path, poll_seconds=0, policy=VersionPolicy(), **kwargs):
    """A manager of model "m" under `base_path`, loading with `fake_load` unless told otherwise."""
    kwargs.setdefault("load", fake_load)
    return ModelManager(ModelConfig("m", str(base_path), policy), poll_seconds, **kwargs)


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
    manager = make_manager(tmp_path)
    caplog.clear()
    manager.start()
    manager.poll()
    assert manager.served().version == 2
    warnings = [record.getMessage() for record in caplog.records if record.levelname == "WARNING"]
    too_large = sorted((str(2**63), "99999999999999999999"))
    assert sorted(warnings) == [
        f"Ignoring version directory {tmp_path / name}: version {name} is beyond the largest "
        f"TF Serving allows ({2**63 - 1}, int64); rename it to a smaller integer"
        for name in too_large
    ]


def test_latest_version_is_served_and_swapped(tmp_path):
    add_version(tmp_path, "1")
    manager = make_manager(tmp_path)
    manager.start()
    assert manager.served().version == 1
    add_version(tmp_path, "3")
    add_version(tmp_path, "2")
    manager.poll()
    assert manager.served().version == 3
    assert manager.served(3).version == 3
    states = manager.version_states()
    assert (states[3].state, states[1].state) == (State.AVAILABLE, State.END)
    assert 2 not in states  # never loaded: only the latest version is served


def test_a_version_is_served_before_it_is_reported_available(tmp_path, caplog):
    """A client that acts on the "Successfully loaded" line or on AVAILABLE must reach the new version."""
    add_version(tmp_path, "1")
    manager = make_manager(tmp_path)
    manager.start()
    add_version(tmp_path, "2")
    seen = []

    class AtTheLogLine(logging.Handler):
        def emit(self, record):
            if record.getMessage().startswith("Successfully loaded servable version {name: m version: 2}"):
                seen.append((manager.served().version, manager.version_states()[2].state))

    caplog.set_level(logging.INFO, logger="keras_bert_lite.serving.manager")
    handler = AtTheLogLine()
    logging.getLogger("keras_bert_lite").addHandler(handler)
    try:
        manager.poll()
    finally:
        logging.getLogger("keras_bert_lite").removeHandler(handler)
    assert seen == [(2, State.AVAILABLE)]


def test_failed_version_is_reported_and_the_previous_one_kept(tmp_path):
    add_version(tmp_path, "1")
    manager = make_manager(tmp_path)
    manager.start()
    add_version(tmp_path, "2", broken=True)
    manager.poll()
    manager.poll()  # not retried yet: its files did not change and its backoff (1 s) is not over
    assert manager.served().version == 1
    state = manager.version_states()[2]
    assert state.state == State.END and "cannot parse saved_model.pb" in state.error.message


def test_failed_version_is_retried_as_soon_as_its_files_change(tmp_path):
    add_version(tmp_path, "1")
    manager = make_manager(tmp_path)
    manager.start()
    broken = add_version(tmp_path, "2", broken=True)
    manager.poll()
    (broken / "broken").unlink()  # the rest of the copy lands
    manager.poll()
    assert manager.served().version == 2
    assert manager.version_states()[2].state == State.AVAILABLE


def test_a_load_that_hangs_times_out_and_a_newer_version_is_served(tmp_path):
    loader = HangingLoader()
    manager = make_manager(tmp_path, load=loader, load_timeout_seconds=0.2)
    add_version(tmp_path, "1")
    (tmp_path / "1" / "hang").write_bytes(b"")
    try:
        manager.start()
        state = manager.version_states()[1]
        assert state.state == State.END and state.error.code == grpc.StatusCode.DEADLINE_EXCEEDED
        assert "loading did not finish within 0.2 s (--load_timeout_seconds)" in state.error.message
        add_version(tmp_path, "2")
        manager.poll()
        assert manager.served().version == 2
    finally:
        loader.release.set()


def test_stop_abandons_a_load_that_hangs(tmp_path):
    loader = HangingLoader()
    manager = make_manager(tmp_path, poll_seconds=0.1, load=loader)  # the default timeout: 300 s
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
    manager = make_manager(tmp_path, on_change=changes.append)
    manager.start()
    (first / "saved_model.pb").unlink()
    manager.poll()
    assert changes == [True, False]


def test_removed_version_falls_back_to_the_next_latest(tmp_path):
    add_version(tmp_path, "1")
    newest = add_version(tmp_path, "2")
    manager = make_manager(tmp_path)
    manager.start()
    (newest / "saved_model.pb").unlink()
    newest.rmdir()
    manager.poll()
    assert manager.served().version == 1


def test_nothing_loaded_yet_is_none_and_a_misplaced_savedmodel_is_pointed_out(tmp_path, caplog):
    (tmp_path / "saved_model.pb").write_bytes(b"")  # the version directory given as the base path
    manager = make_manager(tmp_path)
    manager.start()
    assert manager.served() is None
    assert f"{tmp_path} itself holds a SavedModel: move it into {tmp_path}/1/" in caplog.text


def test_latest_n_serves_the_n_highest_versions(tmp_path):
    for name in ("1", "2", "3", "4"):
        add_version(tmp_path, name)
    manager = make_manager(tmp_path, policy=VersionPolicy("latest", num_versions=2))
    manager.start()
    assert manager.available_versions() == {3, 4}
    assert manager.served().version == 4 and manager.served(3).version == 3 and manager.served(2) is None


def test_all_serves_every_version_and_unloads_one_whose_directory_goes(tmp_path):
    for name in ("1", "2", "3"):
        add_version(tmp_path, name)
    manager = make_manager(tmp_path, policy=VersionPolicy("all"))
    manager.start()
    assert manager.available_versions() == {1, 2, 3}
    (tmp_path / "2" / "saved_model.pb").unlink()
    manager.poll()
    assert manager.available_versions() == {1, 3}
    assert manager.version_states()[2].state == State.END


def test_specific_serves_the_listed_versions_and_warns_once_about_a_missing_one(tmp_path, caplog):
    for name in ("1", "2", "3"):
        add_version(tmp_path, name)
    manager = make_manager(tmp_path, policy=VersionPolicy("specific", versions=(1, 3, 7)))
    manager.start()
    manager.poll()
    assert manager.available_versions() == {1, 3} and manager.served().version == 3
    missing = [record.getMessage() for record in caplog.records if "Version 7" in record.getMessage()]
    assert missing == [
        "Version 7 of servable m, which was requested to be served as a 'specific' version in the "
        "servable's version policy, was not found in the file system"
    ]


def test_a_version_the_policy_drops_keeps_serving_until_its_replacement_loads(tmp_path):
    # TF Serving's availability-preserving policy: never fewer than one version while one is wanted.
    add_version(tmp_path, "1")
    broken = add_version(tmp_path, "2", broken=True)
    manager = make_manager(tmp_path, policy=VersionPolicy("specific", versions=(1,)))
    manager.start()
    manager.reconfigure(ModelConfig("m", str(tmp_path), VersionPolicy("specific", versions=(2,))))
    manager.poll()
    assert manager.available_versions() == {1}  # 2 failed: 1 stays although the policy no longer lists it
    assert manager.version_states()[2].state == State.END
    (broken / "broken").unlink()
    manager.poll()
    assert manager.available_versions() == {2}
    assert manager.version_states()[1].state == State.END


def test_a_narrower_policy_unloads_the_versions_it_drops(tmp_path):
    for name in ("1", "2", "3"):
        add_version(tmp_path, name)
    changes = []
    manager = make_manager(tmp_path, policy=VersionPolicy("all"), on_change=changes.append)
    manager.start()
    manager.reconfigure(ModelConfig("m", str(tmp_path)))
    manager.poll()
    assert manager.available_versions() == {3}
    assert all(changes)  # never without a version in between


def test_join_waits_for_an_abandoned_load_and_the_loader_is_told(tmp_path):
    loader = HangingLoader()
    cancelled = []

    def load(name, version, path, cancel):
        cancelled.append(cancel)
        return loader(name, version, path)

    manager = make_manager(tmp_path, poll_seconds=0.05, load=load)
    add_version(tmp_path, "1")
    (tmp_path / "1" / "hang").write_bytes(b"")
    starting = threading.Thread(target=manager.start, daemon=True)
    starting.start()
    try:
        assert loader.started.wait(30)
        manager.stop()
        starting.join(30)
        assert cancelled[0].is_set()
        assert manager.join(time.monotonic() + 0.2) == ["load-m-1"]  # still inside the load
    finally:
        loader.release.set()
    assert manager.join(time.monotonic() + 30) == []

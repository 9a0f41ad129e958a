"""Loads the versions of one model from `model_base_path/<integer version>/` and keeps the latest one served.

Like TF Serving's file-system source with its default "latest" version policy: the base path is polled every
`poll_seconds`; the highest integer version directory is loaded in the background while the current one keeps
answering, then swapped in atomically (a single reference assignment, so every request sees either the old or
the new version, never neither) and the old one is unloaded. Requests already running on the old version keep
their reference to it and finish normally.

Skipped: names starting with "." (our exporter writes to a hidden temp dir and renames it into place), names
that are not integers, integers beyond TF Serving's int64 versions (0..2**63-1; logged once, as a warning), and
directories without saved_model.pb yet (retried at the next poll). A version that
fails to load is logged and reported by GetModelStatus (END with the error); the previous version keeps being
served, and the failed one is tried again as `LoadRetries` says (as soon as its files change, else with
backoff). A load that takes longer than `load_timeout_seconds` is abandoned and counts as failed, so a load
that hangs blocks neither newer versions nor shutdown: `stop()` abandons a load in progress.
"""

import logging
import os
import re
import threading

import grpc
import tensorflow as tf
from tensorflow_serving.apis import get_model_status_pb2

from keras_bert_lite.serving.errors import ServingError, from_tf_error, invalid_argument, not_found
from keras_bert_lite.serving.load_retries import LoadRetries
from keras_bert_lite.serving.servable import load_servable

log = logging.getLogger(__name__)
State = get_model_status_pb2.ModelVersionStatus.State
_VERSION_NAME = re.compile("[0-9]+")  # also rules out hidden directories such as ".tmp-export-2"
DEFAULT_LOAD_TIMEOUT_SECONDS = 300.0
DEFAULT_MAX_LOAD_RETRIES = 5  # TF Serving's max_num_load_retries
MAX_VERSION = 2**63 - 1  # versions are int64 in TF Serving's protos (ModelSpec.version, ModelVersionStatus.version)


class VersionState:
    """What GetModelStatus reports for a version: a `State` value and, for a failed load, the error.

    Attributes:
        state: A `ModelVersionStatus.State` value.
        error: None, or the `ServingError` (code and message) the load failed with.
    """

    def __init__(self, state, error=None):
        self.state = state
        self.error = error


class ModelManager:
    """Serves the latest loadable version of model `name` found under `base_path`.

    Args:
        name: The model name clients put in `model_spec.name`.
        base_path: The directory holding one subdirectory per integer version.
        poll_seconds: Seconds between scans of `base_path`; 0 scans once, at `start()`.
        load: Callable (name, version, path) -> Servable; `load_servable` by default (tests swap it).
        load_timeout_seconds: A load still running after this long is abandoned and counts as failed.
        max_load_retries: Retries of a failed version whose files do not change (see `LoadRetries`).
        on_change: Called with True when a version becomes served and False when none is, from the thread
            that swapped it (for the health service).
    """

    def __init__(self, name, base_path, poll_seconds, load=load_servable,
                 load_timeout_seconds=DEFAULT_LOAD_TIMEOUT_SECONDS, max_load_retries=DEFAULT_MAX_LOAD_RETRIES,
                 on_change=None):
        self.name = name
        self.base_path = base_path
        self.poll_seconds = poll_seconds
        self.load_timeout_seconds = load_timeout_seconds
        self._load = load
        self._on_change = on_change
        self._current = None  # the Servable answering "latest"; replaced atomically
        self._states = {}  # version -> VersionState
        self._retries = LoadRetries(poll_seconds or 1.0, max_load_retries)
        self._too_large = set()  # version directories warned about by scan_versions
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._loading = None  # the _Loading in progress, which stop() abandons
        self._thread = None

    def start(self):
        """Loads the latest version found now (blocking until it is loaded, fails, or `stop()`), then keeps
        polling in a background thread."""
        self.poll()
        if self._current is None and not self._states:
            hint = (f"; {self.base_path} itself holds a SavedModel: move it into {self.base_path}/1/"
                    if os.path.exists(os.path.join(self.base_path, "saved_model.pb")) else "")
            log.warning("No versions of servable %s found under base path %s (expecting <base path>/<integer "
                        "version>/saved_model.pb)%s", self.name, self.base_path, hint)
        if self.poll_seconds > 0 and not self._stop.is_set():
            self._thread = threading.Thread(target=self._poll_forever, name="version-poller", daemon=True)
            self._thread.start()

    def stop(self):
        """Stops polling; a load in progress is abandoned (its thread, a daemon, is left to finish alone)."""
        self._stop.set()
        loading = self._loading
        if loading is not None:
            loading.abandon()
        if self._thread is not None:
            self._thread.join()

    def servable(self, model_spec):
        """The Servable a request's `ModelSpec` asks for, with TF Serving's errors when there is none.

        Raises:
            ServingError: NOT_FOUND for another model name, a version that is not served, or nothing loaded
                yet; INVALID_ARGUMENT for a version label (this server defines none).
        """
        current = self._current
        if model_spec.WhichOneof("version_choice") == "version_label":
            raise invalid_argument(f"Unrecognized servable version label: {model_spec.version_label}")
        if model_spec.HasField("version"):
            version = model_spec.version.value
            if model_spec.name != self.name or current is None or current.version != version:
                raise not_found(f"Servable not found for request: Specific({model_spec.name}, {version})")
        elif model_spec.name != self.name or current is None:
            raise not_found(f"Servable not found for request: Latest({model_spec.name})")
        return current

    def version_states(self):
        """A snapshot {version: VersionState} of every version seen so far."""
        with self._lock:
            return dict(self._states)

    def poll(self):
        """Scans the base path once and loads/unloads versions as needed (the poller thread calls this)."""
        try:
            on_disk = scan_versions(self.base_path, self._too_large)
        except OSError as error:
            log.warning("cannot list model base path %s: %s", self.base_path, error)
            return
        self._retries.forget_missing(on_disk)
        candidates = [version for version, path in on_disk.items() if self._retries.may_try(version, path)]
        current = self._current
        if not candidates:
            if current is not None and current.version not in on_disk:
                self._swap(None)
            return
        latest = max(candidates)
        if current is None or current.version != latest:
            self._load_and_swap(latest, on_disk[latest])

    def _poll_forever(self):
        while not self._stop.wait(self.poll_seconds):
            try:
                self.poll()
            except Exception:  # noqa: BLE001 - the poller must survive anything and keep serving
                log.exception("polling %s failed", self.base_path)

    def _load_and_swap(self, version, path):
        self._set_state(version, State.LOADING)
        try:
            servable = self._load_in_time(version, path)
        except _Stopped:
            self._set_state(version, State.END, ServingError(grpc.StatusCode.CANCELLED, "the server stopped"))
            return
        except Exception as error:  # noqa: BLE001 - any load failure is reported, never fatal
            failure = _load_error(error, path)
            delay = self._retries.failed(version, path)
            self._set_state(version, State.END, failure)
            retry = (f"retrying in {delay:g} s, or as soon as its files change" if delay is not None
                     else "retrying only when its files change")
            log.error("Loading servable: {name: %s version: %d} failed: %s (%s)", self.name, version,
                      failure.message, retry)
            return
        self._retries.succeeded(version)
        self._set_state(version, State.AVAILABLE)
        log.info("Successfully loaded servable version {name: %s version: %d} from %s", self.name, version, path)
        self._swap(servable)

    def _load_in_time(self, version, path):
        """Loads on a daemon thread, waiting up to `load_timeout_seconds` or until `stop()`."""
        loading = _Loading(self._load, self.name, version, path)
        self._loading = loading
        if self._stop.is_set():
            loading.abandon()
        try:
            finished = loading.wait(self.load_timeout_seconds)
        finally:
            self._loading = None
        if self._stop.is_set():
            raise _Stopped()
        if not finished:
            raise ServingError(grpc.StatusCode.DEADLINE_EXCEEDED,
                               f"loading did not finish within {self.load_timeout_seconds:g} s "
                               f"(--load_timeout_seconds); abandoned")
        return loading.result()

    def _swap(self, servable):
        old, self._current = self._current, servable
        if old is not None:
            version = old.version
            self._set_state(version, State.UNLOADING)
            del old  # in-flight requests keep their own reference; the version is freed once they finish
            self._set_state(version, State.END)
            log.info("Successfully unloaded servable version {name: %s version: %d}", self.name, version)
        if self._on_change is not None:
            self._on_change(servable is not None)

    def _set_state(self, version, state, error=None):
        with self._lock:
            self._states[version] = VersionState(state, error)


class _Stopped(Exception):
    """The manager stopped while a version was loading."""


class _Loading:
    """One load running on its own daemon thread, which can be waited for with a timeout or abandoned."""

    def __init__(self, load, name, version, path):
        self._done = threading.Event()
        self._servable = self._error = None
        self._abandoned = False
        threading.Thread(target=self._run, args=(load, name, version, path), name=f"load-{version}",
                         daemon=True).start()

    def wait(self, timeout):
        """True once the load finished, False when `timeout` passed or it was abandoned first."""
        return self._done.wait(timeout) and not self._abandoned

    def abandon(self):
        self._abandoned = True
        self._done.set()

    def result(self):
        if self._error is not None:
            raise self._error
        return self._servable

    def _run(self, load, name, version, path):
        try:
            self._servable = load(name, version, path)
        except Exception as error:  # noqa: BLE001 - raised in the waiting thread by result()
            self._error = error
        self._done.set()


def _load_error(error, path):
    if isinstance(error, ServingError):
        return error
    if isinstance(error, tf.errors.OpError):
        failure = from_tf_error(error)
    else:
        failure = ServingError(grpc.StatusCode.UNKNOWN, f"{type(error).__name__}: {error}")
    if "Op type not registered" in failure.message:
        failure.message += (f" (list the ops of the export and where they come from with `python -m "
                            f"keras_bert_lite.export.audit {path}`)")
    return failure


def scan_versions(base_path, warned=None):
    """{version: directory} for the version directories of `base_path` that hold a saved_model.pb.

    Args:
        base_path: The model base path.
        warned: A set of the directories whose version is too large (> `MAX_VERSION`) already warned about;
            each is warned about once and added. None: warn about every one.
    """
    versions = {}
    with os.scandir(base_path) as entries:
        for entry in entries:
            if not _VERSION_NAME.fullmatch(entry.name) or not entry.is_dir():
                continue
            if int(entry.name) > MAX_VERSION:
                if warned is None or entry.path not in warned:
                    log.warning("Ignoring version directory %s: version %s is beyond the largest TF Serving allows "
                                "(%d, int64); rename it to a smaller integer", entry.path, entry.name, MAX_VERSION)
                    if warned is not None:
                        warned.add(entry.path)
                continue
            if os.path.exists(os.path.join(entry.path, "saved_model.pb")):
                versions[int(entry.name)] = entry.path
    return versions

"""Loads the versions of one model from `base_path/<integer version>/` and serves those its version policy selects.

Like TF Serving's file-system source feeding its aspired-versions manager with the default availability-preserving
policy: the base path is polled every `poll_seconds`; the versions the model's `VersionPolicy` selects (its
*aspired* versions; by default the highest one) are loaded in the background, highest first, while the versions
already served keep answering. Each loaded version joins the served set atomically (the set is replaced by a single
reference assignment, never changed in place, so every request sees the old set or the new one, never neither).
A served version the policy no longer selects is unloaded once an aspired version is available, or at once when
the policy selects nothing (its directories are gone); while no aspired version is available, the highest such
version keeps serving. "Latest" is the highest version served. Requests already running on an unloaded version
keep their reference to it and finish normally.

Skipped: names starting with "." (our exporter writes to a hidden temp dir and renames it into place), names
that are not integers, integers beyond TF Serving's int64 versions (0..2**63-1; logged once, as a warning), and
directories without saved_model.pb yet (retried at the next poll). A version that fails to load is logged and
reported by GetModelStatus (END with the error); the versions served keep being served, and the failed one is
tried again as `LoadRetries` says (as soon as its files change, else with backoff). A load that takes longer
than `load_timeout_seconds` is abandoned and counts as failed, so a load that hangs blocks neither newer versions
nor shutdown.

Loads run on threads of their own. `stop()` abandons the load in progress (its `cancelled` event tells the
loader, which stops warming up); `join()` then waits for every thread the manager started to leave TensorFlow:
a thread still inside TensorFlow when the interpreter exits aborts the process (see `__main__`).
"""

import logging
import os
import re
import threading
import time

import grpc
import tensorflow as tf
from tensorflow_serving.apis import get_model_status_pb2

from keras_bert_lite.serving.errors import ServingError, from_tf_error
from keras_bert_lite.serving.load_retries import LoadRetries
from keras_bert_lite.serving.servable import load_servable

log = logging.getLogger(__name__)
State = get_model_status_pb2.ModelVersionStatus.State
_VERSION_NAME = re.compile("[0-9]+")  # also rules out hidden directories such as ".tmp-export-2"
DEFAULT_LOAD_TIMEOUT_SECONDS = 300.0
DEFAULT_MAX_LOAD_RETRIES = 5  # TF Serving's max_num_load_retries
_CANCELLED = "loading was cancelled: the server is stopping, or the model left the config"
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
    """Serves the versions of one model that its `ModelConfig`'s version policy selects.

    Args:
        config: The model's `ModelConfig` (name, base path, version policy; its labels are the registry's).
        poll_seconds: Seconds between scans of the base path; 0 scans once, at `start()`.
        load: Callable (name, version, path, cancelled: threading.Event) -> Servable; `load_servable` by default
            (`warmup.WarmingLoader` warms versions up; tests swap it). `cancelled` is set when the load is
            abandoned.
        load_timeout_seconds: A load still running after this long is abandoned and counts as failed.
        max_load_retries: Retries of a failed version whose files do not change (see `LoadRetries`).
        on_change: Called with whether any version is served after every change of the served set, from the
            thread that changed it (for the health service).
    """

    def __init__(
        self,
        config,
        poll_seconds,
        load=None,
        load_timeout_seconds=DEFAULT_LOAD_TIMEOUT_SECONDS,
        max_load_retries=DEFAULT_MAX_LOAD_RETRIES,
        on_change=None,
    ):
        self.config = config
        self.poll_seconds = poll_seconds
        self.load_timeout_seconds = load_timeout_seconds
        self._load = load or _plain_load
        self._on_change = on_change
        self._served = {}  # version -> Servable; replaced as a whole, never changed in place
        self._states = {}  # version -> VersionState
        self._retries = LoadRetries(poll_seconds or 1.0, max_load_retries)
        self._too_large = set()  # version directories warned about by scan_versions
        self._missing = set()  # "specific" versions warned about as missing
        self._lock = threading.Lock()
        self._poll_lock = threading.Lock()  # one poll at a time: the poller's, or the registry's after a change
        self._stop = threading.Event()
        self._loading = None  # the _Loading in progress, which stop() abandons
        self._threads = []  # the poller and every load thread, for join()

    @property
    def name(self):
        return self.config.name

    def start(self):
        """Loads the versions found now (blocking until they are loaded, failed, or `stop()`), then keeps
        polling in a background thread."""
        self.poll()
        if not self._served and not self._states:
            base_path = self.config.base_path
            hint = (
                f"; {base_path} itself holds a SavedModel: move it into {base_path}/1/"
                if os.path.exists(os.path.join(base_path, "saved_model.pb"))
                else ""
            )
            log.warning(
                "No versions of servable %s found under base path %s (expecting <base path>/<integer "
                "version>/saved_model.pb)%s",
                self.name,
                base_path,
                hint,
            )
        if self.poll_seconds > 0 and not self._stop.is_set():
            self._start_thread(self._poll_forever, f"version-poller-{self.name}")

    def stop(self):
        """Stops polling and abandons the load in progress, without waiting for its thread (see `join`)."""
        self._stop.set()
        loading = self._loading
        if loading is not None:
            loading.abandon()

    def join(self, deadline):
        """Waits until every thread this manager started has finished, or `deadline` (time.monotonic()) passes.

        Returns:
            The names of the threads still running.
        """
        for thread in list(self._threads):
            thread.join(max(0.0, deadline - time.monotonic()))
        return [thread.name for thread in self._threads if thread.is_alive()]

    def retire(self):
        """Stops the manager and unloads every version: the model left the config."""
        self.stop()
        with self._poll_lock:
            self._replace({}, unloaded=sorted(self._served))

    def reconfigure(self, config):
        """Takes a new `ModelConfig` of the same name (base path, version policy), used from the next poll on."""
        self.config = config

    def served(self, version=None):
        """The served Servable of `version`, or the latest served one for None; None when there is none."""
        served = self._served
        if version is None:
            return served[max(served)] if served else None
        return served.get(version)

    def available_versions(self):
        """The versions served now."""
        return set(self._served)

    def version_states(self):
        """A snapshot {version: VersionState} of every version seen so far."""
        with self._lock:
            return dict(self._states)

    def poll(self):
        """Scans the base path once; loads the aspired versions not served yet and unloads as the policy says."""
        with self._poll_lock:
            on_disk = self._scan()
            if on_disk is None:
                return
            aspired = self._aspired(on_disk)
            self._unload_unaspired(aspired)
            for version in sorted(aspired - set(self._served), reverse=True):
                if self._stop.is_set():
                    return
                if self._retries.may_try(version, on_disk[version]) and self._load_version(version, on_disk[version]):
                    self._unload_unaspired(aspired)

    def _scan(self):
        try:
            on_disk = scan_versions(self.config.base_path, self._too_large)
        except OSError as error:
            log.warning("cannot list model base path %s: %s", self.config.base_path, error)
            return None
        self._retries.forget_missing(on_disk)
        return on_disk

    def _aspired(self, on_disk):
        """The versions the policy selects among `on_disk`; warns once about each "specific" version missing."""
        policy = self.config.policy
        missing = set(policy.missing(on_disk))
        for version in sorted(missing - self._missing):
            log.warning(
                "Version %d of servable %s, which was requested to be served as a 'specific' version in "
                "the servable's version policy, was not found in the file system",
                version,
                self.name,
            )
        self._missing = missing
        return policy.select(on_disk)

    def _unload_unaspired(self, aspired):
        """Unloads the served versions the policy no longer selects, keeping the highest of them while no
        aspired version is served (TF Serving's AvailabilityPreservingPolicy)."""
        served = self._served
        unaspired = sorted(set(served) - aspired)
        keep_one = bool(aspired) and not aspired & set(served)
        unloaded = unaspired[:-1] if keep_one else unaspired
        if unloaded:
            self._replace({v: s for v, s in served.items() if v not in unloaded}, unloaded=unloaded)

    def _poll_forever(self):
        while not self._stop.wait(self.poll_seconds):
            try:
                self.poll()
            except Exception:  # noqa: BLE001 - the poller must survive anything and keep serving
                log.exception("polling %s failed", self.config.base_path)

    def _load_version(self, version, path):
        """Loads `version` and adds it to the served set; returns whether it loaded."""
        self._set_state(version, State.LOADING)
        log.info("Loading servable version {name: %s version: %d} from %s", self.name, version, path)
        try:
            servable = self._load_in_time(version, path)
        except _Stopped:
            self._set_state(version, State.END, ServingError(grpc.StatusCode.CANCELLED, _CANCELLED))
            return False
        except Exception as error:  # noqa: BLE001 - any load failure is reported, never fatal
            self._load_failed(version, path, _load_error(error, path))
            return False
        self._retries.succeeded(version)
        self._replace({**self._served, version: servable})  # served first: AVAILABLE and the log line promise it
        self._set_state(version, State.AVAILABLE)
        log.info("Successfully loaded servable version {name: %s version: %d} from %s", self.name, version, path)
        return True

    def _load_failed(self, version, path, failure):
        delay = self._retries.failed(version, path)
        self._set_state(version, State.END, failure)
        retry = (
            f"retrying in {delay:g} s, or as soon as its files change"
            if delay is not None
            else "retrying only when its files change"
        )
        log.error(
            "Loading servable: {name: %s version: %d} failed: %s (%s)", self.name, version, failure.message, retry
        )

    def _load_in_time(self, version, path):
        """Loads on a daemon thread, waiting up to `load_timeout_seconds` or until `stop()`."""
        loading = _Loading(self._load, self.name, version, path)
        self._keep(loading.thread)
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
            loading.abandon()
            raise ServingError(
                grpc.StatusCode.DEADLINE_EXCEEDED,
                f"loading did not finish within {self.load_timeout_seconds:g} s (--load_timeout_seconds); abandoned",
            )
        return loading.result()

    def _replace(self, served, unloaded=()):
        """Serves `served` ({version: Servable}) from now on; marks the `unloaded` versions END."""
        self._served = served
        for version in unloaded:
            self._set_state(version, State.UNLOADING)
            self._set_state(version, State.END)  # requests in flight keep their own reference to the version
            log.info("Successfully unloaded servable version {name: %s version: %d}", self.name, version)
        if self._on_change is not None:
            self._on_change(bool(served))

    def _set_state(self, version, state, error=None):
        with self._lock:
            self._states[version] = VersionState(state, error)

    def _start_thread(self, target, name):
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._keep(thread)
        thread.start()

    def _keep(self, thread):
        """Remembers `thread` for `join()`, forgetting the threads that have finished."""
        self._threads = [kept for kept in self._threads if kept.is_alive()] + [thread]


class _Stopped(Exception):
    """The manager stopped while a version was loading."""


class _Loading:
    """One load running on its own daemon thread, which can be waited for with a timeout or abandoned.

    Attributes:
        thread: The loading thread.
        cancelled: Set when the load is abandoned; the loader may stop early (warm-up does).
    """

    def __init__(self, load, name, version, path):
        self._done = threading.Event()
        self.cancelled = threading.Event()
        self._servable = self._error = None
        self.thread = threading.Thread(
            target=self._run, args=(load, name, version, path), name=f"load-{name}-{version}", daemon=True
        )
        self.thread.start()

    def wait(self, timeout):
        """True once the load finished, False when `timeout` passed or it was abandoned first."""
        return self._done.wait(timeout) and not self.cancelled.is_set()

    def abandon(self):
        self.cancelled.set()
        self._done.set()

    def result(self):
        if self._error is not None:
            raise self._error
        return self._servable

    def _run(self, load, name, version, path):
        try:
            self._servable = load(name, version, path, self.cancelled)
        except Exception as error:  # noqa: BLE001 - raised in the waiting thread by result()
            self._error = error
        self._done.set()


def _plain_load(name, version, path, cancelled):
    """`load_servable`, without warm-up."""
    return load_servable(name, version, path)


def _load_error(error, path):
    if isinstance(error, ServingError):
        return error
    if isinstance(error, tf.errors.OpError):
        failure = from_tf_error(error)
    else:
        failure = ServingError(grpc.StatusCode.UNKNOWN, f"{type(error).__name__}: {error}")
    if "Op type not registered" in failure.message:
        failure.message += (
            f" (list the ops of the export and where they come from with `python -m "
            f"keras_bert_lite.export.audit {path}`)"
        )
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
                    log.warning(
                        "Ignoring version directory %s: version %s is beyond the largest TF Serving allows "
                        "(%d, int64); rename it to a smaller integer",
                        entry.path,
                        entry.name,
                        MAX_VERSION,
                    )
                    if warned is not None:
                        warned.add(entry.path)
                continue
            if os.path.exists(os.path.join(entry.path, "saved_model.pb")):
                versions[int(entry.name)] = entry.path
    return versions

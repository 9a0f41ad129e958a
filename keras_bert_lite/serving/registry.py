"""The models a server serves, by name, their version labels, and the one way a request finds its version.

`servable(model_spec)` is the only place a request's `ModelSpec` (name, and `version` or `version_label`) is
resolved, for every API and front end, with TF Serving's statuses (server_core.cc, ServableRequestFromModelSpec
and GetModelVersionForLabel; basic_manager.cc):

- no name: INVALID_ARGUMENT "ModelSpec has no name specified.";
- a label the model does not define: INVALID_ARGUMENT "Unrecognized servable version label: <label>";
- an unknown or removed model, a version not served now (not loaded yet, failed, unloaded, or one a label
  points to that is not available): NOT_FOUND "Servable not found for request: Latest(<name>)" or
  "Specific(<name>, <version>)".

`apply(configs)` makes the registry serve exactly the given `ModelConfig`s, as TF Serving's ReloadConfig does:
the labels are checked first (`labels.assign_labels`; a refusal leaves everything as it was), then models that
left are removed (requests for them: NOT_FOUND from then on, while requests already running on one of their
versions finish), models whose path or policy changed take the new config at once, and new models are loaded
before `apply` returns. Each model keeps its own `ModelManager`, so a model's version swaps, retries and failures
never touch the others.
"""

import logging
import threading

from keras_bert_lite.serving.errors import invalid_argument, not_found
from keras_bert_lite.serving.labels import assign_labels

log = logging.getLogger(__name__)


class ModelRegistry:
    """Several models, each served by its `ModelManager`.

    Args:
        make_manager: Callable (ModelConfig, on_change) -> ModelManager, not started.
        allow_unavailable_labels: `--allow_version_labels_for_unavailable_models` (see `labels`).
        on_change: Called with (model name, whether a version of it is served) when that may have changed,
            from any thread (for the health service).
    """

    def __init__(self, make_manager, allow_unavailable_labels=False, on_change=None):
        self._make_manager = make_manager
        self._allow_unavailable_labels = allow_unavailable_labels
        self._on_change = on_change or (lambda name, serving: None)
        self._models = {}  # name -> ModelManager; replaced as a whole, never changed in place
        self._labels = {}  # name -> {label: version}; replaced as a whole
        self._retired = {}  # name -> the ModelManager of a model that left the config (its states)
        self._managers = []  # every manager ever started, for join()
        self._configs = None  # the ModelConfigs in force
        self._lock = threading.Lock()  # one apply at a time
        self._stopped = threading.Event()

    @property
    def configs(self):
        """The tuple of `ModelConfig`s applied last (None before the first)."""
        return self._configs

    def names(self):
        """The names of the models in the config, sorted."""
        return sorted(self._models)

    def apply(self, configs):
        """Serves exactly `configs` (a tuple of `ModelConfig`): see the module docstring.

        Raises:
            ServingError: FAILED_PRECONDITION for a label the labels rule refuses; nothing changed.
        """
        with self._lock:
            self._labels = assign_labels(configs, self._available(), self._labels, self._allow_unavailable_labels)
            self._configs = configs
            wanted = {config.name for config in configs}
            for name in sorted(set(self._models) - wanted):
                self._remove(name)
            for config in configs:
                if self._stopped.is_set():
                    return
                self._update(config) if config.name in self._models else self._add(config)

    def servable(self, model_spec):
        """The loaded version a request's `ModelSpec` asks for (see the module docstring for the errors).

        Raises:
            ServingError: INVALID_ARGUMENT or NOT_FOUND, with TF Serving's messages.
        """
        name = model_spec.name
        if not name:
            raise invalid_argument("ModelSpec has no name specified.")
        version = self.requested_version(model_spec)
        manager = self._models.get(name)
        servable = None if manager is None else manager.served(version)
        if servable is None:
            wanted = f"Latest({name})" if version is None else f"Specific({name}, {version})"
            raise not_found(f"Servable not found for request: {wanted}")
        return servable

    def requested_version(self, model_spec):
        """The version a `ModelSpec` names, directly or by label; None for the latest.

        Raises:
            ServingError: INVALID_ARGUMENT for a label the model does not define.
        """
        choice = model_spec.WhichOneof("version_choice")
        if choice == "version_label":
            version = self._labels.get(model_spec.name, {}).get(model_spec.version_label)
            if version is None:
                raise invalid_argument(f"Unrecognized servable version label: {model_spec.version_label}")
            return version
        return model_spec.version.value if choice == "version" else None

    def labels(self, name):
        """{label: version} of model `name`."""
        return dict(self._labels.get(name, {}))

    def version_states(self, name):
        """{version: VersionState} of every version of model `name` seen, also after it left the config."""
        manager = self._models.get(name) or self._retired.get(name)
        return {} if manager is None else manager.version_states()

    def stop(self):
        """Stops every manager: no more polls or loads (loads in progress are abandoned)."""
        self._stopped.set()
        for manager in list(self._managers):
            manager.stop()

    def join(self, deadline):
        """Waits for every manager's threads until `deadline` (time.monotonic()); returns those still running."""
        return [name for manager in list(self._managers) for name in manager.join(deadline)]

    def _available(self):
        return {name: manager.available_versions() for name, manager in self._models.items()}

    def _add(self, config):
        manager = self._make_manager(config, on_change=lambda serving: self._on_change(config.name, serving))
        self._managers.append(manager)
        self._retired.pop(config.name, None)
        self._models = {**self._models, config.name: manager}
        self._on_change(config.name, False)
        log.info("Adding model %s: base path %s, version policy %s", config.name, config.base_path, config.policy)
        if not self._stopped.is_set():
            manager.start()

    def _update(self, config):
        manager = self._models[config.name]
        unchanged = (manager.config.base_path, manager.config.policy) == (config.base_path, config.policy)
        manager.reconfigure(config)
        if unchanged:
            return
        log.info("Updating model %s: base path %s, version policy %s", config.name, config.base_path, config.policy)
        manager.poll()

    def _remove(self, name):
        manager = self._models[name]
        self._models = {other: kept for other, kept in self._models.items() if other != name}
        log.info("Removing model %s: it left the config; unloading its versions", name)
        manager.retire()
        self._retired[name] = manager

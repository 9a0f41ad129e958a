"""Re-reads `--model_config_file` every `--model_config_file_poll_wait_seconds` and applies what changed.

As TF Serving's PollFilesystemAndReloadConfig: a file that cannot be read or parsed, or whose config is refused,
is logged and the running config stays (the server never goes down for it); an empty file is no action. Unlike
TF Serving, which logs the same error at every poll, each error is logged once, until it changes or the config
applies. A config refused for its labels is tried again at every poll, since the versions its labels need may
become available (as in TF Serving, whose every poll reapplies the file).
"""

import logging
import threading
import time

from keras_bert_lite.serving.errors import ServingError
from keras_bert_lite.serving.model_config import ConfigError, parse_config

log = logging.getLogger(__name__)


class ConfigPoller:
    """Polls a config file on a daemon thread, applying it to a `ModelRegistry`.

    Args:
        path: The `--model_config_file`.
        registry: The `ModelRegistry` to apply the file's config to.
        poll_seconds: Seconds between reads (> 0).
    """

    def __init__(self, path, registry, poll_seconds):
        self.path = path
        self._registry = registry
        self._poll_seconds = poll_seconds
        self._text = None  # the file's content when it was last parsed
        self._wanted = None  # its ModelConfigs; None when it could not be parsed or was empty
        self._reported = None  # the last error logged
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll_forever, name="config-poller", daemon=True)

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()

    def join(self, deadline):
        """Waits for the polling thread until `deadline` (time.monotonic()); returns it if still running."""
        if self._thread.is_alive():
            self._thread.join(max(0.0, deadline - time.monotonic()))
        return [self._thread.name] if self._thread.is_alive() else []

    def poll(self):
        """Reads the file once; applies its config when it differs from the one in force."""
        try:
            with open(self.path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as error:
            self._report(f"Failed to read ModelServerConfig file: {error}")
            return
        if text != self._text:
            self._text = text
            self._wanted = self._parse(text)
        if self._wanted is not None and self._wanted != self._registry.configs:
            self._apply(self._wanted)

    def _parse(self, text):
        try:
            configs = parse_config(text, self.path)
        except ConfigError as error:
            self._report(f"Failed to read ModelServerConfig file: {error}; still serving the previous config")
            return None
        self._reported = None
        if configs is None:
            log.info("Taking no action for empty config %s", self.path)
        return configs

    def _apply(self, configs):
        try:
            self._registry.apply(configs)
        except ServingError as error:
            self._report(
                f"Failed to reload the config of {self.path}: {error.code.name}: {error.message}; still "
                f"serving the previous config"
            )
            return
        self._reported = None
        log.info(
            "Finished reloading config %s: serving %s", self.path, ", ".join(self._registry.names()) or "no models"
        )

    def _report(self, message):
        if message != self._reported:
            log.error("%s", message)
            self._reported = message

    def _poll_forever(self):
        while not self._stop.wait(self._poll_seconds):
            try:
                self.poll()
            except Exception:  # noqa: BLE001 - the poller must survive anything and keep serving
                log.exception("polling %s failed", self.path)

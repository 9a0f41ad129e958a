"""When to try loading again a version that failed to load.

A version directory can fail to load because it is still being written: `cp -r`, rsync or gsutil copy
`saved_model.pb` before `variables/`, and the poller sees the version as soon as `saved_model.pb` exists. Like
TF Serving (which retries a failed load `max_num_load_retries` times), a failed version is tried again:

- at the first poll after its files change (a copy that lands more files, a file that grows), whatever the
  number of tries so far, so a non-atomic copy is served one poll after it completes;
- otherwise after a backoff that doubles from one poll interval, at most `max_retries` times: a version that
  is broken for good and does not change stops costing a load attempt.
"""

import os
import time


class LoadRetries:
    """The failed versions of a model and when each may be tried again.

    Args:
        first_delay: Seconds before the first retry of an unchanged version (then doubling).
        max_retries: How many retries an unchanged version gets.
        clock: The monotonic clock (tests swap it).
    """

    def __init__(self, first_delay, max_retries, clock=time.monotonic):
        self.first_delay = first_delay
        self.max_retries = max_retries
        self._clock = clock
        self._failed = {}  # version -> (failures, next try time, files fingerprint)

    def failed(self, version, path):
        """Records a failed load of `version` (files at `path`); returns the seconds until its next retry or None."""
        failures = self._failed.get(version, (0, None, None))[0] + 1
        retry = failures <= self.max_retries
        delay = self.first_delay * 2 ** (failures - 1) if retry else None
        next_try = self._clock() + delay if retry else None
        self._failed[version] = (failures, next_try, fingerprint(path))
        return delay

    def succeeded(self, version):
        self._failed.pop(version, None)

    def may_try(self, version, path):
        """Whether `version` may be loaded now: never failed, changed since it failed, or its backoff is over."""
        if version not in self._failed:
            return True
        failures, next_try, files = self._failed[version]
        if fingerprint(path) != files:
            return True
        return next_try is not None and self._clock() >= next_try

    def forget_missing(self, versions):
        """Forgets the failures of versions no longer on disk (a version that comes back starts afresh)."""
        for version in set(self._failed) - set(versions):
            del self._failed[version]


def fingerprint(path):
    """The (relative path, size, mtime) of every file under `path`, sorted: changes when a copy lands more."""
    files = []
    for directory, _, names in os.walk(path):
        for name in names:
            full = os.path.join(directory, name)
            try:
                stat = os.stat(full)
            except OSError:  # removed while we looked
                continue
            files.append((os.path.relpath(full, path), stat.st_size, stat.st_mtime_ns))
    return tuple(sorted(files))

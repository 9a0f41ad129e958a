"""One command at a time in a run directory.

Two commands resuming one `--model_dir` would each train from the same checkpoint, write each other's
checkpoints and files, and do the work twice. So a training command holds an exclusive lock on
`<model_dir>/run.lock` while it runs, and a second one is refused at once, naming the process that holds it. The
operating system drops the lock when its process ends, however it ends (`kill -9` too), so a crashed run never
leaves a directory locked; the file itself stays, and only says who held it last.

Only the chief process of a multi-worker job takes the lock: the others share its directory on purpose. Where
the platform has no `fcntl` (Windows), nothing is locked.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import os
import socket

try:
    import fcntl
except ImportError:     # Windows
    fcntl = None

from keras_bert_lite.artifacts import RUN_LOCK_FILE
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.training.distribute import is_chief_task


@contextlib.contextmanager
def run_dir_lock(run_dir: str):
    """Holds `run_dir`'s lock inside the `with` block (creating the directory).

    Raises:
        SettingsError: another process holds it; the message names that process and the ways out.
    """
    if fcntl is None or (os.path.exists(run_dir) and not os.path.isdir(run_dir)):
        yield      # (a file where the directory goes is the command's own error to report)
        return
    os.makedirs(run_dir, exist_ok=True)
    with open(os.path.join(run_dir, RUN_LOCK_FILE), "a+", encoding="utf-8") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            raise SettingsError(f"{run_dir} is in use by {holder}: two runs in one directory would overwrite each "
                                "other's checkpoints. Wait for it to end, or give another --model_dir.") from None
        lock.truncate(0)
        started = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
        lock.write(f"process {os.getpid()} on {socket.gethostname()}, since {started}\n")
        lock.flush()
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def holds_run_dir(run):
    """Decorates a command's `run(job, ...)`: the chief process holds `job.model_dir`'s lock while it runs."""
    @functools.wraps(run)
    def locked(job, *args, **kwargs):
        with run_dir_lock(job.model_dir) if is_chief_task() else contextlib.nullcontext():
            return run(job, *args, **kwargs)
    return locked

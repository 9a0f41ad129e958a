"""One command at a time in a run directory.

Two commands resuming one `--model_dir` would each train from the same checkpoint, write each other's
checkpoints and files, and do the work twice. So a training command holds an exclusive lock on
`<model_dir>/run.lock` while it runs, and a second one is refused at once, naming the process that holds it. The
operating system drops the lock when its process ends, however it ends (`kill -9` too), so a crashed run never
leaves a directory locked; the file itself stays, and only says who held it last.

A directory this command created is removed again, lock file and all, when the command fails before writing
anything into it (a setting refused once the model is loaded, a bad input file, Ctrl-C): a refused command leaves
nothing behind. A directory that existed before, or that holds any other file, is kept.

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
except ImportError:  # Windows
    fcntl = None

from keras_bert_lite.artifacts import RUN_LOCK_FILE
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.training.distribute import is_chief_task
from keras_bert_lite.utils.files import missing_dirs, remove_unused_dirs


@contextlib.contextmanager
def run_dir_lock(run_dir: str):
    """Holds `run_dir`'s lock inside the `with` block (creating the directory; removing it again when the block
    fails and it holds nothing but the lock, module docstring).

    Raises:
        SettingsError: `run_dir` is a file, or another process holds its lock; the message names the way out.
    """
    if os.path.exists(run_dir) and not os.path.isdir(run_dir):
        raise SettingsError(
            f"--model_dir {run_dir}: is a file; the run's directory goes there. Pass a new "
            "directory, or the run directory to resume."
        )
    if fcntl is None:
        yield
        return
    created, path = missing_dirs(run_dir), os.path.join(run_dir, RUN_LOCK_FILE)
    os.makedirs(run_dir, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as lock:
        _take(lock, run_dir)
        try:
            yield
        except BaseException:
            remove_unused_dirs(created, allowed=(path,))  # still locked: no other command is in it
            raise
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _take(lock, run_dir: str) -> None:
    """Takes the lock of the open lock file and writes who holds it, or refuses naming the holder."""
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        holder = lock.read().strip() or "another process"
        raise SettingsError(
            f"{run_dir} is in use by {holder}: two runs in one directory would overwrite each "
            "other's checkpoints. Wait for it to end, or give another --model_dir."
        ) from None
    lock.truncate(0)
    started = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    lock.write(f"process {os.getpid()} on {socket.gethostname()}, since {started}\n")
    lock.flush()


def holds_run_dir(run):
    """Decorates a command's `run(job, ...)`: the chief process holds `job.model_dir`'s lock while it runs."""

    @functools.wraps(run)
    def locked(job, *args, **kwargs):
        with run_dir_lock(job.model_dir) if is_chief_task() else contextlib.nullcontext():
            return run(job, *args, **kwargs)

    return locked

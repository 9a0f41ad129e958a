"""Atomic writes: a file or directory the user sees is either absent or complete, never half-written."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile


def cache_dir(name: str) -> str:
    """The library's cache folder `name`: under KERAS_BERT_LITE_CACHE, else XDG_CACHE_HOME (or ~/.cache) /
    keras_bert_lite."""
    root = os.environ.get("KERAS_BERT_LITE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "keras_bert_lite")
    return os.path.join(os.path.expanduser(root), name)


def writable_dir(path: str) -> str | None:
    """`path`, created if need be, when this process can write there; else None."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return None
    return path if os.access(path, os.W_OK | os.X_OK) else None


def atomic_save_model(model, path: str | os.PathLike) -> None:
    """`model.save(path)` (a `.keras` file) so that `path` is either the previous file or the complete new one."""
    with atomic_path(path) as tmp:
        model.save(tmp)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Writes `text` to `path` via a temporary file in the same directory and an atomic rename."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yields a temporary path beside `path`; on success renames it onto `path` (file or directory).

    On any exception the temporary is removed and `path` keeps its previous content.
    """
    path = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    # Hidden, and keeping the extension (keras.saving insists on ".keras").
    stem, ext = os.path.splitext(os.path.basename(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{stem}.tmp-", suffix=ext, dir=parent)
    os.close(fd)
    os.unlink(tmp)  # callers create a file or a directory of this name themselves
    try:
        yield tmp
        if os.path.isdir(tmp) and os.path.isdir(path):
            # Directories cannot be replaced atomically by rename(2); swap via a second temporary name.
            old = tmp + ".old"
            os.rename(path, old)
            os.rename(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
        elif os.path.exists(tmp):
            os.unlink(tmp)

"""Atomic writes: a file or directory the user sees is either absent or complete, never half-written. And the
directories a command made for files it never wrote, removed again when it fails (`remove_unused_dirs`)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile


def cache_dir(name: str) -> str:
    """The library's cache folder `name`: under KERAS_BERT_LITE_CACHE, else XDG_CACHE_HOME (or ~/.cache) /
    keras_bert_lite."""
    root = os.environ.get("KERAS_BERT_LITE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "keras_bert_lite"
    )
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


# ---------------------------------------------------------------- directories a failed command made
def missing_dirs(path: str | os.PathLike) -> list[str]:
    """`path` and those of its parents that do not exist yet, deepest first (absolute): what creating `path` will
    make, for `remove_unused_dirs`."""
    missing, path = [], os.path.abspath(os.fspath(path))
    while not os.path.lexists(path):
        missing.append(path)
        path = os.path.dirname(path)
    return missing


def remove_unused_dirs(created: list[str], allowed: tuple[str, ...] = ()) -> None:
    """Removes the directories `created` (`missing_dirs`, taken before they were made) when no file but the
    `allowed` paths is in them: a command that fails before writing anything leaves no empty directory behind.
    Never a directory that existed before, nor one that holds another file (or link); errors are ignored, so that
    the command's own error is the one reported."""
    if not created or not os.path.isdir(created[0]) or _holds_files(created[0], allowed):
        return
    shutil.rmtree(created[0], ignore_errors=True)
    for parent in created[1:]:
        with contextlib.suppress(OSError):
            os.rmdir(parent)  # only while empty


@contextlib.contextmanager
def dirs_removed_on_failure(path: str | os.PathLike):
    """A context manager: when its block fails, the directory `path` and the parents the block created are
    removed again if they hold no file (`remove_unused_dirs`)."""
    created = missing_dirs(path)
    try:
        yield
    except BaseException:
        remove_unused_dirs(created)
        raise


def _holds_files(top: str, allowed: tuple[str, ...]) -> bool:
    """Whether the tree under `top` holds a file or link other than the `allowed` paths."""
    allowed = {os.path.abspath(p) for p in allowed}
    return any(
        os.path.abspath(os.path.join(root, name)) not in allowed
        for root, dirs, files in os.walk(top)
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]
    )

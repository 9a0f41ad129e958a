"""Resume checkpoints that survive their own corruption: find every checkpoint, restore the newest readable one.

`tf.train.CheckpointManager` trusts the `checkpoint` state file. When that file is unreadable it silently reports
no checkpoint (a run restarts from step 0), and when the newest checkpoint's files are damaged the restore raises
(a run cannot start at all). `restore_latest` instead lists the checkpoints from both the state file and the
`<prefix>-<number>.index` files on disk, tries them newest first, says which ones it skipped and why, and
rewrites a damaged state file so that the manager keeps rotating the checkpoints it found, and removes the partial
files of a save that a kill interrupted (`<prefix>-<number>_temp/`: a checkpoint's size each). `save_checkpoint`
turns a failed save (a full disk) into one `CheckpointWriteError` that says what is kept, after removing the
partial files.
"""

from __future__ import annotations

import logging
import os
import re
import shutil

import tensorflow as tf

logger = logging.getLogger(__name__)


class CheckpointError(RuntimeError):
    """No checkpoint in a directory that has some could be restored."""


class CheckpointWriteError(OSError):
    """A checkpoint could not be written (a full disk, a permission denied): the file system's error."""


def checkpoint_paths(directory: str, prefix: str = "ckpt") -> list[str]:
    """Checkpoint prefixes in `directory`, newest (highest number) first: those the state file lists and
    those whose `.index` file is on disk."""
    numbered = {}
    pattern = re.compile(rf"^{re.escape(prefix)}-(\d+)\.index$")
    if os.path.isdir(directory):
        for name in os.listdir(directory):
            match = pattern.match(name)
            if match:
                numbered[int(match.group(1))] = os.path.join(directory, name[: -len(".index")])
    state = tf.train.get_checkpoint_state(directory) if os.path.isdir(directory) else None
    for path in state.all_model_checkpoint_paths if state else ():
        match = re.search(rf"{re.escape(prefix)}-(\d+)$", path)
        if match:
            numbered.setdefault(int(match.group(1)), os.path.join(directory, os.path.basename(path)))
    return [numbered[n] for n in sorted(numbered, reverse=True)]


def restore_latest(
    checkpoint: tf.train.Checkpoint, directory: str, prefix: str = "ckpt", repair_state: bool = True
) -> str | None:
    """Restores the newest readable checkpoint of `directory` into `checkpoint`.

    Args:
        checkpoint: what to restore (every object it tracks must be in the file).
        directory: the checkpoint directory (of a `tf.train.CheckpointManager`).
        prefix: the manager's `checkpoint_name`.
        repair_state: rewrite the state file if it does not name the restored checkpoint, and remove the partial
            files of interrupted saves (only the one process that writes the checkpoints should).

    Returns:
        The restored checkpoint's path, or None when `directory` holds no checkpoint.

    Raises:
        CheckpointError: checkpoints exist and none of them could be restored; the message gives each one's
            reason (a different model architecture reads as shape or key mismatches).
    """
    if repair_state:
        _remove_interrupted_saves(directory, prefix)
    paths = checkpoint_paths(directory, prefix)
    failures = []
    for path in paths:
        try:
            checkpoint.restore(path).assert_existing_objects_matched()
        except Exception as error:  # noqa: BLE001 - damaged files raise IndexError, OpError, ValueError, ...
            reason = " ".join(str(error).split())[:300] or type(error).__name__
            failures.append(f"{os.path.basename(path)}: {reason}")
            logger.warning("Checkpoint %s cannot be restored (%s); trying the one before it.", path, reason)
            continue
        if failures:
            logger.warning("Resuming from %s, an older checkpoint: the newer ones were unreadable.", path)
        if repair_state:
            _repair_state_file(directory, path, paths)
        return path
    if failures:
        raise CheckpointError(
            f"{directory}: none of its {len(paths)} checkpoints can be restored: "
            + "; ".join(failures)
            + ". If the model or its settings changed, use a new directory; "
            "otherwise the files are damaged: delete the directory to start over."
        )
    return None


def save_checkpoint(manager: tf.train.CheckpointManager, number: int, prefix: str = "ckpt") -> str:
    """`manager.save(checkpoint_number=number)`; if writing fails, the partial files are removed.

    Args:
        manager: the checkpoint manager.
        number: the checkpoint's number.
        prefix: the manager's `checkpoint_name`.

    Returns:
        The saved checkpoint's path.

    Raises:
        CheckpointWriteError: the save failed; the message gives the file system's reason and the checkpoint a
            rerun of the same command resumes from.
    """
    try:
        return manager.save(checkpoint_number=number)
    except tf.errors.OpError as error:  # ResourceExhaustedError: no space left on device; PermissionDenied...
        path = os.path.join(manager.directory, f"{prefix}-{number}")
        shutil.rmtree(path + "_temp", ignore_errors=True)
        for name in os.listdir(manager.directory):
            if name.startswith(f"{prefix}-{number}."):
                os.remove(os.path.join(manager.directory, name))
        kept = (
            f"the latest checkpoint, {manager.latest_checkpoint}, is complete"
            if manager.latest_checkpoint
            else "no earlier checkpoint was written"
        )
        reason = " ".join(re.sub(r"\{\{function_node [^}]*\}\}|\s*\[Op:\w+\]", "", error.message).split())[:300]
        raise CheckpointWriteError(
            f"{path}: the checkpoint could not be written ({reason}); its partial files "
            f"were removed, and {kept}. Free space (or fix the permissions) and run the "
            "same command again: it resumes from there."
        ) from None


def _remove_interrupted_saves(directory: str, prefix: str) -> None:
    """Removes `<prefix>-<number>_temp/` directories: what a save killed before it completed leaves."""
    pattern = re.compile(rf"^{re.escape(prefix)}-\d+_temp$")
    for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else ():
        if pattern.match(name) and os.path.isdir(os.path.join(directory, name)):
            logger.warning(
                "Removing %s: the partial files of a save that did not complete.", os.path.join(directory, name)
            )
            shutil.rmtree(os.path.join(directory, name), ignore_errors=True)


def _repair_state_file(directory: str, restored: str, paths: list[str]) -> None:
    """Rewrites the `checkpoint` state file when it does not name `restored` as the latest checkpoint."""
    state = tf.train.get_checkpoint_state(directory)
    if state and os.path.basename(state.model_checkpoint_path) == os.path.basename(restored):
        return
    logger.warning("%s/checkpoint was missing, damaged or pointed past the restored checkpoint; rewritten.", directory)
    kept = [p for p in reversed(paths) if checkpoint_number(p) <= checkpoint_number(restored)]
    # The manager rotates (deletes) only checkpoints stamped after the last preserved time.
    stamps = [os.path.getmtime(p + ".index") for p in kept]
    tf.compat.v1.train.update_checkpoint_state(
        directory,
        restored,
        all_model_checkpoint_paths=kept,
        all_model_checkpoint_timestamps=stamps,
        last_preserved_timestamp=min(stamps) - 1,
    )


def checkpoint_number(path: str) -> int:
    """The number of a checkpoint path `<prefix>-<number>` (the step or epoch it was saved at)."""
    return int(path.rsplit("-", 1)[1])


def rng_state_variables(model) -> list:
    """The model's random-number-generator states (dropout seeds), which Keras keeps outside `model.weights`
    and `tf.train.Checkpoint` does not find through the model: checkpoint them explicitly, or a resumed run
    draws other dropout masks."""
    weight_ids = {id(w) for w in model.weights}
    return [v.value for v in model.variables if id(v) not in weight_ids]

"""Resume checkpoints that survive their own corruption: find every checkpoint, restore the newest readable one.

`tf.train.CheckpointManager` trusts the `checkpoint` state file. When that file is unreadable it silently reports
no checkpoint (a run restarts from step 0), and when the newest checkpoint's files are damaged the restore raises
(a run cannot start at all). `restore_latest` instead lists the checkpoints from both the state file and the
`<prefix>-<number>.index` files on disk, tries them newest first, says which ones it skipped and why, and
rewrites a damaged state file so that the manager keeps rotating the checkpoints it found.
"""

from __future__ import annotations

import logging
import os
import re

import tensorflow as tf

logger = logging.getLogger(__name__)


class CheckpointError(RuntimeError):
    """No checkpoint in a directory that has some could be restored."""


def checkpoint_paths(directory: str, prefix: str = "ckpt") -> list[str]:
    """Checkpoint prefixes in `directory`, newest (highest number) first: those the state file lists and
    those whose `.index` file is on disk."""
    numbered = {}
    pattern = re.compile(rf"^{re.escape(prefix)}-(\d+)\.index$")
    if os.path.isdir(directory):
        for name in os.listdir(directory):
            match = pattern.match(name)
            if match:
                numbered[int(match.group(1))] = os.path.join(directory, name[:-len(".index")])
    state = tf.train.get_checkpoint_state(directory) if os.path.isdir(directory) else None
    for path in (state.all_model_checkpoint_paths if state else ()):
        match = re.search(rf"{re.escape(prefix)}-(\d+)$", path)
        if match:
            numbered.setdefault(int(match.group(1)), os.path.join(directory, os.path.basename(path)))
    return [numbered[n] for n in sorted(numbered, reverse=True)]


def restore_latest(checkpoint: tf.train.Checkpoint, directory: str, prefix: str = "ckpt",
                   repair_state: bool = True) -> str | None:
    """Restores the newest readable checkpoint of `directory` into `checkpoint`.

    Args:
        checkpoint: what to restore (every object it tracks must be in the file).
        directory: the checkpoint directory (of a `tf.train.CheckpointManager`).
        prefix: the manager's `checkpoint_name`.
        repair_state: rewrite the state file if it does not name the restored checkpoint (only one process of a
            multi-worker job should).

    Returns:
        The restored checkpoint's path, or None when `directory` holds no checkpoint.

    Raises:
        CheckpointError: checkpoints exist and none of them could be restored; the message gives each one's
            reason (a different model architecture reads as shape or key mismatches).
    """
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
        raise CheckpointError(f"{directory}: none of its {len(paths)} checkpoints can be restored: "
                              + "; ".join(failures) + ". If the model or its settings changed, use a new directory; "
                              "otherwise the files are damaged: delete the directory to start over.")
    return None


def _repair_state_file(directory: str, restored: str, paths: list[str]) -> None:
    """Rewrites the `checkpoint` state file when it does not name `restored` as the latest checkpoint."""
    state = tf.train.get_checkpoint_state(directory)
    if state and os.path.basename(state.model_checkpoint_path) == os.path.basename(restored):
        return
    logger.warning("%s/checkpoint was missing, damaged or pointed past the restored checkpoint; rewritten.",
                   directory)
    kept = [p for p in reversed(paths) if _number(p) <= _number(restored)]
    # The manager rotates (deletes) only checkpoints stamped after the last preserved time.
    stamps = [os.path.getmtime(p + ".index") for p in kept]
    tf.compat.v1.train.update_checkpoint_state(directory, restored, all_model_checkpoint_paths=kept,
                                               all_model_checkpoint_timestamps=stamps,
                                               last_preserved_timestamp=min(stamps) - 1)


def _number(path: str) -> int:
    return int(path.rsplit("-", 1)[1])


def rng_state_variables(model) -> list:
    """The model's random-number-generator states (dropout seeds), which Keras keeps outside `model.weights`
    and `tf.train.Checkpoint` does not find through the model: checkpoint them explicitly, or a resumed run
    draws other dropout masks."""
    weight_ids = {id(w) for w in model.weights}
    return [v.value for v in model.variables if id(v) not in weight_ids]

"""A resumed run must be the run it resumes: its settings are compared with those of its newest checkpoint.

Every run writes its settings to `flags.json` in its directory before each checkpoint it saves, so that they are the
settings of the newest checkpoint. When a later command finds checkpoints there, it resumes from them; before that,
`check_resume` compares the new settings with the saved ones. A setting that changes what is computed (the data, the
model, the batch, the learning rate, the seed, ...) is refused by name, because the checkpoint's weights, optimizer
state and data position belong to the old value. Settings that only change how or how long the run goes
(`RESUMABLE`: the step or epoch count, logging, checkpoint interval, XLA, the distribution strategy) may change; a
changed step or epoch count also changes the learning-rate schedule's length, which is said. `--allow_flag_change
NAME[,NAME]` accepts named changes anyway, except where the checkpoint cannot take them (a pretraining run's batch
shape: its data position holds batches of the old one). Paths are compared as the files they name, so another
spelling of the same path is no change. The files' contents are compared too (`check_inputs`): a file changed in
place is a changed setting.
"""

from __future__ import annotations

import json
import logging
import os

from keras_bert_lite.artifacts import FLAGS_FILE, INPUTS_FILE, MODEL_CONFIG_FILE
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.runners.input_digests import differences
from keras_bert_lite.utils.files import atomic_write_text

logger = logging.getLogger(__name__)

# Settings that do not change what a step computes (the run's length changes its schedule: a warning says so).
# model_dir is the directory being resumed, however it is spelt.
RESUMABLE = frozenset(
    {
        "steps",
        "epochs",
        "checkpoint_every",
        "log_every",
        "quiet",
        "verbose",
        "strategy",
        "tpu",
        "xla",
        "allow_flag_change",
        "model_dir",
    }
)
SCHEDULE_LENGTH = frozenset({"steps", "epochs"})


def check_resume(
    run_dir: str,
    settings: dict,
    allowed: tuple[str, ...] = (),
    fixed: tuple[str, ...] = (),
    defaults: dict | None = None,
) -> None:
    """Refuses to resume the run in `run_dir` with settings that differ from its saved `flags.json`.

    A path spelt another way (relative or absolute, a trailing slash) is the same setting.

    Args:
        run_dir: the run directory (holding the `flags.json` of its newest checkpoint).
        settings: the new run's settings, as `flags.json` would hold them (JSON-compatible values).
        allowed: setting names whose change the user accepts (`--allow_flag_change`).
        fixed: settings that cannot change even so (the checkpoint's data position holds batches of their shape).
        defaults: each setting's default. A setting that `flags.json` lacks (a flag newer than the run) and that
            is at its default now is the same: a new flag's default does what the command did before it.

    Raises:
        SettingsError: a setting outside `RESUMABLE` and `allowed` differs; the message names each one with the
            saved and the new value, and the ways out.
    """
    saved = _read_json(os.path.join(run_dir, FLAGS_FILE), f"the settings of the checkpoints in {run_dir}")
    if saved is None:
        logger.warning("%s has checkpoints but no %s: resuming without comparing the settings.", run_dir, FLAGS_FILE)
        return
    new, defaults = json.loads(json.dumps(settings)), json.loads(json.dumps(defaults or {}))
    unknown = sorted(set(allowed) - set(new))
    if unknown:
        raise SettingsError(
            f"--allow_flag_change {','.join(unknown)}: no such setting; the settings are {', '.join(sorted(new))}."
        )
    changed = sorted(
        k
        for k in set(saved) | set(new)
        if not _same(saved.get(k), new.get(k))
        and not (k not in saved and k in defaults and _same(defaults[k], new.get(k)))
    )
    refused = [k for k in changed if k in fixed or (k not in RESUMABLE and k not in allowed)]
    if refused:
        listed = "; ".join(f"--{k} {_show(saved.get(k))} then, {_show(new.get(k))} now" for k in refused)
        acceptable = [k for k in refused if k not in fixed]
        stuck = [f"--{k}" for k in refused if k in fixed]
        raise SettingsError(
            f"{run_dir} holds checkpoints made with other settings, so it cannot resume with these: "
            f"{listed}. Run with the same values, use a new --model_dir (--init {run_dir} starts from its weights)"
            + (f", or accept the change with --allow_flag_change {','.join(acceptable)}" if acceptable else "")
            + "."
            + (
                f" {' and '.join(stuck)} cannot change in a resumed run: its checkpoint's position in the data holds "
                "batches of the old shape."
                if stuck
                else ""
            )
        )
    for key in changed:
        if key in SCHEDULE_LENGTH:
            logger.warning(
                "Resuming with --%s %s (was %s): the learning-rate schedule is now computed for the new length.",
                key,
                _show(new.get(key)),
                _show(saved.get(key)),
            )
        elif key not in RESUMABLE:
            logger.warning(
                "Resuming with --%s %s (was %s), as --allow_flag_change accepts.",
                key,
                _show(new.get(key)),
                _show(saved.get(key)),
            )


def check_inputs(run_dir: str, digests: dict[str, dict[str, str]], allowed: tuple[str, ...] = ()) -> None:
    """Refuses to resume the run in `run_dir` when the files its settings name have other contents than those its
    newest checkpoint was made from (its `inputs.json`, from `save_inputs`; a run without one is not compared).

    Args:
        run_dir: the run directory.
        digests: the new run's `runners.input_digests.input_digests(job)`.
        allowed: setting names whose change the user accepts (`--allow_flag_change`).

    Raises:
        SettingsError: naming each setting and file that changed, and the ways out.
    """
    saved = _read_json(os.path.join(run_dir, INPUTS_FILE), f"the digests of the files the run in {run_dir} read")
    if saved is None:
        return
    changed = {
        name: what
        for name in sorted(set(saved) | set(digests))
        if (what := differences(saved.get(name, {}), digests.get(name, {})))
    }
    for name in sorted(set(changed) & set(allowed)):
        logger.warning(
            "Resuming with --%s's files changed (%s), as --allow_flag_change accepts.",
            name,
            ", ".join(changed.pop(name)),
        )
    if changed:
        listed = "; ".join(f"--{name}: {', '.join(what)}" for name, what in changed.items())
        names = ",".join(changed)
        raise SettingsError(
            f"{run_dir} holds checkpoints made from other file contents than its settings name now ({listed}). "
            f"Restore the files, use a new --model_dir (--init {run_dir} starts from its weights), or accept the "
            f"change with --allow_flag_change {names}."
        )


def check_architecture(run_dir: str, config: dict) -> None:
    """Refuses to resume the run in `run_dir` with a model of another architecture than its checkpoints'.

    Args:
        run_dir: the run directory; its `model_config.json` (written by `save_architecture`) is compared.
        config: the new model's `BertConfig.to_dict()`.

    Raises:
        SettingsError: the architectures differ; the message names each differing field.
    """
    saved = _read_json(os.path.join(run_dir, MODEL_CONFIG_FILE), f"the architecture of the checkpoints in {run_dir}")
    if saved is None:
        return
    new = json.loads(json.dumps(config))
    changed = sorted(k for k in set(saved) | set(new) if saved.get(k) != new.get(k))
    if changed:
        listed = "; ".join(f"{k} {saved.get(k)} then, {new.get(k)} now" for k in changed)
        raise SettingsError(
            f"{run_dir} holds checkpoints of another model architecture ({listed}): they cannot be "
            "restored into this one. Use the run's --preset/--config/--init (see its flags.json), or a "
            "new --model_dir."
        )


def save_flags(run_dir: str, settings: dict) -> None:
    """Writes the run's settings to `run_dir/flags.json`, atomically."""
    atomic_write_text(os.path.join(run_dir, FLAGS_FILE), json.dumps(settings, indent=2) + "\n")


def save_inputs(run_dir: str, digests: dict[str, dict[str, str]]) -> None:
    """Writes the digests of the files the run reads to `run_dir/inputs.json`, atomically."""
    atomic_write_text(os.path.join(run_dir, INPUTS_FILE), json.dumps(digests, indent=2) + "\n")


def save_architecture(run_dir: str, config: dict) -> None:
    """Writes the model's `BertConfig.to_dict()` to `run_dir/model_config.json`, atomically."""
    atomic_write_text(os.path.join(run_dir, MODEL_CONFIG_FILE), json.dumps(config, indent=2) + "\n")


def _read_json(path: str, what: str):
    """The JSON in `path`, None if there is no such file.

    Raises:
        SettingsError: it cannot be read or parsed; `what` it records is named, with the ways out.
    """
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as error:
        raise SettingsError(
            f"{path}: unreadable ({error}); it records {what}. Restore it (or delete it to resume "
            "without the check), or start a new --model_dir."
        ) from None


def _same(saved, new) -> bool:
    """Equal, or two spellings of one existing path."""
    if saved == new:
        return True
    return (
        isinstance(saved, str)
        and isinstance(new, str)
        and bool(saved)
        and bool(new)
        and os.path.exists(new)
        and os.path.realpath(saved) == os.path.realpath(new)
    )


def _show(value) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value)) or '""'
    return '""' if value == "" else str(value)

"""Export a trained model as a versioned, audited, text-in SavedModel for TF Serving (command line: `kbl-export`).

Writes `<model_base_path>/<version>/` atomically: the SavedModel is built in a hidden temporary directory beside
the versions (`.tmp-<version>-...`), audited against the target runtime, and only then renamed to its integer
version, so TF Serving (which polls the base path every second with no completeness check,
tensorflow/serving#1086) never sees a half-written or unservable version. An existing version is never
overwritten; `--keep N` then removes all but the N newest versions. Each version ships warm-up requests
(`warmup_requests`), which TF Serving and `kbl-serve` replay before serving it.

Targets: "tf-serving" (default; the tokenizer uses tf_text's FastWordpiece op, which stock TF Serving links;
loading in Python needs `import tensorflow_text`) or "portable" (core TensorFlow ops only: loads in any
TensorFlow runtime without tensorflow_text).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile

import tensorflow as tf

from keras_bert_lite.artifacts import TASK_SPEC_FILE, VOCAB_FILES, TaskSpec
from keras_bert_lite.export.audit import TARGETS, audit_saved_model
from keras_bert_lite.export.serving_module import ServingModule
from keras_bert_lite.export.signature_keys import signature_keys
from keras_bert_lite.export.warmup_requests import write_warmup_requests
from keras_bert_lite.serving.manager import MAX_VERSION

TARGET_VARIANTS = {"tf-serving": "default", "portable": "portable"}


class ExportRefusedError(RuntimeError):
    """The export failed its compatibility audit; nothing was written."""


def versions(model_base_path: str) -> list[int]:
    """The integer versions present under `model_base_path`, ascending (hidden/temporary dirs ignored)."""
    if not os.path.isdir(model_base_path):
        return []
    return sorted(
        int(d)
        for d in os.listdir(model_base_path)
        if re.fullmatch(r"\d+", d) and os.path.isdir(os.path.join(model_base_path, d))
    )


def check_version(version: int | None) -> None:
    """Refuses a version TF Serving would not serve (negative, or beyond int64).

    Raises:
        ValueError: naming the version and the range.
    """
    if version is not None and not 0 <= version <= MAX_VERSION:
        raise ValueError(
            f"version {version}: TF Serving serves versions 0 to {MAX_VERSION} (int64); omit --version "
            "to take one above the newest."
        )


def export_saved_model(
    model,
    spec: TaskSpec,
    vocab,
    model_base_path: str,
    *,
    target: str = "tf-serving",
    version: int | None = None,
    keep: int | None = None,
    variant: str | None = None,
) -> str:
    """Exports `model` with in-graph tokenisation as `<model_base_path>/<version>/`.

    Args:
        model: the Keras task model (or encoder).
        spec: what the model does (see TaskSpec).
        vocab: the `keras_bert_lite.text.Vocab` it was trained with.
        model_base_path: the directory TF Serving's `--model_base_path` points at.
        target: "tf-serving" or "portable": the runtime the export must load in (audited).
        version: the integer version (default: one above the newest). Never overwrites an existing one.
        keep: if given, keep only this many newest versions after exporting.
        variant: tokenizer op set; default: the one the target implies ("default" for tf-serving).

    Returns:
        The path of the new version directory.

    Raises:
        ExportRefusedError: the SavedModel uses ops the target lacks (the message names the ops and where they
            are used); nothing was written.
        FileExistsError: `version` already exists.
        ValueError: a version outside 0..2**63-1, a seq_length beyond the model's positions, labels that do not
            match the model's outputs, or an embedder with another task type than "embedding" or the other way
            round (`ServingModule`).
    """
    check_version(version)
    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}.")
    if keep is not None and keep < 1:
        raise ValueError(f"keep must be >= 1, got {keep}.")
    existing = versions(model_base_path)
    version = version if version is not None else (existing[-1] + 1 if existing else 1)
    final = os.path.join(model_base_path, str(version))
    if os.path.exists(final):
        raise FileExistsError(
            f"{final} already exists; versions are never overwritten (omit --version to use "
            f"{existing[-1] + 1 if existing else 1})."
        )
    module = ServingModule(model, spec, vocab, variant=variant or TARGET_VARIANTS[target])
    os.makedirs(model_base_path, exist_ok=True)

    def save(tmp):
        tf.saved_model.save(module, tmp, signatures=module.signatures())
        vocab.save(os.path.join(tmp, "assets.extra", VOCAB_FILES[0]))
        spec.save(os.path.join(tmp, "assets.extra", TASK_SPEC_FILE))
        write_warmup_requests(tmp, spec, signature_keys(spec.task_type))

    tmp = stage_saved_model(save, model_base_path, version, target)
    try:
        os.rename(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    prune_versions(model_base_path, keep)
    return final


def stage_saved_model(save, model_base_path: str, version: int, target: str) -> str:
    """Runs `save(tmp)` in a hidden temporary directory beside the versions and audits the result for `target`.

    Returns:
        The temporary directory; rename it to `<model_base_path>/<version>` to publish it.

    Raises:
        ExportRefusedError: the audit failed (the temporary directory is removed, as on any error).
    """
    tmp = tempfile.mkdtemp(prefix=f".tmp-{version}-", dir=model_base_path)
    try:
        save(tmp)
        report = audit_saved_model(tmp, target)
        if not report.ok:
            raise ExportRefusedError(
                f"Refusing to export to {os.path.join(model_base_path, str(version))}: the "
                f"model fails the {target!r} audit.\n" + report.format()
            )
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return tmp


def prune_versions(model_base_path: str, keep: int | None) -> None:
    """Removes all but the `keep` newest versions (nothing when `keep` is None)."""
    if keep is not None:
        for old in versions(model_base_path)[:-keep]:
            shutil.rmtree(os.path.join(model_base_path, str(old)))

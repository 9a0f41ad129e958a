"""Export a trained model as a versioned, audited, text-in SavedModel for TF Serving.

    python export/export_saved_model.py --model runs/glue_sst2 --model_base_path exports/sst2 --keep 3

Writes `<model_base_path>/<version>/` atomically: the SavedModel is built in a hidden temporary directory beside
the versions (`.tmp-<version>-...`), audited against the target runtime, and only then renamed to its integer
version, so TF Serving (which polls the base path every second with no completeness check,
tensorflow/serving#1086) never sees a half-written or unservable version. An existing version is never
overwritten; `--keep N` then removes all but the N newest versions.

Targets: "tf-serving" (default; the tokenizer uses tf_text's FastWordpiece op, which stock TF Serving links;
loading in Python needs `import tensorflow_text`) or "portable" (core TensorFlow ops only: loads in any
TensorFlow runtime without tensorflow_text).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import sys
import tempfile

from keras_bert_lite.export.task_spec import TASK_TYPES, TaskSpec

TARGET_VARIANTS = {"tf-serving": "default", "portable": "portable"}


class ExportRefusedError(RuntimeError):
    """The export failed its compatibility audit; nothing was written."""


def versions(model_base_path: str) -> list[int]:
    """The integer versions present under `model_base_path`, ascending (hidden/temporary dirs ignored)."""
    if not os.path.isdir(model_base_path):
        return []
    return sorted(int(d) for d in os.listdir(model_base_path)
                  if re.fullmatch(r"\d+", d) and os.path.isdir(os.path.join(model_base_path, d)))


def export_saved_model(model, spec: TaskSpec, vocab, model_base_path: str, *, target: str = "tf-serving",
                       version: int | None = None, keep: int | None = None, variant: str | None = None,
                       max_answer_length: int = 30) -> str:
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
        max_answer_length: the longest answer span, in tokens (span tasks).

    Returns:
        The path of the new version directory.

    Raises:
        ExportRefusedError: the SavedModel uses ops the target lacks (the message names the ops and where they
            are used); nothing was written.
        FileExistsError: `version` already exists.
    """
    import tensorflow as tf

    from keras_bert_lite.export.audit import TARGETS, audit_saved_model
    from keras_bert_lite.export.serving_module import ServingModule

    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}.")
    if keep is not None and keep < 1:
        raise ValueError(f"keep must be >= 1, got {keep}.")
    existing = versions(model_base_path)
    version = version if version is not None else (existing[-1] + 1 if existing else 1)
    final = os.path.join(model_base_path, str(version))
    if os.path.exists(final):
        raise FileExistsError(f"{final} already exists; versions are never overwritten (omit --version to use "
                              f"{existing[-1] + 1 if existing else 1}).")
    os.makedirs(model_base_path, exist_ok=True)

    module = ServingModule(model, spec, vocab, variant=variant or TARGET_VARIANTS[target],
                           max_answer_length=max_answer_length)
    tmp = tempfile.mkdtemp(prefix=f".tmp-{version}-", dir=model_base_path)
    try:
        tf.saved_model.save(module, tmp, signatures=module.signatures())
        vocab.save(os.path.join(tmp, "assets.extra", "vocab.txt"))
        spec.save(os.path.join(tmp, "assets.extra", "task.json"))
        report = audit_saved_model(tmp, target)
        if not report.ok:
            raise ExportRefusedError(f"Refusing to export to {final}: the model fails the {target!r} audit.\n"
                                     + report.format())
        os.rename(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if keep is not None:
        for old in versions(model_base_path)[:-keep]:
            shutil.rmtree(os.path.join(model_base_path, str(old)))
    return final


def load_trained(model_path: str):
    """A run's model dir (model.keras + vocab.txt + task.json) or a .keras file -> (model, TaskSpec | None, Vocab)."""
    import keras

    from keras_bert_lite.text import Vocab

    if os.path.isdir(model_path):
        candidates = [os.path.join(model_path, n) for n in ("model.keras", "encoder.keras")]
        found = [c for c in candidates if os.path.exists(c)]
        if not found:
            raise FileNotFoundError(f"{model_path}: no model.keras (fine-tuning run) or encoder.keras "
                                    "(pretraining run) in it.")
        model_file, directory = found[0], model_path
    else:
        model_file, directory = model_path, os.path.dirname(model_path) or "."
    spec_path = os.path.join(directory, "task.json")
    spec = TaskSpec.load(spec_path) if os.path.exists(spec_path) else None
    vocab_path = os.path.join(directory, "vocab.txt")
    vocab = Vocab.from_file(vocab_path) if os.path.exists(vocab_path) else None
    return keras.saving.load_model(model_file), spec, vocab


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Export a trained model as a text-in SavedModel for TF Serving.",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", required=True, help="a run's model dir (model.keras, vocab.txt, task.json), a "
                   "pretraining model dir (encoder.keras), or a .keras file")
    p.add_argument("--model_base_path", required=True, help="versions are written to <this>/<version>/")
    p.add_argument("--target", choices=tuple(TARGET_VARIANTS), default="tf-serving")
    p.add_argument("--version", type=int, default=None, help="default: one above the newest")
    p.add_argument("--keep", type=int, default=None, help="keep only the N newest versions")
    override = p.add_argument_group("overrides (when the model dir has no task.json / vocab.txt)")
    override.add_argument("--vocab", default=None)
    override.add_argument("--task_type", choices=TASK_TYPES, default=None)
    override.add_argument("--labels", default=None, help="comma-separated label names in id order")
    override.add_argument("--cased", action="store_true", help="the vocabulary is cased")
    override.add_argument("--pair", action="store_true", help="the model takes two texts (text, text_b)")
    override.add_argument("--seq_length", type=int, default=None)
    override.add_argument("--max_answer_length", type=int, default=30)
    return p.parse_args(argv)


def _spec_from_flags(args, spec: TaskSpec | None, model) -> TaskSpec:
    """task.json's spec with any flags applied, or one built from the flags alone."""
    changes = {"task_type": args.task_type, "seq_length": args.seq_length,
               "labels": tuple(args.labels.split(",")) if args.labels else None,
               "lower_case": False if args.cased else None,
               "text_fields": ("text", "text_b") if args.pair else None}
    changes = {k: v for k, v in changes.items() if v is not None}
    if spec is None:
        is_encoder = "sequence_output" in getattr(model, "output", {})
        changes.setdefault("task_type", "encoder" if is_encoder else None)
        if changes["task_type"] is None:
            raise SystemExit(f"{args.model}: no task.json beside the model; pass --task_type (and --labels).")
        changes.setdefault("lower_case", True)
        changes.setdefault("seq_length", 128)
        return TaskSpec(**changes)
    return dataclasses.replace(spec, **changes)


def main(argv=None) -> None:
    args = parse_args(argv)
    from keras_bert_lite.text import Vocab

    model, spec, vocab = load_trained(args.model)
    vocab = Vocab.from_file(args.vocab) if args.vocab else vocab
    if vocab is None:
        raise SystemExit(f"{args.model}: no vocab.txt beside the model; pass --vocab.")
    try:
        spec = _spec_from_flags(args, spec, model)
        path = export_saved_model(model, spec, vocab, args.model_base_path, target=args.target,
                                  version=args.version, keep=args.keep, max_answer_length=args.max_answer_length)
    except (ExportRefusedError, FileExistsError, ValueError) as e:
        raise SystemExit(f"export failed: {e}")
    print(f"exported {spec.task_type} model to {path} (target {args.target}; signatures serving_default, "
          f"preprocess, encode{', classify' if spec.task_type == 'classification' else ''})")


if __name__ == "__main__":
    main(sys.argv[1:])

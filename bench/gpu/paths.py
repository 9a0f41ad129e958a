"""The library's training paths, one step per call, for `bench/gpu/checks.py` (run in the TensorFlow Python).

    python bench/gpu/paths.py data OUT_DIR TRAIN DEV                 # the demo's review split + MiniLM's vocab
    python bench/gpu/paths.py pretrain RESULT.json -- KBL-PRETRAIN-ARGS
    python bench/gpu/paths.py glue RESULT.json -- KBL-GLUE-ARGS
    python bench/gpu/paths.py export RESULT.json -- KBL-EXPORT-ARGS
    python bench/gpu/paths.py predict RESULT.json SAVEDMODEL_BASE DEV_CSV   # the export's probabilities

Each command runs the `kbl-*` command's own code (`run(parse_args(argv))`, as `kbl-demo` does) with the
library's defaults, and writes what it returned as JSON. Start-up lines of TensorFlow are left in the log.
"""

from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def write(path: str, obj) -> None:
    Path(path).write_text(json.dumps(obj, indent=1, default=str) + "\n")


def data(out_dir: str, train: int, dev: int) -> dict:
    """The demo's review split (labelled train/dev, the rest unlabelled) and all-MiniLM-L6-v2's directory."""
    from keras_bert_lite.data.corpora import write_review_split
    from keras_bert_lite.runners.demo import minilm_dir

    split = write_review_split(out_dir, train, dev, unlabeled=True)
    return {**split, "minilm_dir": minilm_dir(), "vocab": os.path.join(minilm_dir(), "vocab.txt")}


def command(name: str, argv: list[str]):
    """Runs kbl-`name`'s `run(parse_args(argv))` and returns its result."""
    import importlib

    module = importlib.import_module(f"keras_bert_lite.runners.{name}")
    return module.run(module.parse_args(argv))


def predict(base_path: str, dev_csv: str) -> dict:
    """The exported text-in model's probabilities on the dev texts, in file order, and where it ran."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the default tokenizer's ops)

    versions = sorted((d for d in os.listdir(base_path) if d.isdigit()), key=int)
    if not versions:
        raise SystemExit(f"{base_path}: no numbered version directory")
    serve = tf.saved_model.load(os.path.join(base_path, versions[-1])).signatures["serving_default"]
    with open(dev_csv, newline="", encoding="utf-8") as f:
        texts = [row["text"] for row in csv.DictReader(f)]
    probabilities = []
    for i in range(0, len(texts), 128):
        out = serve(text=tf.constant(texts[i : i + 128]))
        probabilities.extend(out["probabilities"].numpy().tolist())
    return {
        "probabilities": probabilities,
        "gpus": [d.name for d in tf.config.list_physical_devices("GPU")],
        "version": versions[-1],
    }


def main(argv: list[str]) -> None:
    step = argv[0]
    if step == "data":
        write(os.path.join(argv[1], "data.json"), data(argv[1], int(argv[2]), int(argv[3])))
    elif step == "predict":
        write(argv[1], predict(argv[2], argv[3]))
    elif step in ("pretrain", "glue", "export"):
        if argv[2] != "--":
            raise SystemExit(f"usage: paths.py {step} RESULT.json -- ARGS")
        write(argv[1], {"result": command(step, argv[3:])})
    else:
        raise SystemExit(f"unknown step {step!r}: data, pretrain, glue, export or predict")


if __name__ == "__main__":
    main(sys.argv[1:])

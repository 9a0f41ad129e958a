"""Peak memory of `kbl-pretrain` against the size of its one corpus file, and the examples of the streaming reader
against the whole-file reader it replaced.

    .venv/bin/python bench/corpus_memory.py [--sizes 100M,2G] [--steps 20] [--baseline_tree DIR --baseline_sizes 100M]

Each corpus is one file of repeated real text (the Python docs, `data.corpora.pydoc_documents`, in the original
format), written once into --workdir. For each, `kbl-pretrain` runs --steps steps of the tiny preset (seq 128,
batch 32, the uncased MiniLM vocab) in a fresh process; its peak resident memory is the process's `ru_maxrss`.
With --baseline_tree (a checkout of an older commit), the same commands run with that tree's package first on
PYTHONPATH, for a before/after.

Examples: the first --steps batches of the pretraining pipeline, as `kbl-pretrain` builds it, from
`text_file_documents` and from the whole-file reader (each file read with `tf.io.read_file`, then split), on the
smallest corpus; every feature and label must be equal.

Writes bench/results/corpus_memory.json and prints a table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras_bert_lite  # noqa: E402, F401  (first: it turns oneDNN on)

# isort: split
import common  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from input_pipeline import uncased_vocab  # noqa: E402

from keras_bert_lite.data.corpora import pydoc_documents  # noqa: E402
from keras_bert_lite.data.masking import DynamicMasker  # noqa: E402
from keras_bert_lite.data.pretraining import pretraining_dataset, split_documents, text_file_documents  # noqa: E402
from keras_bert_lite.text import BertPacker, BertTokenizer  # noqa: E402
from keras_bert_lite.utils.files import atomic_write_text  # noqa: E402

SEQ, BATCH, PREDICTIONS = 128, 32, 20
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def size_bytes(text: str) -> int:
    """ "100M" -> 104857600."""
    return int(float(text[:-1]) * UNITS[text[-1].upper()]) if text[-1].upper() in UNITS else int(text)


def write_corpus(path: str, size: int) -> None:
    """Repeats the Python docs (one sentence per line, a blank line between documents) until `size` bytes."""
    if os.path.exists(path) and os.path.getsize(path) >= size:
        return
    text = ("\n\n".join("\n".join(doc) for doc in pydoc_documents()) + "\n\n").encode()
    with open(path + ".tmp", "wb") as f:
        for _ in range(-(-size // len(text))):
            f.write(text)
    os.replace(path + ".tmp", path)


def pretrain_peak(corpus: str, vocab: str, steps: int, workdir: str, tree: str = "") -> dict:
    """Runs `kbl-pretrain` for `steps` tiny steps on `corpus` in a new process: its peak RSS and wall time."""
    env = dict(os.environ, PYTHONPATH=tree) if tree else dict(os.environ)
    command = [
        sys.executable,
        "-m",
        "keras_bert_lite.runners.pretrain",
        "--input_files",
        corpus,
        "--vocab",
        vocab,
        "--preset",
        "tiny",
        "--seq_length",
        str(SEQ),
        "--batch_size",
        str(BATCH),
        "--steps",
        str(steps),
        "--log_every",
        str(steps),
        "--checkpoint_every",
        str(steps),
        "--quiet",
        "--model_dir",
        tempfile.mkdtemp(dir=workdir),
    ]
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, cwd=tree or ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = process.stderr.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        raise RuntimeError(f"kbl-pretrain failed on {corpus}:\n{stderr[-3000:]}")
    return {"peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "seconds": round(time.perf_counter() - start, 1)}


def whole_file_documents(path: str, seed: int = 0) -> tf.data.Dataset:
    """The reader `text_file_documents` replaced: each file read whole, then split into documents."""
    files = tf.data.Dataset.from_tensor_slices([path]).shuffle(1, seed=seed, reshuffle_each_iteration=True)
    return files.repeat().map(lambda f: split_documents(tf.io.read_file(f))).unbatch()


def first_batches(documents: tf.data.Dataset, vocab, steps: int) -> list:
    """The first `steps` batches of `kbl-pretrain`'s pipeline (its defaults, seed 0) over `documents`."""
    dataset = pretraining_dataset(
        documents,
        BertTokenizer(vocab),
        BertPacker(SEQ, vocab=vocab),
        DynamicMasker.from_vocab(vocab, max_predictions=PREDICTIONS),
    )
    return [tf.nest.map_structure(lambda t: t.numpy(), batch) for batch in dataset.batch(BATCH).take(steps)]


def same_examples(corpus: str, vocab, steps: int) -> bool:
    """Whether the streaming and the whole-file readers give equal batches."""
    streamed = first_batches(text_file_documents(corpus), vocab, steps)
    whole = first_batches(whole_file_documents(corpus), vocab, steps)
    return all(
        np.array_equal(a, b) for x, y in zip(streamed, whole) for a, b in zip(tf.nest.flatten(x), tf.nest.flatten(y))
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100M,2G", help="corpus sizes (K, M, G suffixes)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "kbl_corpus_memory"))
    parser.add_argument("--baseline_tree", default="", help="a checkout of older code to measure too")
    parser.add_argument(
        "--baseline_sizes",
        default="",
        help="the --sizes to measure with --baseline_tree "
        "(default: all; the whole-file reader needs ~9x a file's size in memory)",
    )
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "corpus_memory.json"))
    args = parser.parse_args(argv)
    os.makedirs(args.workdir, exist_ok=True)
    vocab = uncased_vocab()
    vocab_path = os.path.join(args.workdir, "vocab.txt")
    vocab.save(vocab_path)
    sizes = args.sizes.split(",")
    corpora = {size: os.path.join(args.workdir, f"corpus_{size}.txt") for size in sizes}
    rows = []
    for size, path in corpora.items():
        write_corpus(path, size_bytes(size))
        row = {
            "corpus": size,
            "bytes": os.path.getsize(path),
            "streaming": pretrain_peak(path, vocab_path, args.steps, args.workdir),
        }
        if args.baseline_tree and size in (args.baseline_sizes.split(",") if args.baseline_sizes else sizes):
            row["baseline"] = pretrain_peak(path, vocab_path, args.steps, args.workdir, args.baseline_tree)
        rows.append(row)
        print(json.dumps(row), flush=True)
    equal = same_examples(corpora[sizes[0]], vocab, args.steps)
    result = {
        "date": datetime.datetime.now().isoformat(timespec="minutes"),
        "machine": common.machine_info(),
        "steps": args.steps,
        "preset": "tiny",
        "seq_length": SEQ,
        "batch_size": BATCH,
        "runs": rows,
        "peak_ratio_largest_to_smallest": round(
            rows[-1]["streaming"]["peak_rss_mb"] / rows[0]["streaming"]["peak_rss_mb"], 3
        ),
        f"examples_equal_to_whole_file_reader_{sizes[0]}": equal,
    }
    atomic_write_text(args.out, json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=1))


if __name__ == "__main__":
    main()

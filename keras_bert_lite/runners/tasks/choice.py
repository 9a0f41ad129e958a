"""`SwagTask`: multiple choice with one score per (context, ending) pair."""

from __future__ import annotations

import os

import keras
import numpy as np

from keras_bert_lite.data import swag
from keras_bert_lite.data.csv_rows import tsv_text
from keras_bert_lite.data.features import length_order, packed_dataset
from keras_bert_lite.models import build_multiple_choice
from keras_bert_lite.runners.finetune import FinetuneTask
from keras_bert_lite.training.metrics import accuracy
from keras_bert_lite.utils.files import atomic_write_text


class SwagTask(FinetuneTask):
    """Multiple choice (SWAG): one logit per (context, ending) pair, softmax over the endings; dev metric accuracy.

    Args:
        tokenizer, packer: the library's `BertTokenizer` and a dynamic `BertPacker`.
        train, dev, test: SWAG examples (`data.swag`); test labels may be absent.
    """

    task_type = "multiple_choice"
    main_metric = "accuracy"

    def __init__(
        self, tokenizer, packer, train: swag.ChoiceData, dev: swag.ChoiceData, test: swag.ChoiceData | None = None
    ):
        self.num_choices = len(train.endings[0])
        self.packer = swag.ChoicePacker(packer, self.num_choices)
        self.splits = {
            name: (data, swag.tokenize_choices(tokenizer, data, packer.seq_length))
            for name, data in (("train", train), ("dev", dev), ("test", test))
            if data is not None
        }
        self.train_size = len(train)

    def task_info(self) -> dict:
        return {"text_fields": ["text", "text_b"], "num_choices": self.num_choices}

    def build_model(self, encoder):
        return build_multiple_choice(encoder, self.num_choices)

    def compile_args(self) -> dict:
        return {
            "loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            "metrics": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        }

    def _dataset(self, split, batch_size, seed=None, order=None, first_epoch=0):
        data, segments = self.splits[split]
        return packed_dataset(
            segments, data.labels, self.packer, batch_size, shuffle_seed=seed, order=order, first_epoch=first_epoch
        )

    def train_dataset(self, batch_size: int, seed: int, first_epoch: int = 0):
        return self._dataset("train", batch_size, seed=seed, first_epoch=first_epoch)

    def _logits(self, predict, split) -> np.ndarray:
        order = length_order(*self.splits[split][1])
        logits = np.empty((len(order), self.num_choices), np.float32)
        logits[order] = np.concatenate(predict(self._dataset(split, 32, order=order)))
        return logits

    def evaluate(self, predict) -> dict:
        return {"accuracy": accuracy(self.splits["dev"][0].labels, self._logits(predict, "dev").argmax(-1))}

    def write_predictions(self, predict, out_dir: str) -> None:
        for split in ("dev", "test"):
            if split not in self.splits:
                continue
            data, logits = self.splits[split][0], self._logits(predict, split)
            probabilities = np.exp(logits - logits.max(-1, keepdims=True))
            probabilities /= probabilities.sum(-1, keepdims=True)
            header = (
                ["id"]
                + (["label"] if data.labels is not None else [])
                + ["prediction"]
                + [f"p_{c}" for c in range(self.num_choices)]
            )
            rows = [
                [str(data.ids[i])]
                + ([str(data.labels[i])] if data.labels is not None else [])
                + [str(int(p.argmax()))]
                + [f"{q:.6f}" for q in p]
                for i, p in enumerate(probabilities)
            ]
            atomic_write_text(os.path.join(out_dir, f"{split}_predictions.tsv"), tsv_text([header] + rows))

"""`SentenceTask`: classification or regression on one text or a text pair (GLUE and users' own data)."""

from __future__ import annotations

import logging
import os

import keras
import numpy as np

from keras_bert_lite.data.csv_rows import tsv_text
from keras_bert_lite.data.features import length_order, packed_dataset, tokenize_texts
from keras_bert_lite.data.long_texts import truncation_report, window_segments
from keras_bert_lite.data.sentences import SentenceData
from keras_bert_lite.models import build_classifier
from keras_bert_lite.runners.finetune import FinetuneTask
from keras_bert_lite.training import metrics as M
from keras_bert_lite.utils.files import atomic_write_text

logger = logging.getLogger("keras_bert_lite.glue")

METRICS = {
    "accuracy": M.accuracy,
    "f1": M.binary_f1,
    "macro_f1": M.macro_f1,
    "matthews_corrcoef": M.matthews_corrcoef,
    "pearson": M.pearson,
    "spearman": M.spearman,
    "neg_mse": lambda y, p: -float(np.mean((np.asarray(y) - p) ** 2)),  # negated: higher is better
}


class _Split:
    """A tokenised split: the token ids the model reads (`segments`: each example's text(s) cut at seq_length, or
    its windows: `data.long_texts`), the windows (None: cut; the cut logged) and the examples' encoded targets."""

    def __init__(self, data: SentenceData, tokenizer, seq_length: int, targets, doc_stride: int = 0):
        self.data = data
        whole = tuple(tokenize_texts(tokenizer, texts) for texts in (data.text_a, data.text_b) if texts is not None)
        self.windows = None
        if doc_stride:
            self.windows, self.segments = window_segments(whole, seq_length, doc_stride)
        else:
            self.segments = tuple(segment[:, :seq_length] for segment in whole)  # the packer keeps what it did
            _log(truncation_report(data.source, whole, seq_length))
        self.targets = targets
        self.size = int(self.segments[0].nrows())

    def per_row(self, targets):
        """The examples' `targets` (`[n, ...]`, or None) for the rows the model reads: each window its text's."""
        return targets if self.windows is None or targets is None else np.asarray(targets)[self.windows.text.numpy()]

    def per_example(self, logits: np.ndarray, pooling: str) -> np.ndarray:
        """The rows' `logits` `[rows, C]` as the examples' `[n, C]`: a text's windows pooled (`TokenWindows.pool`)."""
        return logits if self.windows is None else self.windows.pool(logits, pooling).numpy()


def _log(report: str) -> None:
    if report:
        logger.warning(report)


class SentenceTask(FinetuneTask):
    """Sequence (pair) classification or regression on the pooled [CLS] vector.

    Args:
        tokenizer, packer: the library's `BertTokenizer` and a dynamic `BertPacker`.
        train: training examples with targets (`train_targets`: int class ids or float scores `[n]`).
        devs: {suffix: (examples, targets)}; metric names get "_<suffix>" for a non-empty suffix.
        tests: {file name: examples} to predict (unlabeled).
        label_names: class names in id order; None for regression.
        metrics: metric names (keys of METRICS); the first, higher is better, is the main metric.
        text_fields: task.json text fields.
        submission: `(file name, ids, predicted ids or scores) -> file text` for test files (GLUE), or None for
            `id\\tprediction` lines with label names.
        doc_stride: 0: texts longer than seq_length are cut; N: read whole, in windows of seq_length every N tokens
            (`data.long_texts`), each window trained with its text's target.
        window_pooling: how a text's windows' logits combine into its own ("mean" or "max").
    """

    def __init__(
        self,
        tokenizer,
        packer,
        *,
        train: SentenceData,
        train_targets,
        devs: dict,
        tests: dict,
        label_names,
        metrics: tuple,
        submission=None,
        doc_stride: int = 0,
        window_pooling: str = "mean",
    ):
        self.tokenizer, self.packer = tokenizer, packer
        seq = packer.seq_length
        self.label_names = list(label_names) if label_names is not None else None
        self.task_type = "classification" if self.label_names is not None else "regression"
        self.doc_stride, self.window_pooling = doc_stride, window_pooling
        self.train = _Split(train, tokenizer, seq, train_targets, doc_stride) if train is not None else None
        self.train_size = self.train.size if train is not None else 0
        self.devs = {
            suffix: _Split(data, tokenizer, seq, targets, doc_stride) for suffix, (data, targets) in devs.items()
        }
        self.tests = {name: _Split(data, tokenizer, seq, None, doc_stride) for name, data in tests.items()}
        self.metrics = metrics
        first = next(iter(self.devs), "")
        self.main_metric = metrics[0] + (f"_{first}" if first else "")
        self.submission = submission
        self.pair = (train or next(iter(tests.values()))).text_b is not None

    def task_info(self) -> dict:
        info = {"text_fields": ["text", "text_b"] if self.pair else ["text"]}
        if self.label_names is not None:
            info["labels"] = self.label_names
        if self.doc_stride:
            info.update(doc_stride=self.doc_stride, window_pooling=self.window_pooling)
        return info

    def build_model(self, encoder):
        return build_classifier(encoder, num_classes=len(self.label_names) if self.label_names else 1)

    def compile_args(self) -> dict:
        if self.label_names is None:
            return {"loss": keras.losses.MeanSquaredError()}
        return {
            "loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            "metrics": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        }

    def _targets(self, split: _Split):
        if split.targets is None or self.label_names is not None:
            return split.targets
        return np.asarray(split.targets, np.float32)[:, None]  # [n, 1] like the regression output

    def train_dataset(self, batch_size: int, seed: int, first_epoch: int = 0):
        return packed_dataset(
            self.train.segments,
            self.train.per_row(self._targets(self.train)),
            self.packer,
            batch_size,
            shuffle_seed=seed,
            first_epoch=first_epoch,
        )

    def _predict(self, predict, split: _Split, batch_size: int = 64) -> np.ndarray:
        """The logits `[n, C]` of the examples, in their order (of a text read in windows: its windows' pooled)."""
        order = length_order(*split.segments)
        outputs = predict(packed_dataset(split.segments, None, self.packer, batch_size, order=order))
        logits = np.empty((len(order), outputs[0].shape[-1]), np.float32) if outputs else np.zeros((0, 1))
        logits[order] = np.concatenate(outputs) if outputs else logits
        return split.per_example(logits, self.window_pooling)

    def _decide(self, logits: np.ndarray) -> np.ndarray:
        return logits[:, 0] if self.label_names is None else np.argmax(logits, axis=-1)

    def evaluate(self, predict) -> dict:
        results = {}
        for suffix, split in self.devs.items():
            scores = self._scores(split.targets, self._predict(predict, split))
            results.update({name + (f"_{suffix}" if suffix else ""): value for name, value in scores.items()})
        return results

    def _scores(self, targets, logits: np.ndarray) -> dict:
        """The dev metrics of one split, from its targets and logits `[n, C]`."""
        predicted = self._decide(logits)
        return {name: METRICS[name](targets, predicted) for name in self.metrics}

    def write_predictions(self, predict, out_dir: str) -> None:
        for suffix, split in self.devs.items():
            logits = self._predict(predict, split)
            name = f"dev_{suffix}_predictions.tsv" if suffix else "dev_predictions.tsv"
            atomic_write_text(os.path.join(out_dir, name), self._prediction_lines(split, logits, labeled=True))
        for file_name, split in self.tests.items():
            logits = self._predict(predict, split)
            text = (
                self.submission(file_name, split.data.ids, self._decide(logits))
                if self.submission
                else self._prediction_lines(split, logits, labeled=False)
            )
            atomic_write_text(os.path.join(out_dir, file_name), text)

    def _prediction_lines(self, split: _Split, logits: np.ndarray, labeled: bool) -> str:
        """`id [label] prediction` (+ a probability per class, or the score) per example, tab-separated."""
        predicted = self._decide(logits)
        if self.label_names is None:
            header = ["id"] + (["label"] if labeled else []) + ["prediction"]
            rows = [
                [str(i)] + ([str(float(t))] if labeled else []) + [f"{p:.6g}"]
                for i, t, p in zip(split.data.ids, _or_none(split.targets, len(predicted)), predicted)
            ]
        else:
            probabilities = np.exp(logits - logits.max(-1, keepdims=True))
            probabilities /= probabilities.sum(-1, keepdims=True)
            header = ["id"] + (["label"] if labeled else []) + ["prediction"] + [f"p_{n}" for n in self.label_names]
            rows = [
                [str(i)]
                + ([self.label_names[t]] if labeled else [])
                + [self.label_names[p]]
                + [f"{q:.6f}" for q in probs]
                for i, t, p, probs in zip(
                    split.data.ids, _or_none(split.targets, len(predicted)), predicted, probabilities
                )
            ]
        return tsv_text([header] + rows)


def _or_none(values, n):
    return values if values is not None else [None] * n

"""`MultiLabelTask`: a set of labels per text (pair): one sigmoid output per label on the pooled [CLS] vector."""

from __future__ import annotations

import keras
import numpy as np

from keras_bert_lite.artifacts import DEFAULT_THRESHOLD
from keras_bert_lite.data.csv_rows import tsv_text
from keras_bert_lite.runners.tasks.sentence import SentenceTask, _or_none
from keras_bert_lite.training.metrics import multi_label_scores
from keras_bert_lite.training.thresholds import above_threshold, tuned_threshold


class MultiLabelTask(SentenceTask):
    """`SentenceTask` with independent labels: `build_classifier`'s logits, binary cross-entropy from the logits
    (float32), a label predicted when its probability exceeds the threshold. Dev metrics: micro F1 (the main
    one), macro F1, exact match (subset accuracy), f1_<label>, and with `tune_threshold` the threshold.

    Args:
        tokenizer, packer, train, devs, tests, label_names, metrics: as `SentenceTask`; targets 0/1 float32
            `[n, labels]`.
        threshold: the decision threshold, in (0, 1); None: `DEFAULT_THRESHOLD`.
        tune_threshold: at each evaluation, use the threshold of `thresholds.THRESHOLD_GRID` with the best micro
            F1 on the (first) dev split, and report it as the metric "threshold"; task.json gets the one of the
            weights the predictions are written with (the best epoch's).
        separator: what joins an example's labels in the prediction files.
    """

    def __init__(
        self,
        tokenizer,
        packer,
        *,
        threshold: float | None = None,
        tune_threshold: bool = False,
        separator: str = "|",
        **parts,
    ):
        super().__init__(tokenizer, packer, **parts)
        self.task_type = "multi_label"
        self.threshold = threshold or DEFAULT_THRESHOLD
        self.tune_threshold = tune_threshold
        self.separator = separator

    def task_info(self) -> dict:
        return {**super().task_info(), "threshold": self.threshold}

    def compile_args(self) -> dict:
        return {"loss": keras.losses.BinaryCrossentropy(from_logits=True)}

    def _decide(self, logits: np.ndarray) -> np.ndarray:
        return above_threshold(logits, self.threshold)

    def _scores(self, targets, logits: np.ndarray) -> dict:
        if self.tune_threshold:
            self.threshold = tuned_threshold(targets, logits)
        scores = multi_label_scores(targets, self._decide(logits), self.label_names)
        return {**scores, "threshold": self.threshold} if self.tune_threshold else scores

    def write_predictions(self, predict, out_dir: str) -> None:
        if self.tune_threshold:
            self.evaluate(predict)  # the threshold of these weights (the best epoch's, restored)
        super().write_predictions(predict, out_dir)

    def _prediction_lines(self, split, logits: np.ndarray, labeled: bool) -> str:
        """`id [label] prediction p_<label>...` per example, tab-separated: label sets joined by the separator,
        every label's probability."""
        probabilities = np.exp(-np.logaddexp(0.0, -logits))  # sigmoid, without overflow
        header = ["id"] + (["label"] if labeled else []) + ["prediction"] + [f"p_{n}" for n in self.label_names]
        rows = [
            [str(i)] + ([self._joined(t)] if labeled else []) + [self._joined(p)] + [f"{q:.6f}" for q in probs]
            for i, t, p, probs in zip(
                split.data.ids, _or_none(split.targets, len(logits)), self._decide(logits), probabilities
            )
        ]
        return tsv_text([header] + rows)

    def _joined(self, row: np.ndarray) -> str:
        """The names of the labels set in a 0/1 row, joined by the separator."""
        return self.separator.join(name for name, on in zip(self.label_names, row) if on)

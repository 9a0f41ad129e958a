"""`SquadTask`: extractive question answering with a span layer on the encoder."""

from __future__ import annotations

import json
import os

import keras

from keras_bert_lite.data import squad
from keras_bert_lite.data.features import length_order, packed_dataset
from keras_bert_lite.models import build_span_labeler
from keras_bert_lite.runners.finetune import FinetuneTask
from keras_bert_lite.training.metrics import squad_scores
from keras_bert_lite.utils.files import atomic_write_text


class SquadTask(FinetuneTask):
    """Extractive question answering (SQuAD v1.1 / v2.0): a start and an end logit per token.

    Args:
        tokenizer, packer: the library's `BertTokenizer` and a dynamic `BertPacker`.
        train, dev: SQuAD examples (`data.squad`).
        doc_stride, max_query_length: how contexts are cut into windows of `packer.seq_length` tokens.
        n_best_size, max_answer_length, version_2, null_score_diff_threshold: how answers are picked
            (`data.squad.extract_answers`).
    """

    task_type = "span"
    main_metric = "f1"

    def __init__(
        self,
        tokenizer,
        packer,
        train,
        dev,
        *,
        doc_stride: int,
        max_query_length: int,
        n_best_size: int,
        max_answer_length: int,
        version_2: bool,
        null_score_diff_threshold: float,
    ):
        self.packer, self.dev_examples = packer, dev
        self.max_query_length = max_query_length
        self.answer_settings = dict(
            n_best_size=n_best_size,
            max_answer_length=max_answer_length,
            version_2=version_2,
            null_score_diff_threshold=null_score_diff_threshold,
        )
        args = (tokenizer, packer.seq_length, doc_stride, max_query_length)
        self.train_windows = squad.make_windows(train, *args, training=True)
        self.dev_windows = squad.make_windows(dev, *args, training=False)
        self.train_size = len(self.train_windows)
        self.answers = {e.qid: [text for text, _ in e.answers] for e in dev}

    def task_info(self) -> dict:
        # Exactly the exporter's TaskSpec fields: text = question, text_b = context, and how questions and
        # answers are cut (the other window and answer settings are in flags.json).
        return {
            "text_fields": ["text", "text_b"],
            "max_query_length": self.max_query_length,
            "max_answer_length": self.answer_settings["max_answer_length"],
        }

    def build_model(self, encoder):
        return build_span_labeler(encoder)

    def compile_args(self) -> dict:
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        return {
            "loss": {"start_logits": loss, "end_logits": loss},
            "loss_weights": {"start_logits": 0.5, "end_logits": 0.5},
        }  # (start + end) / 2 as the original

    def _dataset(self, windows, batch_size, seed=None, order=None, first_epoch=0):
        return packed_dataset(
            (windows.question_ids, windows.context_ids),
            {"start_logits": windows.start, "end_logits": windows.end},
            self.packer,
            batch_size,
            shuffle_seed=seed,
            order=order,
            first_epoch=first_epoch,
        )

    def train_dataset(self, batch_size: int, seed: int, first_epoch: int = 0):
        return self._dataset(self.train_windows, batch_size, seed=seed, first_epoch=first_epoch)

    def _answers(self, predict):
        windows = self.dev_windows
        order = length_order(windows.question_ids, windows.context_ids)
        outputs = predict(self._dataset(windows, 64, order=order))
        starts = [row for batch in outputs for row in batch["start_logits"]]
        ends = [row for batch in outputs for row in batch["end_logits"]]
        start_logits, end_logits = [None] * len(order), [None] * len(order)
        for position, w in enumerate(order):
            start_logits[w], end_logits[w] = starts[position], ends[position]
        return squad.extract_answers(self.dev_examples, windows, start_logits, end_logits, **self.answer_settings)

    def evaluate(self, predict) -> dict:
        return squad_scores(self._answers(predict)[0], self.answers, self.answer_settings["version_2"])

    def write_predictions(self, predict, out_dir: str) -> None:
        predictions, nbest, null_odds = self._answers(predict)
        files = {"predictions.json": predictions, "nbest_predictions.json": nbest}
        if self.answer_settings["version_2"]:
            files["null_odds.json"] = null_odds
        for name, content in files.items():
            atomic_write_text(os.path.join(out_dir, name), json.dumps(content, indent=2, ensure_ascii=False) + "\n")

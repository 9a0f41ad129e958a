"""SQuAD v1.1 / v2.0 question answering: a span layer on the encoder. Behind `tasks/run_squad.py`.

    python tasks/run_squad.py --version 1.1 --init uncased_L-12_H-768_A-12 --model_dir runs/squad   # tfds
    python tasks/run_squad.py --version 2.0 --train_file train-v2.0.json --predict_file dev-v2.0.json ...

Contexts longer than `--seq_length` are cut into windows every `--doc_stride` tokens; answers are the best of
`--n_best_size` start x end candidates up to `--max_answer_length` tokens (each token scored in its most central
window); for v2.0 "no answer" wins when its score beats the best span by more than
`--null_score_diff_threshold`. Dev metrics: exact match and F1 with the official normalisation (v2.0 also per
HasAns/NoAns subset). Writes predictions.json ({id: text}, the official evaluation script's input),
nbest_predictions.json and, for v2.0, null_odds.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys

from keras_bert_lite.training.command_errors import exit_on_training_error
from keras_bert_lite.training.finetune import FinetuneJob, FinetuneTask, add_common_args, job_from_args, \
    run_finetuning

logger = logging.getLogger("keras_bert_lite.run_squad")


@dataclasses.dataclass
class SquadJob(FinetuneJob):
    """Settings of a SQuAD run (the CLI flags); defaults of google-research/bert's README."""

    seq_length: int = 384
    epochs: int = 2
    learning_rate: float = 3e-5
    version: str = "1.1"
    train_file: str = ""
    predict_file: str = ""
    doc_stride: int = 128
    max_query_length: int = 64
    n_best_size: int = 20
    max_answer_length: int = 30
    null_score_diff_threshold: float = 0.0


def parse_args(argv=None) -> SquadJob:
    defaults = SquadJob()
    p = argparse.ArgumentParser(description="Fine-tune BERT on SQuAD v1.1 or v2.0.",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    data = p.add_argument_group("data (default: tensorflow-datasets squad/v<version>)")
    data.add_argument("--version", choices=("1.1", "2.0"), default=defaults.version)
    data.add_argument("--train_file", default="", help="SQuAD JSON, e.g. train-v1.1.json")
    data.add_argument("--predict_file", default="", help="SQuAD JSON to evaluate on, e.g. dev-v1.1.json")
    squad = p.add_argument_group("windows and answers")
    squad.add_argument("--doc_stride", type=int, default=defaults.doc_stride)
    squad.add_argument("--max_query_length", type=int, default=defaults.max_query_length)
    squad.add_argument("--n_best_size", type=int, default=defaults.n_best_size)
    squad.add_argument("--max_answer_length", type=int, default=defaults.max_answer_length)
    squad.add_argument("--null_score_diff_threshold", type=float, default=defaults.null_score_diff_threshold)
    add_common_args(p, defaults)
    return job_from_args(SquadJob, p.parse_args(argv))


class SquadTask(FinetuneTask):
    task_type = "span"
    main_metric = "f1"

    def __init__(self, job: SquadJob, tokenizer, packer, train, dev):
        from keras_bert_lite.data import squad

        self.job, self.packer, self.dev_examples = job, packer, dev
        args = (tokenizer, job.seq_length, job.doc_stride, job.max_query_length)
        self.train_windows = squad.make_windows(train, *args, training=True)
        self.dev_windows = squad.make_windows(dev, *args, training=False)
        self.train_size = len(self.train_windows)
        self.answers = {e.qid: [text for text, _ in e.answers] for e in dev}

    def task_info(self) -> dict:
        # Exactly the exporter's TaskSpec fields: text = question, text_b = context. The window and answer
        # settings are in flags.json.
        return {"text_fields": ["text", "text_b"]}

    def build_model(self, encoder):
        from keras_bert_lite.models import build_span_labeler
        return build_span_labeler(encoder)

    def compile_args(self) -> dict:
        import keras
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        return {"loss": {"start_logits": loss, "end_logits": loss},
                "loss_weights": {"start_logits": 0.5, "end_logits": 0.5}}   # (start + end) / 2 as the original

    def _dataset(self, windows, batch_size, seed=None, order=None, first_epoch=0):
        from keras_bert_lite.data.features import packed_dataset
        return packed_dataset((windows.question_ids, windows.context_ids),
                              {"start_logits": windows.start, "end_logits": windows.end}, self.packer, batch_size,
                              shuffle_seed=seed, order=order, first_epoch=first_epoch)

    def train_dataset(self, batch_size: int, seed: int, first_epoch: int = 0):
        return self._dataset(self.train_windows, batch_size, seed=seed, first_epoch=first_epoch)

    def _answers(self, predict):
        from keras_bert_lite.data import squad
        from keras_bert_lite.data.features import length_order

        windows = self.dev_windows
        order = length_order(windows.question_ids, windows.context_ids)
        outputs = predict(self._dataset(windows, 64, order=order))
        starts = [row for batch in outputs for row in batch["start_logits"]]
        ends = [row for batch in outputs for row in batch["end_logits"]]
        start_logits, end_logits = [None] * len(order), [None] * len(order)
        for position, w in enumerate(order):
            start_logits[w], end_logits[w] = starts[position], ends[position]
        job = self.job
        return squad.extract_answers(self.dev_examples, windows, start_logits, end_logits,
                                     n_best_size=job.n_best_size, max_answer_length=job.max_answer_length,
                                     version_2=job.version == "2.0",
                                     null_score_diff_threshold=job.null_score_diff_threshold)

    def evaluate(self, predict) -> dict:
        from keras_bert_lite.training.metrics import squad_scores
        return squad_scores(self._answers(predict)[0], self.answers)

    def write_predictions(self, predict, out_dir: str) -> None:
        from keras_bert_lite.utils.files import atomic_write_text

        predictions, nbest, null_odds = self._answers(predict)
        files = {"predictions.json": predictions, "nbest_predictions.json": nbest}
        if self.job.version == "2.0":
            files["null_odds.json"] = null_odds
        for name, content in files.items():
            atomic_write_text(os.path.join(out_dir, name), json.dumps(content, indent=2, ensure_ascii=False) + "\n")


def run(job: SquadJob) -> dict:
    """Fine-tunes (once per seed); returns the metrics.json content."""
    if bool(job.train_file) != bool(job.predict_file):
        raise SystemExit("Give both --train_file and --predict_file (SQuAD JSON), or neither (tfds squad).")
    if job.doc_stride < 1 or job.max_query_length < 1 or job.max_answer_length < 1 or job.n_best_size < 1:
        raise SystemExit("--doc_stride, --max_query_length, --max_answer_length and --n_best_size must be >= 1.")

    def make_task(tokenizer, vocab):
        from keras_bert_lite.data import squad
        from keras_bert_lite.text import BertPacker

        if job.train_file:
            train, dev = (squad.read_squad_json(f, skip_bad_rows=job.skip_bad_rows)
                          for f in (job.train_file, job.predict_file))
        else:
            train, dev = squad.load_tfds(job.version, "train"), squad.load_tfds(job.version, "validation")
        return SquadTask(job, tokenizer, BertPacker(job.seq_length, vocab, dynamic=True), train, dev)
    return run_finetuning(job, make_task)


def main(argv=None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    with exit_on_training_error():
        run(parse_args(argv))


if __name__ == "__main__":
    main(sys.argv[1:])

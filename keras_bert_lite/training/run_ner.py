"""Named-entity recognition (CoNLL-2003) with one token-classification layer. Behind `tasks/run_ner.py`.

    python tasks/run_ner.py --init cased_L-12_H-768_A-12 --cased --model_dir runs/ner            # tfds conll2003
    python tasks/run_ner.py --train_file train.txt --dev_file valid.txt [--test_file test.txt] ...  # CoNLL files

The first WordPiece of each word predicts its tag (the paper's set-up); dev metric: entity-level precision,
recall and F1 (as seqeval's default mode; IOB1, IOB2 and IOBES tags). Writes dev_predictions.txt (and
test_predictions.txt): `word gold predicted` per line, a blank line between sentences. Words past
`--seq_length` tokens are predicted "O".
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

logger = logging.getLogger("keras_bert_lite.run_ner")


@dataclasses.dataclass
class NerJob(FinetuneJob):
    """Settings of a NER run (the CLI flags)."""

    lower_case: bool = False
    epochs: int = 4
    learning_rate: float = 5e-5
    train_file: str = ""
    dev_file: str = ""
    test_file: str = ""


def parse_args(argv=None) -> NerJob:
    defaults = NerJob()
    p = argparse.ArgumentParser(description="Fine-tune BERT for named-entity recognition (CoNLL-2003 format).",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    data = p.add_argument_group("data (default: tensorflow-datasets conll2003)")
    data.add_argument("--train_file", default="", help="CoNLL file: `word ... TAG` lines, blank line between "
                      "sentences")
    data.add_argument("--dev_file", default="")
    data.add_argument("--test_file", default="", help="optional: sentences to tag (tags may be dummies)")
    add_common_args(p, defaults)   # NER defaults to a cased vocabulary (--uncased otherwise): case marks names
    return job_from_args(NerJob, p.parse_args(argv))


class NerTask(FinetuneTask):
    """Token classification with first-subword labels."""

    task_type = "token_classification"
    main_metric = "f1"

    def __init__(self, tokenizer, packer, train, dev, test=None):
        from keras_bert_lite.data import ner

        self.packer = packer
        self.tag_names = ner.tag_names(train)
        max_tokens = packer.seq_length - 2
        self.splits = {}
        for name, sentences in (("train", train), ("dev", dev), ("test", test)):
            if sentences is None:
                continue
            ids, word_of, first = ner.tokenize_words(tokenizer, sentences, max_tokens)
            tags = ner.encode_tags(sentences, self.tag_names) if name != "test" else \
                [np.zeros(len(w), np.int32) for w in sentences.words]
            self.splits[name] = (sentences, ids, word_of, first, ner.token_labels(word_of, first, tags))
        self.train_size = len(train)

    def task_info(self) -> dict:
        return {"labels": self.tag_names, "text_fields": ["text"]}

    def build_model(self, encoder):
        from keras_bert_lite.models import build_token_classifier
        return build_token_classifier(encoder, num_classes=len(self.tag_names))

    def compile_args(self) -> dict:
        import keras

        from keras_bert_lite.data.ner import IGNORE
        # The mean over labelled tokens only (first pieces), not over every position of the padded batch.
        return {"loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=IGNORE,
                                                                   reduction="mean_with_sample_weight")}

    def _dataset(self, split, batch_size, seed=None, order=None, first_epoch=0):
        from keras_bert_lite.data.features import packed_dataset
        from keras_bert_lite.data.ner import pack_token_labels

        _, ids, _, _, labels = self.splits[split]
        return packed_dataset((ids,), labels, self.packer, batch_size, shuffle_seed=seed, order=order,
                              pack_labels=pack_token_labels, first_epoch=first_epoch)

    def train_dataset(self, batch_size: int, seed: int, first_epoch: int = 0):
        return self._dataset("train", batch_size, seed=seed, first_epoch=first_epoch)

    def _tag(self, predict, split) -> list[list[str]]:
        """Predicted tags per word (the argmax at each word's first piece; "O" for words cut off)."""
        from keras_bert_lite.data.features import length_order

        sentences, ids, word_of, first, _ = self.splits[split]
        order = length_order(ids)
        outputs = predict(self._dataset(split, 64, order=order))
        best = [row for batch in outputs for row in np.argmax(batch, axis=-1)]   # [seq] per sentence, sorted
        tags = [None] * len(order)
        for position, example in enumerate(order):
            words = ["O"] * len(sentences.words[example])
            pieces = best[position][1:1 + len(word_of[example])]             # skip [CLS]
            for piece, word, is_first in zip(pieces, word_of[example], first[example]):
                if is_first and 0 <= word < len(words):
                    words[word] = self.tag_names[int(piece)]
            tags[example] = words
        return tags

    def evaluate(self, predict) -> dict:
        from keras_bert_lite.training.metrics import entity_f1
        return entity_f1(self.splits["dev"][0].tags, self._tag(predict, "dev"))

    def write_predictions(self, predict, out_dir: str) -> None:
        from keras_bert_lite.utils.files import atomic_write_text

        for split in ("dev", "test"):
            if split not in self.splits:
                continue
            sentences = self.splits[split][0]
            predicted = self._tag(predict, split)
            blocks = []
            for s, words in enumerate(sentences.words):
                gold = sentences.tags[s] if sentences.tags else ["O"] * len(words)
                blocks.append("\n".join(f"{w} {g} {p}" for w, g, p in zip(words, gold, predicted[s])))
            atomic_write_text(os.path.join(out_dir, f"{split}_predictions.txt"), "\n\n".join(blocks) + "\n")


def run(job: NerJob) -> dict:
    """Fine-tunes (once per seed); returns the metrics.json content."""
    if bool(job.train_file) != bool(job.dev_file):
        raise SystemExit("Give both --train_file and --dev_file (CoNLL files), or neither (tfds conll2003).")

    def make_task(tokenizer, vocab):
        from keras_bert_lite.data import ner
        from keras_bert_lite.text import BertPacker

        if job.train_file:
            train, dev = (ner.read_conll(f, skip_bad_rows=job.skip_bad_rows) for f in (job.train_file, job.dev_file))
            test = ner.read_conll(job.test_file, skip_bad_rows=job.skip_bad_rows) if job.test_file else None
        else:
            train, dev, test = ner.load_tfds("train"), ner.load_tfds("dev"), ner.load_tfds("test")
        return NerTask(tokenizer, BertPacker(job.seq_length, vocab, dynamic=True), train, dev, test)
    return run_finetuning(job, make_task)


def main(argv=None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    with exit_on_training_error():
        run(parse_args(argv))


if __name__ == "__main__":
    main(sys.argv[1:])

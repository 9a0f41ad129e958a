"""`NerTask`: named-entity recognition (or any word tagging) with one token-classification layer."""

from __future__ import annotations

import dataclasses
import logging
import os

import keras
import numpy as np
import tensorflow as tf

from keras_bert_lite.data import ner
from keras_bert_lite.data.features import length_order, packed_dataset
from keras_bert_lite.data.long_texts import truncation_report, window_segments
from keras_bert_lite.data.windows import TokenWindows
from keras_bert_lite.models import build_token_classifier
from keras_bert_lite.runners.finetune import FinetuneTask
from keras_bert_lite.training.metrics import entity_f1, tag_accuracy
from keras_bert_lite.utils.files import atomic_write_text

logger = logging.getLogger("keras_bert_lite.ner")


@dataclasses.dataclass
class _Tagged:
    """A tokenised split: its sentences, each token's word and first-piece flag (per sentence), the rows the
    model reads (each sentence, cut, or its windows) with their token labels, and the windows (None: cut)."""

    sentences: ner.TaggedSentences
    word_of: list
    first: list
    rows: tf.RaggedTensor
    labels: tf.RaggedTensor
    windows: TokenWindows | None


class NerTask(FinetuneTask):
    """Token classification with first-subword labels (the paper's set-up): the first WordPiece of each word
    predicts its tag. Dev metric: entity-level precision, recall and F1 (seqeval's default mode; main metric
    "f1") when the training tags mark entities (`B-PER`, `I-LOC`: `data.ner.marks_entities`); else, for word
    tagging such as part of speech (`NN`, `VB`), word accuracy (main metric "accuracy"): the share of dev words
    whose tag is right, words past the sequence length counting as predicted "O".

    Args:
        tokenizer, packer: the library's `BertTokenizer` and a dynamic `BertPacker`.
        train, dev, test: CoNLL sentences (`data.ner`); test tags may be dummies.
        doc_stride: 0: a sentence longer than seq_length - 2 tokens is cut (the words past it predicted "O");
            N: read whole, in windows of seq_length every N tokens (`data.long_texts`), each trained on its own
            tags, each token tagged in the window where it has the most context.

    Attributes:
        entities: whether the tags mark entity spans (decided from the training tags).
        main_metric: "f1" or "accuracy", as `entities`.
    """

    task_type = "token_classification"
    main_metric = "f1"

    def __init__(
        self,
        tokenizer,
        packer,
        train: ner.TaggedSentences,
        dev: ner.TaggedSentences,
        test: ner.TaggedSentences | None = None,
        doc_stride: int = 0,
    ):
        self.packer = packer
        self.tag_names = ner.tag_names(train)
        self.entities = ner.marks_entities(self.tag_names)
        self.main_metric = "f1" if self.entities else "accuracy"
        if not self.entities:
            shown = ", ".join(self.tag_names[:8]) + (", ..." if len(self.tag_names) > 8 else "")
            logger.info(
                "The training tags (%s) have no B-/I-/E-/S-/L-/U- prefix, so they mark no entities: the dev "
                'metric is word accuracy (main metric "accuracy"), not entity F1.',
                shown,
            )
        self.doc_stride = doc_stride
        self.splits = {}
        for name, sentences in (("train", train), ("dev", dev), ("test", test)):
            if sentences is None:
                continue
            ids, word_of, first = ner.tokenize_words(tokenizer, sentences)
            tags = (
                ner.encode_tags(sentences, self.tag_names)
                if name != "test"
                else [np.zeros(len(w), np.int32) for w in sentences.words]
            )
            rows, labels, windows = self._fit(sentences.source, ids, ner.token_labels(word_of, first, tags))
            self.splits[name] = _Tagged(sentences, word_of, first, rows, labels, windows)
        self.train_size = int(self.splits["train"].rows.nrows())

    def _fit(self, source: str, ids: tf.RaggedTensor, labels: tf.RaggedTensor):
        """The rows the model reads and their token labels (int RaggedTensors `[rows, (tokens)]`), and the
        `TokenWindows` or None: windows of each sentence's tokens, or its first seq_length - 2 (the cut logged)."""
        if self.doc_stride:
            windows, (rows,) = window_segments((ids,), self.packer.seq_length, self.doc_stride)
            return rows, windows.tokens(labels), windows
        report = truncation_report(source, (ids,), self.packer.seq_length)
        if report:
            logger.warning(report)
        keep = self.packer.seq_length - 2
        return ids[:, :keep], labels[:, :keep], None

    def task_info(self) -> dict:
        return {"labels": self.tag_names, "text_fields": ["text"], "doc_stride": self.doc_stride}

    def build_model(self, encoder):
        return build_token_classifier(encoder, num_classes=len(self.tag_names))

    def compile_args(self) -> dict:
        # The mean over labelled tokens only (first pieces), not over every position of the padded batch.
        return {
            "loss": keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, ignore_class=ner.IGNORE, reduction="mean_with_sample_weight"
            )
        }

    def _dataset(self, split, batch_size, seed=None, order=None, first_epoch=0):
        tagged = self.splits[split]
        return packed_dataset(
            (tagged.rows,),
            tagged.labels,
            self.packer,
            batch_size,
            shuffle_seed=seed,
            order=order,
            pack_labels=ner.pack_token_labels,
            first_epoch=first_epoch,
        )

    def train_dataset(self, batch_size: int, seed: int, first_epoch: int = 0):
        return self._dataset("train", batch_size, seed=seed, first_epoch=first_epoch)

    def _tag(self, predict, split) -> list[list[str]]:
        """Predicted tags per word (the tag of each word's first piece; "O" for words cut off)."""
        tagged, tags = self.splits[split], []
        for s, pieces in enumerate(self._token_tags(predict, split)):
            words = ["O"] * len(tagged.sentences.words[s])
            for piece, word, is_first in zip(pieces, tagged.word_of[s], tagged.first[s]):
                if is_first and 0 <= word < len(words):
                    words[word] = self.tag_names[int(piece)]
            tags.append(words)
        return tags

    def _token_tags(self, predict, split: str) -> list[np.ndarray]:
        """Predicted tag ids of each sentence's tokens: of its first seq_length - 2 when truncating, else of every
        token, each from the window where it has the most context (`TokenWindows.merge`)."""
        tagged = self.splits[split]
        order = length_order(tagged.rows)
        outputs = predict(self._dataset(split, 64, order=order))
        best = [row for batch in outputs for row in np.argmax(batch, axis=-1)]  # [seq] per row, sorted
        lengths = tagged.rows.row_lengths().numpy()
        rows = [None] * len(order)
        for position, row in enumerate(order):
            rows[row] = best[position][1 : 1 + lengths[row]]  # skip [CLS]
        if tagged.windows is None:
            return rows
        merged = tagged.windows.merge(tf.RaggedTensor.from_row_lengths(np.concatenate(rows), lengths))
        return np.split(merged.flat_values.numpy(), np.cumsum(merged.row_lengths().numpy())[:-1])

    def evaluate(self, predict) -> dict:
        score = entity_f1 if self.entities else tag_accuracy
        return score(self.splits["dev"].sentences.tags, self._tag(predict, "dev"))

    def write_predictions(self, predict, out_dir: str) -> None:
        """Writes `<split>_predictions.txt`: `word gold predicted` per line, a blank line between sentences; the
        columns separated by tabs in a file where some word holds a space (`New York`), else by spaces."""
        for split in ("dev", "test"):
            if split not in self.splits:
                continue
            sentences = self.splits[split].sentences
            predicted = self._tag(predict, split)
            separator = "\t" if any(" " in w for words in sentences.words for w in words) else " "
            blocks = []
            for s, words in enumerate(sentences.words):
                gold = sentences.tags[s] if sentences.tags else ["O"] * len(words)
                blocks.append("\n".join(separator.join(row) for row in zip(words, gold, predicted[s])))
            atomic_write_text(os.path.join(out_dir, f"{split}_predictions.txt"), "\n\n".join(blocks) + "\n")

"""`PairsTask`: an embedder trained on (anchor, positive) pairs with in-batch negatives (`kbl-pairs`)."""

from __future__ import annotations

import logging
import os

import numpy as np
import tensorflow as tf

from keras_bert_lite.data.csv_rows import tsv_text
from keras_bert_lite.data.features import length_order, packed_dataset, tokenize_texts
from keras_bert_lite.data.pairs import InterleavedPacker, PairData
from keras_bert_lite.models import build_embedder
from keras_bert_lite.models.ranking_loss import MultipleNegativesRankingLoss
from keras_bert_lite.runners.finetune import FinetuneTask
from keras_bert_lite.sentence_transformers_files import EmbeddingSettings
from keras_bert_lite.training.retrieval import Retrievals, mean_reciprocal_rank, recall_at, retrieve
from keras_bert_lite.utils.files import atomic_write_text

logger = logging.getLogger("keras_bert_lite.pairs")


class _DevSet:
    """The dev pairs tokenised: anchors `[n, (tokens)]`, the distinct positive texts `[m, (tokens)]` (the
    candidates every anchor ranks), and each pair's candidate `[n]`."""

    def __init__(self, data: PairData, tokenizer, seq_length: int):
        index = {}
        self.data = data
        self.targets = np.array([index.setdefault(text, len(index)) for text in data.positives], np.int64)
        self.candidates = list(index)
        self.anchor_ids = tokenize_texts(tokenizer, data.anchors, seq_length)
        self.candidate_ids = tokenize_texts(tokenizer, self.candidates, seq_length)


class PairsTask(FinetuneTask):
    """Trains `build_embedder` so that each anchor's vector is nearest its own positive's
    (`models.ranking_loss.MultipleNegativesRankingLoss`: the other positives of the batch are its negatives).

    Training batches hold `batch_size` pairs drawn at random (not grouped by length, which would gather pairs
    that share a text, each the other's false negative), packed as one batch of 2 * batch_size texts. Each epoch
    trains on whole batches only: the `len(train) % batch_size` pairs left over (others each epoch) would make a
    batch with fewer negatives, and one that replicas could not share pair by pair.

    Dev metrics: each dev anchor ranks all distinct dev positives by cosine similarity (`training.retrieval`):
    recall_at_1 (the main metric) and mrr.

    Args:
        tokenizer, packer: the library's `BertTokenizer` and a dynamic `BertPacker`.
        train, dev: the pairs.
        settings: the embedder's pooling and normalisation.
        scale: the loss's scale.
        batch_size: pairs per training batch.
    """

    task_type = "embedding"
    main_metric = "recall_at_1"

    def __init__(
        self,
        tokenizer,
        packer,
        train: PairData,
        dev: PairData,
        *,
        settings: EmbeddingSettings,
        scale: float,
        batch_size: int,
    ):
        self.packer = packer
        seq = packer.seq_length
        self.train = tuple(tokenize_texts(tokenizer, texts, seq) for texts in (train.anchors, train.positives))
        self.train_size = len(train) // batch_size * batch_size
        self.dev = _DevSet(dev, tokenizer, seq)
        self.settings, self.scale = settings, scale
        _log_repeats(train)

    def task_info(self) -> dict:
        return {"text_fields": ["text"]}

    def build_model(self, encoder):
        return build_embedder(encoder, pooling=self.settings.pooling, normalize=self.settings.normalize)

    def compile_args(self) -> dict:
        return {"loss": MultipleNegativesRankingLoss(self.scale)}

    def train_dataset(self, batch_size: int, seed: int, first_epoch: int = 0):
        batches = packed_dataset(
            self.train,
            None,
            InterleavedPacker(self.packer),
            batch_size,
            shuffle_seed=seed,
            first_epoch=first_epoch,
            group_by_length=False,
        )
        return batches.filter(lambda inputs, labels: tf.shape(labels)[0] == batch_size)

    def _embed(self, predict, ids: tf.RaggedTensor, batch_size: int = 64) -> np.ndarray:
        """The vectors `[n, D]` of tokenised texts, in their order."""
        order = length_order(ids)
        outputs = predict(packed_dataset((ids,), None, self.packer, batch_size, order=order))
        vectors = np.concatenate(outputs)
        vectors[order] = vectors.copy()
        return vectors

    def _retrieve(self, predict) -> Retrievals:
        return retrieve(
            self._embed(predict, self.dev.anchor_ids), self._embed(predict, self.dev.candidate_ids), self.dev.targets
        )

    def evaluate(self, predict) -> dict:
        ranks = self._retrieve(predict).ranks
        return {"recall_at_1": recall_at(ranks, 1), "mrr": mean_reciprocal_rank(ranks)}

    def write_predictions(self, predict, out_dir: str) -> None:
        """dev_predictions.tsv: per dev pair, the rank and cosine of its own positive, and the positive ranked
        first (the id of the first pair with that text), its cosine and text."""
        found, data = self._retrieve(predict), self.dev.data
        first_pair = {target: i for i, target in reversed(list(enumerate(self.dev.targets)))}
        rows = [["id", "rank", "score", "top_id", "top_score", "anchor", "top_positive"]]
        rows += [
            [
                str(data.ids[i]),
                str(found.ranks[i]),
                f"{found.scores[i]:.6f}",
                str(data.ids[first_pair[found.top[i]]]),
                f"{found.top_scores[i]:.6f}",
                data.anchors[i],
                self.dev.candidates[found.top[i]],
            ]
            for i in range(len(data))
        ]
        atomic_write_text(os.path.join(out_dir, "dev_predictions.tsv"), tsv_text(rows))


def _log_repeats(train: PairData) -> None:
    """Warns of training texts that occur in several pairs: in one batch, each pair's positive is a false negative
    of the other's anchor."""
    repeats = {
        name: len(texts) - len(set(texts)) for name, texts in (("anchor", train.anchors), ("positive", train.positives))
    }
    if any(repeats.values()):
        logger.warning(
            "%s: %d anchor and %d positive texts repeat one of another pair; two such pairs in one batch "
            "make a false negative (deduplicate the pairs if they are many).",
            train.source,
            repeats["anchor"],
            repeats["positive"],
        )

"""`kbl-pairs`: train a text embedder on (anchor, positive) pairs with in-batch negatives
(`runners.tasks.pairs`, the loss of `models.ranking_loss`: sentence-transformers' MultipleNegativesRankingLoss).

    kbl-pairs --train_file train.csv --dev_file dev.csv --anchor question --positive answer \\
        --init sentence-transformers/all-MiniLM-L6-v2 --model_dir runs/qa

Each row of a .tsv/.csv (with a header line) or .jsonl file is one pair: two texts that say the same thing (a
question and its answer, a text and its paraphrase). For a batch of n pairs, each anchor learns to pick its own
positive among the batch's n positives; a larger --batch_size gives more negatives. Texts that repeat in several
pairs are false negatives when they meet in a batch (warned of).

The embedder pools as --init does: a sentence-transformers checkpoint as its files say (pooling mode,
normalisation), an earlier kbl-pairs run as its embedder; else mean pooling, normalised (the loss compares
directions only, so the vectors' lengths mean nothing, and normalised vectors make a dot product their cosine).
--pooling and --normalize, when given, win.

Dev metrics: recall_at_1 (picks the best epoch) and mrr of each dev anchor retrieving its own positive among all
distinct dev positives by cosine. The run directory (`runners.finetune`) gets `model.keras`, the embedder of the
best epoch (`kbl.load_embedder(run_dir)`), task.json (task_type "embedding"), and dev_predictions.tsv: per dev
pair, the rank and cosine of its own positive and the positive ranked first.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import sys

from keras_bert_lite import artifacts
from keras_bert_lite.checkpoints import embedding_settings, load
from keras_bert_lite.data.pairs import read_pairs
from keras_bert_lite.data.table_files import QUOTING
from keras_bert_lite.layers.pooling import POOLING_MODES
from keras_bert_lite.models.embedder import POOLING, is_embedder
from keras_bert_lite.runners import common
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.runners.finetune import FinetuneJob, run_finetuning
from keras_bert_lite.runners.flags import flag, true_or_false
from keras_bert_lite.runners.tasks.pairs import PairsTask
from keras_bert_lite.sentence_transformers_files import EmbeddingSettings

logger = logging.getLogger("keras_bert_lite.pairs")


@dataclasses.dataclass
class PairsJob(FinetuneJob):
    """Settings of a pair-training run (one flag each)."""

    train_file: str = flag(
        "",
        ".tsv, .csv (with a header line) or .jsonl: one (anchor, positive) pair per row",
        input_path=True,
        group="data",
        required=True,
    )
    dev_file: str = flag(
        "",
        "pairs whose retrieval picks the best epoch and gives the metrics",
        input_path=True,
        group="data",
        required=True,
    )
    anchor: str = flag("anchor", "column of the first text of each pair", group="data")
    positive: str = flag("positive", "column of the second text, the one its anchor is to retrieve", group="data")
    id_column: str = flag(
        "", "column of pair ids in the dev file, for dev_predictions.tsv (default: the row number)", group="data"
    )
    quoting: str = flag(
        "auto", "double quotes in the .tsv/.csv files (as kbl-glue's --quoting)", group="data", choices=QUOTING
    )
    pooling: str = flag(
        "",
        "how token vectors become a text's vector (default: as --init pools: a sentence-"
        "transformers checkpoint, an earlier kbl-pairs run; else mean)",
        group="embedding",
        choices=POOLING_MODES,
    )
    normalize: bool | None = flag(
        None,
        "divide each vector by its length (default: as --init does; else true)",
        group="embedding",
        type=true_or_false,
        metavar="true|false",
    )
    scale: float = flag(
        20.0,
        "the loss's scale: cosine similarities are multiplied by it before the softmax over the batch's positives",
        group="embedding",
        type=float,
        above=0,
    )

    def check(self) -> None:
        """Refuses one column for both texts (and `RunJob.check`'s rules)."""
        super().check()
        if self.anchor == self.positive:
            raise SettingsError(
                f"--anchor and --positive both name the column {self.anchor!r}: each pair needs two texts."
            )


def run(job: PairsJob) -> dict:
    """Trains the embedder (once per seed); returns the metrics.json content."""
    settings = pooling_settings(job)

    def make_task(tokenizer, packer):
        read = functools.partial(
            read_pairs, anchor=job.anchor, positive=job.positive, quoting=job.quoting, skip_bad_rows=job.skip_bad_rows
        )
        train = read(job.train_file)
        if len(train) < job.batch_size:
            raise SettingsError(
                f"--batch_size {job.batch_size}: {job.train_file} has {len(train)} pairs, fewer than "
                "one batch; pass a --batch_size of at most that."
            )
        return PairsTask(
            tokenizer,
            packer,
            train,
            read(job.dev_file, id_column=job.id_column),
            settings=settings,
            scale=job.scale,
            batch_size=job.batch_size,
        )

    return run_finetuning(job, make_task)


def pooling_settings(job: PairsJob) -> EmbeddingSettings:
    """The embedder's pooling and normalisation: the flags given, else --init's (`init_settings`), else mean
    pooling, normalised."""
    found = init_settings(job.init) if job.init else None
    base = found or EmbeddingSettings(normalize=True)
    settings = EmbeddingSettings(
        (job.pooling,) if job.pooling else base.pooling, base.normalize if job.normalize is None else job.normalize
    )
    logger.info(
        "Pooling %s, %s (%s).",
        "+".join(settings.pooling),
        "normalised" if settings.normalize else "not normalised",
        f"as {job.init} says, unless a flag says otherwise" if found else "flags and defaults",
    )
    return settings


def init_settings(init: str) -> EmbeddingSettings | None:
    """The pooling and normalisation of the model `init` names: an embedder's own (the `.keras` file or run
    directory of an earlier kbl-pairs run), or a sentence-transformers checkpoint's (`embedding_settings`); None
    for other models."""
    saved = artifacts.keras_file_of(init, (artifacts.TASK_MODEL_FILE,))
    if not (saved and os.path.isfile(saved)):
        return embedding_settings(init)
    model = load(saved, "task")
    pooling = model.get_layer(POOLING) if is_embedder(model) else None
    return EmbeddingSettings(pooling.modes, pooling.normalize) if pooling else None


parse_args, main = common.command(
    PairsJob, run, "Train a text embedder on (anchor, positive) pairs with in-batch negatives."
)

if __name__ == "__main__":
    main(sys.argv[1:])

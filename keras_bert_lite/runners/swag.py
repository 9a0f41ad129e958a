"""`kbl-swag`: SWAG multiple choice: one logit per (context, ending) pair, softmax over the endings
(`runners.tasks.choice`).

    kbl-swag --train_file swagaf/data/train.csv --dev_file swagaf/data/val.csv \\
        --init uncased_L-12_H-768_A-12 --model_dir runs/swag [--test_file swagaf/data/test.csv]

Dev metric: accuracy. Writes dev_predictions.tsv and test_predictions.tsv (`id  prediction  p_0 .. p_3`).
"""

from __future__ import annotations

import dataclasses
import sys

from keras_bert_lite.data import swag
from keras_bert_lite.runners import common
from keras_bert_lite.runners.finetune import FinetuneJob, run_finetuning
from keras_bert_lite.runners.flags import flag, redefault
from keras_bert_lite.runners.tasks.choice import SwagTask


@dataclasses.dataclass
class SwagJob(FinetuneJob):
    """Settings of a SWAG run (one flag each)."""

    batch_size: int = redefault(FinetuneJob, "batch_size", 16)
    train_file: str = flag(
        "", "SWAG CSV: sent1, sent2, ending0..ending3, label", input_path=True, group="data", required=True
    )
    dev_file: str = flag("", "SWAG CSV of the dev examples", input_path=True, group="data", required=True)
    test_file: str = flag("", "optional: unlabeled examples to predict", input_path=True, group="data")


def run(job: SwagJob) -> dict:
    """Fine-tunes (once per seed); returns the metrics.json content."""

    def make_task(tokenizer, packer):
        train, dev = (swag.read_swag_csv(f, skip_bad_rows=job.skip_bad_rows) for f in (job.train_file, job.dev_file))
        test = (
            swag.read_swag_csv(job.test_file, skip_bad_rows=job.skip_bad_rows, labeled=False) if job.test_file else None
        )
        return SwagTask(tokenizer, packer, train, dev, test)

    return run_finetuning(job, make_task)


parse_args, main = common.command(SwagJob, run, "Fine-tune BERT on SWAG (multiple choice).")

if __name__ == "__main__":
    main(sys.argv[1:])

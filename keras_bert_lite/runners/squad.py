"""`kbl-squad`: SQuAD v1.1 / v2.0 question answering with a span layer on the encoder (`runners.tasks.span`).

    kbl-squad --version 1.1 --init uncased_L-12_H-768_A-12 --model_dir runs/squad   # tfds
    kbl-squad --version 2.0 --train_file train-v2.0.json --predict_file dev-v2.0.json ...

Contexts longer than `--seq_length` are cut into windows every `--doc_stride` tokens; answers are the best of
`--n_best_size` start x end candidates up to `--max_answer_length` tokens (each token scored in its most central
window); for v2.0 "no answer" wins when its score beats the best span by more than
`--null_score_diff_threshold`. Dev metrics: exact match and F1 with the official normalisation (v2.0 also per
HasAns/NoAns subset). Writes predictions.json ({id: text}, the official evaluation script's input),
nbest_predictions.json and, for v2.0, null_odds.json.
"""

from __future__ import annotations

import dataclasses
import sys

from keras_bert_lite.data import squad
from keras_bert_lite.runners import common
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.runners.finetune import FinetuneJob, run_finetuning
from keras_bert_lite.runners.flags import flag, redefault
from keras_bert_lite.runners.long_texts import WindowJob
from keras_bert_lite.runners.tasks.span import SquadTask


@dataclasses.dataclass
class SquadJob(WindowJob):
    """Settings of a SQuAD run (one flag each); defaults of google-research/bert's README."""

    seq_length: int = redefault(FinetuneJob, "seq_length", 384)
    epochs: int = redefault(FinetuneJob, "epochs", 2)
    learning_rate: float = redefault(FinetuneJob, "learning_rate", 3e-5)
    version: str = flag("1.1", "SQuAD version (2.0 has unanswerable questions)", group="data", choices=("1.1", "2.0"))
    train_file: str = flag(
        "",
        "SQuAD JSON, e.g. train-v1.1.json (default: tensorflow-datasets squad/v<version>)",
        input_path=True,
        group="data",
    )
    predict_file: str = flag("", "SQuAD JSON to evaluate on, e.g. dev-v1.1.json", input_path=True, group="data")
    doc_stride: int = redefault(WindowJob, "doc_stride", 128)
    max_query_length: int = flag(64, "question tokens kept", group="windows and answers", type=int, minimum=1)
    n_best_size: int = flag(20, "start and end candidates per window", group="windows and answers", type=int, minimum=1)
    max_answer_length: int = flag(30, "longest answer, in tokens", group="windows and answers", type=int, minimum=1)
    null_score_diff_threshold: float = flag(
        0.0,
        "v2.0: answer 'no answer' when its score beats the best span's by more than this",
        group="windows and answers",
        type=float,
    )

    def check(self) -> None:
        """Refuses one of --train_file and --predict_file without the other, and windows without room for the
        context (and `RunJob.check`'s rules)."""
        super().check()
        if bool(self.train_file) != bool(self.predict_file):
            raise SettingsError("Give both --train_file and --predict_file (SQuAD JSON), or neither (tfds squad).")
        try:
            squad.check_context_room(self.seq_length, self.max_query_length)
        except ValueError as error:
            raise SettingsError(str(error)) from None


def run(job: SquadJob) -> dict:
    """Fine-tunes (once per seed); returns the metrics.json content."""

    def make_task(tokenizer, packer):
        if job.train_file:
            train, dev = (
                squad.read_squad_json(f, version_2=job.version == "2.0", skip_bad_rows=job.skip_bad_rows)
                for f in (job.train_file, job.predict_file)
            )
        else:
            train, dev = squad.load_tfds(job.version, "train"), squad.load_tfds(job.version, "validation")
        return SquadTask(
            tokenizer,
            packer,
            train,
            dev,
            doc_stride=job.doc_stride,
            max_query_length=job.max_query_length,
            n_best_size=job.n_best_size,
            max_answer_length=job.max_answer_length,
            version_2=job.version == "2.0",
            null_score_diff_threshold=job.null_score_diff_threshold,
        )

    return run_finetuning(job, make_task)


parse_args, main = common.command(SquadJob, run, "Fine-tune BERT on SQuAD v1.1 or v2.0.")

if __name__ == "__main__":
    main(sys.argv[1:])

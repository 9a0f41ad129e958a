"""`kbl-ner`: named-entity recognition (CoNLL-2003) with one token-classification layer.

    kbl-ner --init cased_L-12_H-768_A-12 --model_dir runs/ner                                     # tfds conll2003
    kbl-ner --train_file train.txt --dev_file valid.txt [--test_file test.txt] --init ... --model_dir ...

The first WordPiece of each word predicts its tag (the paper's set-up; `runners.tasks.tagging`); dev metric:
entity-level precision, recall and F1 (as seqeval's default mode; IOB1, IOB2 and IOBES tags). Tags without
B-/I-/E-/S-/L-/U- prefixes (part of speech: `NN`, `VB`) tag words, not entities: the dev metric is then word
accuracy (metrics.json's main_metric "accuracy"; a log line says so). A line holding a tab is split at tabs, so
that a word may hold spaces (`New York<TAB>B-LOC`: one word, one prediction); other lines at spaces. Comment
lines before a sentence (`# text = ...`, `# id ...`: starting with `#`, ending in no tag of the file) are skipped.
Writes dev_predictions.txt (and test_predictions.txt): `word gold predicted` per line (tab-separated where a word holds
a space), a blank line between sentences. Words past `--seq_length` tokens are predicted "O" (the run says how many
sentences were cut), unless `--long_documents windows` reads long sentences whole: windows of `--seq_length` every
`--doc_stride` tokens, each trained on its own tags, each token tagged in the window where it has the most context
(google-research/bert's max-context rule, as SQuAD's). Sentences to tag
(--test_file) need a tag column too: a dummy one (`John O`). A cased vocabulary suits NER (case marks names);
the casing is the vocabulary's own.
"""

from __future__ import annotations

import dataclasses
import sys

from keras_bert_lite.data import ner
from keras_bert_lite.runners import common
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.runners.finetune import FinetuneJob, run_finetuning
from keras_bert_lite.runners.flags import flag, redefault
from keras_bert_lite.runners.long_texts import LongTextJob
from keras_bert_lite.runners.tasks.tagging import NerTask


@dataclasses.dataclass
class NerJob(LongTextJob):
    """Settings of a NER run (one flag each)."""

    epochs: int = redefault(FinetuneJob, "epochs", 4)
    learning_rate: float = redefault(FinetuneJob, "learning_rate", 5e-5)
    train_file: str = flag(
        "",
        "CoNLL file: `word ... TAG` lines, a blank line between sentences (default: tensorflow-datasets conll2003)",
        input_path=True,
        group="data",
    )
    dev_file: str = flag("", "CoNLL file of the dev sentences", input_path=True, group="data")
    test_file: str = flag("", "optional: sentences to tag (tags may be dummies)", input_path=True, group="data")

    def check(self) -> None:
        """Refuses one of --train_file and --dev_file without the other (and `RunJob.check`'s rules)."""
        super().check()
        if bool(self.train_file) != bool(self.dev_file):
            raise SettingsError("Give both --train_file and --dev_file (CoNLL files), or neither (tfds conll2003).")


def run(job: NerJob) -> dict:
    """Fine-tunes (once per seed); returns the metrics.json content."""

    def make_task(tokenizer, packer):
        if job.train_file:
            train, dev = (ner.read_conll(f, skip_bad_rows=job.skip_bad_rows) for f in (job.train_file, job.dev_file))
            test = ner.read_conll(job.test_file, skip_bad_rows=job.skip_bad_rows) if job.test_file else None
        else:
            train, dev, test = ner.load_tfds("train"), ner.load_tfds("dev"), ner.load_tfds("test")
        return NerTask(tokenizer, packer, train, dev, test, doc_stride=job.window_stride())

    return run_finetuning(job, make_task)


parse_args, main = common.command(NerJob, run, "Fine-tune BERT for named-entity recognition (CoNLL-2003 format).")

if __name__ == "__main__":
    main(sys.argv[1:])

"""`kbl-glue`: sentence (pair) classification and regression: GLUE, or your own data.

GLUE (data from tensorflow-datasets `glue/<task>`, or `--data_dir` with the original GLUE TSV files):

    kbl-glue --task mrpc --init uncased_L-12_H-768_A-12 --model_dir runs/mrpc --seeds 1,2,3

reports the published dev metrics (CoLA: Matthews corr.; STS-B: Pearson, Spearman; MRPC, QQP: F1, accuracy;
MNLI: accuracy matched and mismatched; the others accuracy) and writes the gluebenchmark.com submission file(s)
(CoLA.tsv, ..., MNLI-m.tsv, MNLI-mm.tsv; a MNLI run also writes AX.tsv when the AX data is there, or later:
`--task ax --init runs/mnli --model_dir runs/mnli`).

Your own data (TSV, CSV or JSONL with a header / keys):

    kbl-glue --train_file train.csv --dev_file dev.csv --text_a review --label stars \\
        --init runs/pretrain --model_dir runs/reviews

labels are the sorted distinct values of the training labels (or `--labels a,b,c`); `--task_type regression`
fits numeric labels. Dev metrics: accuracy (+ F1 and MCC for two classes, macro F1 for more); Pearson,
Spearman and neg_mse (minus the mean squared error) for regression. `--test_file` adds test_predictions.tsv.

`--task_type multi_label`: a set of labels per example, a JSON list (`"labels": ["sports", "politics"]`) or text
with `--label_separator` (default |) between them; an independent sigmoid output per label, a label predicted when
its probability exceeds `--threshold` (default 0.5; `--tune_threshold`: the grid value with the best dev micro F1).
Dev metrics: micro F1 (picks the best epoch), macro F1, exact_match (the whole set right), f1_<label>.

Paper defaults: batch 32, 3 epochs, learning rate 2e-5, 10% warmup, weight decay 0.01, the best dev epoch kept.
See `runners.finetune` for the flow and the files written.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys

from keras_bert_lite.checkpoints import load_trained
from keras_bert_lite.data import glue
from keras_bert_lite.data.labels import LabelSets
from keras_bert_lite.data.sentences import (
    encode_label_sets,
    encode_labels,
    float_labels,
    read_sentence_file,
    sorted_labels,
)
from keras_bert_lite.models.inference import dataset_predictor
from keras_bert_lite.runners import common
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.runners.finetune import dynamic_packer, run_finetuning, text_pipeline
from keras_bert_lite.runners.glue_job import GlueJob
from keras_bert_lite.runners.tasks.multi_label import MultiLabelTask
from keras_bert_lite.runners.tasks.sentence import SentenceTask
from keras_bert_lite.xla import configure_gpu_compiles

logger = logging.getLogger("keras_bert_lite.glue")


def run(job: GlueJob) -> dict:
    """Fine-tunes (once per seed) and returns the metrics.json content (`["metrics"]`: the dev metrics)."""
    if job.task == "ax":
        return predict_ax(job)
    return run_finetuning(job, lambda tokenizer, packer: make_task(job, tokenizer, packer))


def make_task(job: GlueJob, tokenizer, packer) -> SentenceTask:
    """The `SentenceTask` of a GLUE task or of the user's files (data read and tokenised here)."""
    parts = _glue_parts(job) if job.task else _custom_parts(job)
    parts.update(doc_stride=job.window_stride(), window_pooling=job.window_pooling or "mean")
    if job.task_type == "multi_label":
        return MultiLabelTask(
            tokenizer,
            packer,
            threshold=job.threshold,
            tune_threshold=job.tune_threshold,
            separator=job.label_sets().separator,
            **parts,
        )
    return SentenceTask(tokenizer, packer, **parts)


def _glue_parts(job: GlueJob) -> dict:
    task = glue.glue_task(job.task)

    def load(split, file, labeled, which=task):
        if job.data_dir:
            return glue.load_tsv(which, job.data_dir, file, labeled, job.skip_bad_rows)
        return glue.load_tfds(which, split)

    def targets(data):
        return float_labels(data) if task.is_regression else encode_labels(data, list(task.submission_labels))

    train = load("train", "train.tsv", True)
    devs = {
        suffix: (data, targets(data))
        for suffix, (split, file) in task.dev.items()
        for data in [load(split, file, True)]
    }
    tests, submissions = {}, {}
    for name, (split, file) in task.test.items():
        if job.data_dir and not os.path.exists(os.path.join(job.data_dir, file)):
            logger.warning("%s: not found; no %s written.", os.path.join(job.data_dir, file), name)
            continue
        tests[name], submissions[name] = load(split, file, False), task
    if task.name == "mnli" and _ax_available(job):
        ax = glue.TASKS["ax"]
        tests["AX.tsv"], submissions["AX.tsv"] = load("test", "diagnostic.tsv", False, ax), ax
    return dict(
        train=train,
        train_targets=targets(train),
        devs=devs,
        tests=tests,
        label_names=None if task.is_regression else task.label_names,
        metrics=task.metrics,
        submission=lambda name, ids, predicted: glue.submission_text(submissions[name], ids, predicted),
    )


def _ax_available(job: GlueJob) -> bool:
    if job.data_dir:
        return os.path.exists(os.path.join(job.data_dir, "diagnostic.tsv"))
    # Imported here, as data/glue.py's loaders do: tensorflow_datasets is slow to import, which a run on
    # its own files (--train_file) would pay at every start for nothing.
    import tensorflow_datasets as tfds

    try:
        return tfds.builder("glue/ax").is_prepared()
    except Exception:  # noqa: BLE001 - no tfds data dir, unreadable metadata: no AX file, nothing else changes
        return False


def _custom_parts(job: GlueJob) -> dict:
    label_sets = job.label_sets() if job.task_type == "multi_label" else None

    def load(path, labeled, ids=True):
        return read_sentence_file(
            path,
            text_a=job.text_a,
            text_b=job.text_b,
            label=job.label if labeled else "",
            id_column=job.id_column if ids else "",
            quoting=job.quoting,
            skip_bad_rows=job.skip_bad_rows,
            label_sets=label_sets if labeled else None,
        )

    # The training file needs no ids: no predictions are written for it.
    train, dev = load(job.train_file, True, ids=False), load(job.dev_file, True)
    tests = {"test_predictions.tsv": load(job.test_file, False)} if job.test_file else {}
    if job.task_type == "regression":
        return dict(
            train=train,
            train_targets=float_labels(train),
            devs={"": (dev, float_labels(dev))},
            tests=tests,
            label_names=None,
            metrics=("pearson", "spearman", "neg_mse"),
        )
    if label_sets is not None:
        return _multi_label_parts(job, train, dev, tests, label_sets)
    label_names = job.label_names() or sorted_labels(train)
    if len(label_names) < 2:
        raise SettingsError(
            f"{job.train_file}: only the label(s) {label_names} occur; classification needs at "
            "least two (or pass --labels a,b,... / --task_type regression)."
        )
    metrics = ("accuracy", "f1", "matthews_corrcoef") if len(label_names) == 2 else ("accuracy", "macro_f1")
    if len(label_names) == 2:
        logger.info(
            "f1 is the F1 of the class %r, the second of the labels %s (--labels %s,%s would make it %r).",
            label_names[1],
            label_names,
            label_names[1],
            label_names[0],
            label_names[0],
        )
    return dict(
        train=train,
        train_targets=encode_labels(train, label_names),
        devs={"": (dev, encode_labels(dev, label_names))},
        tests=tests,
        label_names=label_names,
        metrics=metrics,
    )


def _multi_label_parts(job: GlueJob, train, dev, tests: dict, label_sets: LabelSets) -> dict:
    """`SentenceTask`'s data of a multi-label run: 0/1 targets `[n, labels]`, micro F1 first."""
    label_names = job.label_names() or sorted_labels(train, label_sets)
    if not label_names:
        raise SettingsError(
            f"{job.train_file}: no example has a label; multi_label needs at least one (or pass --labels a,b,...)."
        )
    return dict(
        train=train,
        train_targets=encode_label_sets(train, label_names, label_sets),
        devs={"": (dev, encode_label_sets(dev, label_names, label_sets))},
        tests=tests,
        label_names=label_names,
        metrics=("micro_f1",),
    )


def predict_ax(job: GlueJob) -> dict:
    """Writes AX.tsv into --model_dir with the fine-tuned MNLI model in --init (a run directory or model.keras)."""
    try:
        model, spec, _ = load_trained(job.init)
    except FileNotFoundError:
        spec = None
    ax = glue.TASKS["ax"]
    if spec is None or spec.labels != tuple(ax.label_names):
        raise SettingsError(
            f"--task ax predicts with a fine-tuned MNLI model: --init {job.init} must be the "
            f"model_dir of a `--task mnli` run (model.keras, task.json with labels "
            f"{list(ax.label_names)})."
        )
    vocab, tokenizer = text_pipeline(dataclasses.replace(job, lower_case=spec.lower_case))
    configure_gpu_compiles()
    packer = dynamic_packer(spec.seq_length, vocab, job.xla)
    data = (
        glue.load_tsv(ax, job.data_dir, "diagnostic.tsv", False, job.skip_bad_rows)
        if job.data_dir
        else glue.load_tfds(ax, "test")
    )
    task = SentenceTask(
        tokenizer,
        packer,
        train=None,
        train_targets=None,
        devs={},
        tests={"AX.tsv": data},
        label_names=ax.label_names,
        metrics=("accuracy",),
        doc_stride=spec.doc_stride,
        window_pooling=spec.window_pooling or "mean",
        submission=lambda name, ids, predicted: glue.submission_text(ax, ids, predicted),
    )
    os.makedirs(job.model_dir, exist_ok=True)
    task.write_predictions(dataset_predictor(model, job.xla), job.model_dir)
    print(f"Wrote {os.path.join(job.model_dir, 'AX.tsv')} ({len(data)} examples).", flush=True)
    return {"metrics": {}, "predictions": os.path.join(job.model_dir, "AX.tsv")}


parse_args, main = common.command(
    GlueJob, run, "Fine-tune BERT on GLUE or on your own sentence (pair) classification/regression data."
)

if __name__ == "__main__":
    main(sys.argv[1:])

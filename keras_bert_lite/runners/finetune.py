"""The fine-tuning flow every task command shares (`kbl-glue`, `kbl-ner`, `kbl-squad`, `kbl-swag`).

A task is a small `FinetuneTask` (its data, head, loss, dev metrics and prediction files); `run_finetuning` does
the rest: strategy, precision, the vocabulary and its casing, the packer, the encoder from `--init` / `--preset`
/ `--config`, the BERT optimizer, `model.fit` with a best-dev checkpoint, several seeds, and the run directory
(`keras_bert_lite.artifacts`): `model.keras` of the best dev epoch, `task.json`, the vocabulary, `metrics.json`,
predictions, TensorBoard logs, resume checkpoints. With `--seeds 1,2,3` each seed has these files in
`seed_<n>/`; the top level gets a copy of the best seed's and metrics.json with mean ± std over the seeds.

The same command run again resumes: after a crash or kill -9 it continues from the last completed epoch and ends
with the metrics of an uninterrupted run; after a finished run it only rewrites the predictions. A non-finite
loss or gradient norm stops the run at that step (`training.non_finite`), and Ctrl-C after the step it is in
(`training.interrupts`); each says which of the run's files it keeps.

Distribution: `--strategy` cpu | mirrored | tpu | auto run `model.fit`. `--strategy multi_worker` (TF_CONFIG; the
same command on every worker) runs the same training step and callbacks in a `strategy.run` loop
(`training.replica_fit`), because Keras 3's `fit` crashes under MultiWorkerMirroredStrategy
(keras-team/keras#20585): each replica takes its share of every global batch, so N workers end with the weights of
one process with the same global batch. Worker 0 writes the run directory; every worker resumes from it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
import shutil
import sys
import tempfile

import keras
import numpy as np
import tensorflow as tf

from keras_bert_lite import artifacts
from keras_bert_lite.models.inference import dataset_predictor
from keras_bert_lite.runners import common
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.runners.flags import MAX_SEED, distinct_integers, flag
from keras_bert_lite.runners.run_lock import holds_run_dir
from keras_bert_lite.text import BertPacker, BertTokenizer, Vocab
from keras_bert_lite.training.callbacks import BestDevCheckpoint
from keras_bert_lite.training.checkpointing import checkpoint_number, checkpoint_paths
from keras_bert_lite.training.distribute import is_chief, resolve_strategy
from keras_bert_lite.training.interrupts import StopOnInterrupt, stop_requests
from keras_bert_lite.training.non_finite import StopOnNonFinite, finite_predictions
from keras_bert_lite.training.optimization import create_optimizer
from keras_bert_lite.training.replica_fit import replica_fit
from keras_bert_lite.utils.files import atomic_path, atomic_write_text
from keras_bert_lite.xla import configure_gpu_compiles, use_xla

logger = logging.getLogger("keras_bert_lite.finetune")


@dataclasses.dataclass
class FinetuneJob(common.RunJob):
    """The settings every fine-tuning command shares."""

    epochs: int = flag(3, "passes over the training data", type=int, minimum=1)
    warmup_proportion: float = flag(0.1, "share of the steps with linear warmup", type=float, minimum=0, below=1)
    seeds: tuple = flag(
        (0,),
        "random seed, or comma-separated seeds (one run each; metrics as mean ± std)",
        names=("--seeds", "--seed"),
        type=distinct_integers,
        metavar="N[,N]",
        minimum=0,
        maximum=MAX_SEED,
    )
    skip_bad_rows: bool = flag(
        False, "skip and count malformed input rows instead of stopping at the first", group="data", action="store_true"
    )


class FinetuneTask:
    """What a task supplies to `run_finetuning`. Subclasses set the attributes and implement the methods.

    Attributes:
        task_type: one of `artifacts.TASK_TYPES` (task.json).
        main_metric: the dev metric (higher is better) that picks the best epoch and the best seed.
        train_size: training examples (or windows, for SQuAD) per epoch.
    """

    task_type = ""
    main_metric = ""
    train_size = 0

    def task_info(self) -> dict:
        """Task-specific task.json fields (labels, text_fields, num_choices, ...)."""
        raise NotImplementedError

    def build_model(self, encoder):
        """The task model on `encoder` (called inside the strategy scope)."""
        raise NotImplementedError

    def compile_args(self) -> dict:
        """`loss` (and `loss_weights`, `metrics`) for `model.compile`."""
        raise NotImplementedError

    def train_dataset(self, batch_size: int, seed: int, first_epoch: int = 0):
        """Endless batches of (inputs, targets) from epoch `first_epoch` on; each epoch's order a function of
        `(seed, epoch)` alone (`packed_dataset(shuffle_seed=seed, first_epoch=...)`), so that a resumed run
        sees the batches of an uninterrupted one."""
        raise NotImplementedError

    def evaluate(self, predict) -> dict:
        """Dev metrics, with `predict(dataset) -> list of per-batch numpy outputs` for the current weights."""
        raise NotImplementedError

    def write_predictions(self, predict, out_dir: str) -> None:
        """Writes dev predictions and test predictions/submissions (atomically) for the current weights."""
        raise NotImplementedError


def text_pipeline(job: common.RunJob) -> tuple[Vocab, BertTokenizer]:
    """The run's vocabulary (casing resolved) and its tokenizer; the tokenizer is reused by later runs in the same
    process (the demo, tests: building and tracing one takes seconds)."""
    vocab = common.run_vocab(job)
    path = os.path.abspath(vocab.source)
    return vocab, _tokenizer(path, os.path.getmtime(path), vocab.lower_case)


def dynamic_packer(seq_length: int, vocab: Vocab, xla: bool | None) -> BertPacker:
    """The fine-tuning commands' packer: each batch padded to its longest; where the steps are XLA-compiled
    (`use_xla(xla)`), to few lengths, since every new input shape is a compile (`BertPacker`'s `length_buckets`)."""
    return BertPacker(seq_length, vocab, dynamic=True, length_buckets=use_xla(xla))


@functools.lru_cache(maxsize=4)
def _tokenizer(path: str, mtime: float, lower_case: bool) -> BertTokenizer:
    return BertTokenizer(Vocab.from_file(path), lower_case=lower_case)


@holds_run_dir
def run_finetuning(job: FinetuneJob, make_task) -> dict:
    """Fine-tunes once per seed and writes the run directory (module docstring).

    Args:
        job: the settings.
        make_task: `(tokenizer, packer) -> FinetuneTask`, called once (data is read and tokenised once); the
            packer is `dynamic_packer` of `--seq_length`.

    Returns:
        The metrics.json content: {"metrics": best-epoch dev metrics (mean over seeds), "std", "per_seed",
        "best_seed", ...}.
    """
    strategy = resolve_strategy(job.strategy, job.tpu)
    if job.batch_size % strategy.num_replicas_in_sync:
        raise SettingsError(
            f"--batch_size {job.batch_size} must be a multiple of the {strategy.num_replicas_in_sync} "
            "replicas: each takes an equal share of every batch."
        )
    common.set_precision(job)
    configure_gpu_compiles()
    if common.is_resuming(*(_seed_dir(job, seed) for seed in job.seeds)):
        common.check_settings(job)
        for seed in job.seeds:
            common.check_not_shorter(_seed_dir(job, seed), "epochs", job.epochs)
    vocab, tokenizer = text_pipeline(job)
    task = make_task(tokenizer, dynamic_packer(job.seq_length, vocab, job.xla))

    per_seed = {}
    for seed in job.seeds:
        per_seed[seed] = _train_one_seed(job, task, strategy, vocab, seed, _seed_dir(job, seed))
        logger.info("seed %d: %s", seed, _format(per_seed[seed]["metrics"]))

    best_seed = max(per_seed, key=lambda s: per_seed[s]["metrics"][task.main_metric])
    names = list(per_seed[best_seed]["metrics"])
    table = np.array([[per_seed[s]["metrics"][n] for n in names] for s in job.seeds], np.float64)
    summary = {
        "task_type": task.task_type,
        "main_metric": task.main_metric,
        "seeds": list(job.seeds),
        "metrics": dict(zip(names, table.mean(axis=0).tolist())),
        "std": dict(zip(names, (table.std(axis=0, ddof=1) if len(job.seeds) > 1 else np.zeros(len(names))).tolist())),
        "best_seed": best_seed,
        "per_seed": {str(s): r for s, r in per_seed.items()},
    }
    if not is_chief(strategy):
        return summary
    if len(job.seeds) > 1:
        _copy_files(_seed_dir(job, best_seed), job.model_dir)
    atomic_write_text(os.path.join(job.model_dir, artifacts.METRICS_FILE), json.dumps(summary, indent=2) + "\n")
    spread = {n: f"{summary['metrics'][n]:.4f} ± {summary['std'][n]:.4f}" for n in names}
    print(
        f"Dev metrics over seeds {list(job.seeds)} (best epoch of each): "
        + ", ".join(f"{n} {v}" for n, v in spread.items())
        + f"; best seed {best_seed}",
        flush=True,
    )
    print(json.dumps({"metrics": summary["metrics"], "std": summary["std"]}), flush=True)
    return summary


def _train_one_seed(job: FinetuneJob, task: FinetuneTask, strategy, vocab: Vocab, seed: int, out_dir: str) -> dict:
    chief = is_chief(strategy)
    # Only the chief writes the run directory; other workers write into a temporary one, and resume from the chief's.
    files_dir = out_dir if chief else tempfile.mkdtemp(prefix="finetune-worker-")
    os.makedirs(files_dir, exist_ok=True)
    keras.utils.set_random_seed(seed)
    multi_worker = isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
    steps_per_epoch = _steps_per_epoch(
        task.train_size, job.batch_size, strategy.num_replicas_in_sync if multi_worker else 1
    )
    total_steps = steps_per_epoch * job.epochs
    with strategy.scope():
        encoder = common.start_encoder(
            job, vocab, pairs="The task's text pairs" if len(task.task_info()["text_fields"]) == 2 else ""
        )
        record_settings = common.record_run(job, encoder, common.is_resuming(out_dir), write=chief)
        model = task.build_model(encoder)
        optimizer = create_optimizer(
            learning_rate=job.learning_rate,
            total_steps=total_steps,
            warmup_steps=int(total_steps * job.warmup_proportion),
            weight_decay=job.weight_decay,
        )
        if job.mixed_precision == "fp16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
        model.compile(optimizer=optimizer, jit_compile=use_xla(job.xla), **task.compile_args())
        predict = finite_predictions(dataset_predictor(model, job.xla), common.divergence_advice(job))
        model_path = os.path.join(files_dir, artifacts.TASK_MODEL_FILE)
        optimizer.build(model.trainable_variables)
    best = BestDevCheckpoint(
        lambda: task.evaluate(predict),
        task.main_metric,
        model_path,
        os.path.join(files_dir, "logs"),
        common.resume_dir(files_dir),
        before_save=record_settings,
    )
    done = best.restore(
        model, from_dir=common.resume_dir(out_dir), from_path=os.path.join(out_dir, artifacts.TASK_MODEL_FILE)
    )

    _save_spec(job, task, vocab, files_dir)
    vocab.save(os.path.join(files_dir, artifacts.VOCAB_FILES[0]))

    if done < job.epochs:
        kept = functools.partial(_saved_so_far, out_dir)
        callbacks = [
            keras.callbacks.TensorBoard(os.path.join(files_dir, "logs")),
            StopOnNonFinite(kept, common.divergence_advice(job)),
            StopOnInterrupt(kept),
            best,
        ]
        with stop_requests():  # Ctrl-C: StopOnInterrupt stops after the step it is in
            if multi_worker:
                replicas = strategy.num_replicas_in_sync
                replica_fit(
                    model,
                    lambda: _whole_shares(task.train_dataset(job.batch_size, seed, first_epoch=done), replicas),
                    strategy,
                    epochs=job.epochs,
                    steps_per_epoch=steps_per_epoch,
                    initial_epoch=done,
                    callbacks=callbacks,
                    log_epochs=chief,
                )
            else:
                # One endless iterator, steps_per_epoch batches per epoch (a new iterator per epoch made graph-mode
                # `fit` wait before some epochs' first batch). Off a terminal, one line per epoch.
                model.fit(
                    task.train_dataset(job.batch_size, seed, first_epoch=done),
                    initial_epoch=done,
                    epochs=job.epochs,
                    steps_per_epoch=steps_per_epoch,
                    callbacks=callbacks,
                    shuffle=False,
                    verbose=1 if not job.quiet and sys.stdout.isatty() else 2,
                )
    else:  # a finished run, run again: the best epoch's weights, then the files once more
        best.set_model(model)
        best.on_train_end()
    task.write_predictions(predict, files_dir)  # with the best epoch's weights, restored by BestDevCheckpoint
    _save_spec(job, task, vocab, files_dir)  # again: what the best epoch chose (a tuned threshold)
    result = {
        "metrics": best.best_metrics,
        "best_epoch": best.best_epoch,
        "epochs": best.history,
        "train_seconds_per_epoch": best.epoch_seconds,
    }
    atomic_write_text(os.path.join(files_dir, artifacts.METRICS_FILE), json.dumps(result, indent=2) + "\n")
    if not chief:
        shutil.rmtree(files_dir, ignore_errors=True)
    return result


def _save_spec(job: FinetuneJob, task: FinetuneTask, vocab: Vocab, files_dir: str) -> None:
    """Writes task.json: the task's `TaskSpec` as it is now."""
    spec = artifacts.TaskSpec(
        task.task_type, lower_case=vocab.lower_case, seq_length=job.seq_length, **task.task_info()
    )
    spec.save(os.path.join(files_dir, artifacts.TASK_SPEC_FILE))


def _saved_so_far(run_dir: str) -> str:
    """What a stopped fine-tuning run keeps, from the files in `run_dir` now: its last resume checkpoint and its
    best model so far ("" when no epoch has ended)."""
    paths = checkpoint_paths(common.resume_dir(run_dir))
    model = os.path.join(run_dir, artifacts.TASK_MODEL_FILE)
    kept = (
        [f"the last checkpoint (epoch {checkpoint_number(paths[0])}) is kept in {common.resume_dir(run_dir)}"]
        if paths
        else []
    )
    if os.path.isfile(model):
        kept.append(f"{model} holds the best epoch so far")
    return ", and ".join(kept)


def _steps_per_epoch(examples: int, batch_size: int, replicas: int) -> int:
    """Batches per epoch; with several replicas (`_whole_shares`) a last batch smaller than their count is dropped."""
    last = examples % batch_size
    return examples // batch_size + (1 if last and last >= replicas else 0)


def _whole_shares(dataset, replicas: int):
    """Cuts each batch to a multiple of `replicas` rows (the epoch's last batch may be smaller), so that every replica
    gets an equal share: at most `replicas - 1` examples of an epoch are left out, others each epoch."""

    def cut(*batch):
        rows = tf.shape(tf.nest.flatten(batch)[0])[0] // replicas * replicas
        return tf.nest.map_structure(lambda t: t[:rows], batch)

    return dataset.map(cut).filter(lambda *batch: tf.shape(tf.nest.flatten(batch)[0])[0] > 0)


def _seed_dir(job: FinetuneJob, seed: int) -> str:
    """Where one seed's files go: `--model_dir` itself for one seed, `seed_<n>/` in it for several."""
    return job.model_dir if len(job.seeds) == 1 else os.path.join(job.model_dir, f"seed_{seed}")


def _copy_files(source: str, target: str) -> None:
    """Copies the files (not the subdirectories) of `source` into `target`, each atomically."""
    for name in sorted(os.listdir(source)):
        path = os.path.join(source, name)
        if os.path.isfile(path) and name not in (artifacts.FLAGS_FILE, artifacts.MODEL_CONFIG_FILE):
            with atomic_path(os.path.join(target, name)) as tmp:
                shutil.copyfile(path, tmp)


def _format(metrics: dict) -> str:
    return ", ".join(f"{k} {v:.4f}" for k, v in metrics.items())

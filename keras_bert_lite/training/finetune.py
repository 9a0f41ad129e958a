"""The fine-tuning loop shared by every runner (GLUE/custom data, SQuAD, NER, SWAG).

A runner describes its task with a `FinetuneTask` (data, model head, loss, dev metrics, prediction files); this
module does the rest: strategy, mixed precision, XLA, the encoder from `--init`/`--preset`/`--config`, the BERT
optimizer, `model.fit` with a progress bar, TensorBoard and a best-dev checkpoint, several seeds, and the files.

Files in `--model_dir` (the contract with the exporter), all written atomically:
    model.keras    the full task model of the best dev epoch (for several seeds: of the best seed)
    vocab.txt      the vocabulary
    task.json      {"task_type", "lower_case", "seq_length", "text_fields", "labels"?, "num_choices"?} (exactly the
                   exporter's TaskSpec fields; runner settings such as SQuAD's doc_stride are in flags.json)
    metrics.json   dev metrics (per seed, mean and std over seeds, the best epoch)
    *predictions*  dev predictions and test predictions / submission files
    logs/          TensorBoard (train/validation scalars and the dev metrics per epoch)
    checkpoints/   resume checkpoints at each epoch's end (weights, optimizer, dropout RNGs, best-dev state)
    flags.json, model_config.json   the settings and architecture a resumed run must match (`resume_flags`)
The same command run again resumes: after a crash or kill -9 it continues from the last completed epoch and
ends with the metrics of an uninterrupted run; after a finished run it only rewrites the predictions. A
non-finite loss or gradient norm stops the run at that step (`non_finite`).
With `--seeds 1,2,3` each seed has the same files in `model_dir/seed_<n>/`; the top level gets a copy of the best
seed's (by the main dev metric) and a metrics.json with mean ± std over the seeds.

Distribution: `--strategy` cpu | mirrored | tpu | auto run `model.fit`. MultiWorkerMirroredStrategy is rejected:
Keras 3's fit crashes under it (keras-team/keras#20585), and fine-tuning data sets fit one machine; use
`--strategy mirrored` (all local GPUs) or `tpu`.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import logging
import os
import shutil
import sys

import numpy as np

from keras_bert_lite.training.checkpointing import checkpoint_paths
from keras_bert_lite.training.resume_flags import (check_architecture, check_resume, flag_names, save_architecture,
                                                   save_flags)
from keras_bert_lite.utils.files import atomic_path, atomic_write_text

logger = logging.getLogger("keras_bert_lite.finetune")

TASK_TYPES = ("classification", "regression", "token_classification", "span", "multiple_choice")


@dataclasses.dataclass
class FinetuneJob:
    """The settings every fine-tuning runner shares (the common CLI flags)."""

    model_dir: str = ""
    init: str = ""
    preset: str = ""
    config: str = ""
    vocab: str = ""
    lower_case: bool = True
    seq_length: int = 128
    batch_size: int = 32
    epochs: int = 3
    learning_rate: float = 2e-5
    warmup_proportion: float = 0.1
    weight_decay: float = 0.01
    strategy: str = "auto"
    tpu: str = ""
    mixed_precision: str = "none"
    xla: bool | None = None          # None: XLA on GPUs/TPUs, graph mode on CPUs (keras_bert_lite.xla)
    seeds: tuple = (0,)
    skip_bad_rows: bool = False
    verbose: bool = True
    allow_flag_change: tuple = ()


def add_common_args(parser: argparse.ArgumentParser, defaults: FinetuneJob) -> None:
    """Adds the shared flags (model, training, distribution) to a runner's parser."""
    model = parser.add_argument_group("model")
    model.add_argument("--init", default="", help="pretrained weights: our pretraining model_dir or a .keras "
                       "file, a Hugging Face directory, or an original TF1 checkpoint (dir or prefix)")
    model.add_argument("--preset", default="", help="train from scratch: tiny|mini|small|medium|base|large")
    model.add_argument("--config", default="", help="train from scratch: a BertConfig JSON (ours, "
                       "bert_config.json or HF config.json)")
    model.add_argument("--vocab", default="", help="vocab.txt or tokenizer.json (default: beside --init)")
    if defaults.lower_case:
        model.add_argument("--cased", dest="lower_case", action="store_false", help="cased vocabulary: keep "
                           "case and accents")
    else:
        model.add_argument("--uncased", dest="lower_case", action="store_true", help="uncased vocabulary "
                           "(lower-case, strip accents)")
    model.add_argument("--seq_length", type=int, default=defaults.seq_length,
                       help="longest packed sequence; batches are padded only to their longest")
    train = parser.add_argument_group("training")
    train.add_argument("--model_dir", required=True, help="where model.keras, task.json, metrics.json, "
                       "predictions and logs go")
    train.add_argument("--batch_size", type=int, default=defaults.batch_size, help="global batch size")
    train.add_argument("--epochs", type=int, default=defaults.epochs)
    train.add_argument("--learning_rate", type=float, default=defaults.learning_rate)
    train.add_argument("--warmup_proportion", type=float, default=defaults.warmup_proportion)
    train.add_argument("--weight_decay", type=float, default=defaults.weight_decay)
    seeds = train.add_mutually_exclusive_group()
    seeds.add_argument("--seed", type=int, dest="seeds", default=None, help="random seed (default 0)")
    seeds.add_argument("--seeds", default=None, help="comma-separated seeds, e.g. 1,2,3: one run each, "
                       "metrics as mean ± std")
    train.add_argument("--strategy", choices=("auto", "cpu", "mirrored", "multi_worker", "tpu"),
                       default=defaults.strategy, help="multi_worker is rejected: see the module docstring")
    train.add_argument("--tpu", default="", help="TPU name or grpc:// address for --strategy tpu")
    train.add_argument("--mixed_precision", choices=("none", "bf16", "fp16"), default=defaults.mixed_precision)
    train.add_argument("--xla", action=argparse.BooleanOptionalAction, default=None,
                       help="XLA-compile the training and prediction steps (default: where TensorFlow sees a GPU "
                            "or TPU; on CPUs graph mode is faster)")
    train.add_argument("--skip_bad_rows", action="store_true", help="skip and count malformed input rows "
                       "instead of stopping at the first")
    train.add_argument("--quiet", dest="verbose", action="store_false", help="one log line per epoch (always "
                       "so when the output is not a terminal)")
    train.add_argument("--allow_flag_change", type=flag_names, default=(), metavar="NAME[,NAME]",
                       help="resume a run although these settings differ from its flags.json")


def job_from_args(job_class, args: argparse.Namespace):
    """Builds a job dataclass from parsed arguments (normalising --seed/--seeds)."""
    values = dict(vars(args))
    seeds = values.pop("seeds")
    if seeds is None:
        seeds = (0,)
    elif isinstance(seeds, int):
        seeds = (seeds,)
    else:
        try:
            seeds = tuple(int(s) for s in seeds.split(",") if s.strip())
        except ValueError:
            raise SystemExit(f"--seeds {seeds!r}: give comma-separated integers, e.g. --seeds 1,2,3.") from None
        if not seeds or len(set(seeds)) != len(seeds):
            raise SystemExit(f"--seeds {args.seeds!r}: give distinct comma-separated integers, e.g. 1,2,3.")
    return job_class(seeds=seeds, **values)


def validate_job(job: FinetuneJob) -> None:
    if not job.model_dir:
        raise SystemExit("--model_dir is required.")
    if sum(map(bool, (job.preset, job.config, job.init))) != 1:
        raise SystemExit("Give exactly one of --init (pretrained weights), --preset and --config (from scratch).")
    if job.seq_length < 8 or job.batch_size < 1 or job.epochs < 1:
        raise SystemExit("--seq_length >= 8, --batch_size >= 1 and --epochs >= 1 are required.")
    if not 0 <= job.warmup_proportion < 1:
        raise SystemExit(f"--warmup_proportion {job.warmup_proportion}: must be in [0, 1).")


def find_vocab(job: FinetuneJob) -> str:
    """--vocab, or vocab.txt / tokenizer.json beside --init."""
    if job.vocab:
        return job.vocab
    if job.init:
        base = job.init if os.path.isdir(job.init) else os.path.dirname(job.init)
        for name in ("vocab.txt", "tokenizer.json"):
            if os.path.exists(os.path.join(base, name)):
                return os.path.join(base, name)
    raise SystemExit("--vocab is required (no vocab.txt or tokenizer.json beside --init).")


def text_pipeline(vocab_path: str, lower_case: bool):
    """(Vocab, BertTokenizer) for a vocabulary file, reused by later runs in the same process (the demo, tests:
    building and tracing a tokenizer takes seconds)."""
    return _text_pipeline(os.path.abspath(vocab_path), os.path.getmtime(vocab_path), lower_case)


@functools.lru_cache(maxsize=4)
def _text_pipeline(vocab_path: str, mtime: float, lower_case: bool):
    from keras_bert_lite.text import BertTokenizer, Vocab

    vocab = Vocab.from_file(vocab_path)
    return vocab, BertTokenizer(vocab, lower_case=lower_case)


class FinetuneTask:
    """What a runner supplies to `run_finetuning`. Subclasses set the attributes and implement the methods.

    Attributes:
        task_type: one of TASK_TYPES (task.json).
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


def run_finetuning(job: FinetuneJob, make_task) -> dict:
    """Fine-tunes once per seed and writes the files of the module docstring.

    Args:
        job: the settings.
        make_task: `(tokenizer, vocab) -> FinetuneTask`, called once (data is read and tokenised once).

    Returns:
        The metrics.json content: {"metrics": best-epoch dev metrics (mean over seeds), "std", "per_seed",
        "best_seed", ...}.
    """
    validate_job(job)
    import keras
    import tensorflow as tf

    from keras_bert_lite.training.distribute import resolve_strategy

    multi_worker = ("Fine-tuning runs on one machine: Keras 3's model.fit crashes under "
                    "MultiWorkerMirroredStrategy (keras-team/keras#20585), and fine-tuning data sets are small. Use "
                    "--strategy mirrored (all local GPUs) or --strategy tpu{}.")
    if job.strategy == "multi_worker":
        raise SystemExit(multi_worker.format(""))
    strategy = resolve_strategy(job.strategy, job.tpu)
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        raise SystemExit(multi_worker.format(", and unset TF_CONFIG (it lists several workers, so --strategy "
                                             "auto chose multi_worker)"))
    if job.mixed_precision != "none":
        keras.mixed_precision.set_global_policy({"bf16": "mixed_bfloat16", "fp16": "mixed_float16"}[
            job.mixed_precision])
    if any(checkpoint_paths(_resume_dir(job, seed)) for seed in job.seeds):
        check_resume(job.model_dir, dataclasses.asdict(job), job.allow_flag_change)
    vocab, tokenizer = text_pipeline(find_vocab(job), job.lower_case)
    task = make_task(tokenizer, vocab)
    os.makedirs(job.model_dir, exist_ok=True)
    save_flags(job.model_dir, dataclasses.asdict(job))

    per_seed = {}
    for seed in job.seeds:
        out_dir = _seed_dir(job, seed)
        per_seed[seed] = _train_one_seed(job, task, strategy, vocab, seed, out_dir)
        logger.info("seed %d: %s", seed, _format(per_seed[seed]["metrics"]))

    best_seed = max(per_seed, key=lambda s: per_seed[s]["metrics"][task.main_metric])
    names = list(per_seed[best_seed]["metrics"])
    table = np.array([[per_seed[s]["metrics"][n] for n in names] for s in job.seeds], np.float64)
    summary = {
        "task_type": task.task_type, "main_metric": task.main_metric, "seeds": list(job.seeds),
        "metrics": dict(zip(names, table.mean(axis=0).tolist())),
        "std": dict(zip(names, (table.std(axis=0, ddof=1) if len(job.seeds) > 1 else 0 * table[0]).tolist())),
        "best_seed": best_seed,
        "per_seed": {str(s): r for s, r in per_seed.items()},
    }
    if len(job.seeds) > 1:
        _copy_files(os.path.join(job.model_dir, f"seed_{best_seed}"), job.model_dir)
    atomic_write_text(os.path.join(job.model_dir, "metrics.json"), json.dumps(summary, indent=2) + "\n")
    spread = {n: f"{summary['metrics'][n]:.4f} ± {summary['std'][n]:.4f}" for n in names}
    print(f"Dev metrics over seeds {list(job.seeds)} (best epoch of each): "
          + ", ".join(f"{n} {v}" for n, v in spread.items()) + f"; best seed {best_seed}", flush=True)
    print(json.dumps({"metrics": summary["metrics"], "std": summary["std"]}), flush=True)
    return summary


def _train_one_seed(job, task: FinetuneTask, strategy, vocab, seed: int, out_dir: str) -> dict:
    import keras

    from keras_bert_lite.config import BertConfig
    from keras_bert_lite.checkpoints import load_encoder
    from keras_bert_lite.models import build_encoder
    from keras_bert_lite.models.introspect import encoder_config
    from keras_bert_lite.training.callbacks import BestDevCheckpoint
    from keras_bert_lite.training.non_finite import StopOnNonFinite
    from keras_bert_lite.training.optimization import create_optimizer
    from keras_bert_lite.xla import use_xla

    os.makedirs(out_dir, exist_ok=True)
    keras.utils.set_random_seed(seed)
    steps_per_epoch = -(-task.train_size // job.batch_size)
    total_steps = steps_per_epoch * job.epochs
    resume_dir = os.path.join(out_dir, "checkpoints")
    with strategy.scope():
        if job.init:
            encoder = load_encoder(_encoder_path(job.init))
        else:
            config = (BertConfig.from_json(job.config) if job.config else
                      BertConfig.from_preset(job.preset, vocab_size=len(vocab)))
            encoder = build_encoder(config)
        vocab_size = encoder.get_layer("embeddings").vocab_size
        if vocab_size != len(vocab):
            raise SystemExit(f"The encoder's vocab_size is {vocab_size} but the vocabulary has {len(vocab)} "
                             "tokens: pass the --vocab the model was trained with.")
        architecture = encoder_config(encoder).to_dict()
        if checkpoint_paths(resume_dir):
            check_architecture(job.model_dir, architecture)
        save_architecture(job.model_dir, architecture)
        model = task.build_model(encoder)
        optimizer = create_optimizer(learning_rate=job.learning_rate, total_steps=total_steps,
                                     warmup_steps=int(total_steps * job.warmup_proportion),
                                     weight_decay=job.weight_decay)
        if job.mixed_precision == "fp16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
        model.compile(optimizer=optimizer, jit_compile=use_xla(job.xla), **task.compile_args())
        predict = make_predictor(model, job.xla)
        best = BestDevCheckpoint(lambda: task.evaluate(predict), task.main_metric,
                                 os.path.join(out_dir, "model.keras"), os.path.join(out_dir, "logs"), resume_dir)
        done = best.restore(model)

    info = {"task_type": task.task_type, "lower_case": job.lower_case, "seq_length": job.seq_length,
            **task.task_info()}
    atomic_write_text(os.path.join(out_dir, "task.json"), json.dumps(info, indent=2) + "\n")
    vocab.save(os.path.join(out_dir, "vocab.txt"))

    if done < job.epochs:
        stop = StopOnNonFinite(f"{resume_dir} resumes from the last completed epoch, and "
                               f"{os.path.join(out_dir, 'model.keras')} holds the best one so far")
        callbacks = [keras.callbacks.TensorBoard(os.path.join(out_dir, "logs")), stop, best]
        # One endless iterator, steps_per_epoch batches (one pass, reshuffled) per epoch: with a new iterator per
        # epoch, graph-mode `fit` here sometimes waited ~8 s before an epoch's first batch (10 of 41 epochs).
        # A bar redrawn into a log file is unreadable: off a terminal, one line per epoch.
        model.fit(task.train_dataset(job.batch_size, seed, first_epoch=done), initial_epoch=done,
                  epochs=job.epochs, steps_per_epoch=steps_per_epoch, callbacks=callbacks, shuffle=False,
                  verbose=1 if job.verbose and sys.stdout.isatty() else 2)
    else:                 # a finished run, run again: the best epoch's weights, then the files once more
        best.set_model(model)
        best.on_train_end()
    task.write_predictions(predict, out_dir)   # with the best epoch's weights, restored by BestDevCheckpoint
    result = {"metrics": best.best_metrics, "best_epoch": best.best_epoch, "epochs": best.history,
              "train_seconds_per_epoch": best.epoch_seconds}
    atomic_write_text(os.path.join(out_dir, "metrics.json"), json.dumps(result, indent=2) + "\n")
    return result


def _seed_dir(job: FinetuneJob, seed: int) -> str:
    """Where one seed's files go: `--model_dir` itself for one seed, `seed_<n>/` in it for several."""
    return job.model_dir if len(job.seeds) == 1 else os.path.join(job.model_dir, f"seed_{seed}")


def _resume_dir(job: FinetuneJob, seed: int) -> str:
    return os.path.join(_seed_dir(job, seed), "checkpoints")


def _encoder_path(init: str) -> str:
    """--init as `load_encoder` takes it: our pretraining model_dir means its encoder.keras."""
    if os.path.isdir(init) and os.path.exists(os.path.join(init, "encoder.keras")):
        return os.path.join(init, "encoder.keras")
    return init


def make_predictor(model, jit_compile: bool | None = None):
    """`predict(dataset) -> list of per-batch outputs` (numpy, nested like the model's outputs).

    Batches keep their own padded length (unlike `model.predict`, which concatenates them), so token-level
    outputs of dynamically padded batches stay usable. Each batch is split across the CPU's cores
    (`inference_function`).
    """
    import tensorflow as tf

    from keras_bert_lite.models.inference import inference_function

    steps = {}

    def predict(dataset):
        spec = dataset.element_spec[0]
        key = str(spec)
        if key not in steps:   # one trace for all batch sizes and padded lengths
            relaxed = tf.nest.map_structure(lambda s: tf.TensorSpec([None] * s.shape.rank, s.dtype), spec)
            steps[key] = inference_function(model, jit_compile=jit_compile, input_signature=[relaxed])
        return [tf.nest.map_structure(lambda t: t.numpy(), steps[key](x)) for x, *_ in dataset]
    return predict


def _copy_files(source: str, target: str) -> None:
    """Copies the files (not the subdirectories) of `source` into `target`, each atomically."""
    for name in sorted(os.listdir(source)):
        path = os.path.join(source, name)
        if os.path.isfile(path) and name != "flags.json":
            with atomic_path(os.path.join(target, name)) as tmp:
                shutil.copyfile(path, tmp)


def _format(metrics: dict) -> str:
    return ", ".join(f"{k} {v:.4f}" for k, v in metrics.items())

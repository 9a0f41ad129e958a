"""BERT pretraining (MLM + NSP) from raw text: the library behind `tasks/run_pretraining.py` / `kbl-pretrain`.

    python tasks/run_pretraining.py --input_files 'corpus/*.txt' --vocab vocab.txt --preset tiny \\
        --seq_length 128 --batch_size 32 --steps 10000 --model_dir runs/pretrain

Writes into `--model_dir`: `checkpoints/` (every `--checkpoint_every` steps; the run resumes from the latest
readable one automatically: weights, optimizer, LR schedule, step and data position), `train/` (TensorBoard),
`flags.json` and `model_config.json` (the settings and architecture a resumed run must match: see
`resume_flags`), and at the end `pretrainer.keras`, `encoder.keras` (for fine-tuning: `--init model_dir`) and
`vocab.txt`. Every file is written atomically. A non-finite loss or gradient norm stops the run at that step,
with every kept checkpoint finite.

Distribution (`--strategy`): cpu | mirrored (all local GPUs) | multi_worker (MultiWorkerMirroredStrategy from
TF_CONFIG; run the same command on every worker) | tpu (`--tpu NAME`) | auto. Multi-worker and TPU runs use the
same custom training loop as one device (Keras 3's fit crashes under MultiWorkerMirroredStrategy,
keras-team/keras#20585).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys

from keras_bert_lite.training.checkpointing import checkpoint_paths
from keras_bert_lite.training.command_errors import exit_on_training_error
from keras_bert_lite.training.resume_flags import (check_architecture, check_resume, flag_names, save_architecture,
                                                   save_flags)

logger = logging.getLogger("keras_bert_lite.pretrain")


@dataclasses.dataclass
class PretrainingJob:
    """Every setting of a pretraining run (the CLI flags)."""

    model_dir: str
    input_files: str = ""
    tfds_name: str = ""
    tfds_split: str = "train"
    vocab: str = ""
    lower_case: bool = True
    preset: str = ""
    config: str = ""
    init: str = ""
    seq_length: int = 128
    max_predictions: int = 20
    whole_word_masking: bool = False
    short_seq_prob: float = 0.1
    window_docs: int = 256
    shuffle_buffer: int = 10_000
    batch_size: int = 32
    steps: int = 1000
    learning_rate: float = 1e-4
    warmup_steps: int = -1
    weight_decay: float = 0.01
    optimizer: str = "adamw"
    accumulation_steps: int = 1
    strategy: str = "auto"
    tpu: str = ""
    mixed_precision: str = "none"
    xla: bool | None = None          # None: XLA on GPUs/TPUs, graph mode on CPUs (keras_bert_lite.xla)
    checkpoint_every: int = 1000
    log_every: int = 100
    seed: int = 0
    verbose: bool = True
    allow_flag_change: tuple = ()


def parse_args(argv=None) -> PretrainingJob:
    defaults = PretrainingJob(model_dir="")
    p = argparse.ArgumentParser(description="BERT pretraining (MLM + NSP) with on-the-fly dynamic masking.",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    data = p.add_argument_group("data")
    data.add_argument("--input_files", default="", help="comma-separated globs of text files: one sentence per "
                      "line, a blank line between documents (google-research/bert format)")
    data.add_argument("--tfds_name", default="", help="or a tensorflow-datasets text dataset, e.g. "
                      "wikipedia/20230601.en (streamed)")
    data.add_argument("--tfds_split", default=defaults.tfds_split)
    data.add_argument("--vocab", default="", help="vocab.txt or tokenizer.json (default: the one in --init)")
    data.add_argument("--cased", dest="lower_case", action="store_false", help="keep case and accents")
    data.add_argument("--seq_length", type=int, default=defaults.seq_length)
    data.add_argument("--max_predictions", type=int, default=defaults.max_predictions)
    data.add_argument("--whole_word_masking", action="store_true")
    data.add_argument("--short_seq_prob", type=float, default=defaults.short_seq_prob)
    data.add_argument("--window_docs", type=int, default=defaults.window_docs,
                      help="documents per window; a NotNext B comes from another document of the window")
    data.add_argument("--shuffle_buffer", type=int, default=defaults.shuffle_buffer)
    model = p.add_argument_group("model")
    model.add_argument("--preset", default="", help="tiny|mini|small|medium|base|large (with the vocab's size)")
    model.add_argument("--config", default="", help="a BertConfig JSON (ours, bert_config.json or HF config.json)")
    model.add_argument("--init", default="", help="start from weights: a HF directory, an original TF1 "
                       "checkpoint, or a .keras file / our model_dir")
    train = p.add_argument_group("training")
    train.add_argument("--model_dir", required=True)
    train.add_argument("--batch_size", type=int, default=defaults.batch_size, help="global batch size")
    train.add_argument("--steps", type=int, default=defaults.steps)
    train.add_argument("--learning_rate", type=float, default=defaults.learning_rate)
    train.add_argument("--warmup_steps", type=int, default=defaults.warmup_steps, help="-1: 10%% of --steps")
    train.add_argument("--weight_decay", type=float, default=defaults.weight_decay)
    train.add_argument("--optimizer", choices=("adamw", "lamb"), default=defaults.optimizer)
    train.add_argument("--accumulation_steps", type=int, default=defaults.accumulation_steps)
    train.add_argument("--strategy", choices=("auto", "cpu", "mirrored", "multi_worker", "tpu"),
                       default=defaults.strategy)
    train.add_argument("--tpu", default="", help="TPU name or grpc:// address for --strategy tpu")
    train.add_argument("--mixed_precision", choices=("none", "bf16", "fp16"), default=defaults.mixed_precision)
    train.add_argument("--xla", action=argparse.BooleanOptionalAction, default=None,
                       help="XLA-compile the training step (default: where TensorFlow sees a GPU or TPU; on CPUs "
                            "graph mode is faster)")
    train.add_argument("--checkpoint_every", type=int, default=defaults.checkpoint_every)
    train.add_argument("--log_every", type=int, default=defaults.log_every)
    train.add_argument("--seed", type=int, default=defaults.seed)
    train.add_argument("--quiet", dest="verbose", action="store_false")
    train.add_argument("--allow_flag_change", type=flag_names, default=(), metavar="NAME[,NAME]",
                       help="resume a run although these settings differ from its flags.json")
    return PretrainingJob(**vars(p.parse_args(argv)))



def _validate(job: PretrainingJob) -> None:
    if bool(job.input_files) == bool(job.tfds_name):
        raise SystemExit("Give exactly one of --input_files and --tfds_name.")
    if sum(map(bool, (job.preset, job.config, job.init))) != 1:
        raise SystemExit("Give exactly one of --preset, --config and --init.")
    if job.seq_length < 8 or job.max_predictions < 1 or job.batch_size < 1 or job.steps < 1:
        raise SystemExit("--seq_length >= 8, --max_predictions, --batch_size and --steps >= 1 are required.")


def _find_vocab(job: PretrainingJob) -> str:
    if job.vocab:
        return job.vocab
    base = job.init if os.path.isdir(job.init) else os.path.dirname(job.init)
    for name in ("vocab.txt", "tokenizer.json"):
        if job.init and os.path.exists(os.path.join(base, name)):
            return os.path.join(base, name)
    raise SystemExit("--vocab is required (no vocab.txt/tokenizer.json beside --init). Build one with "
                     "tasks/create_vocab.py.")


def run(job: PretrainingJob) -> list[dict]:
    """Runs (or resumes) pretraining; returns the logged metrics (one dict per log)."""
    _validate(job)
    resuming = bool(checkpoint_paths(os.path.join(job.model_dir, "checkpoints")))
    if resuming:
        check_resume(job.model_dir, dataclasses.asdict(job), job.allow_flag_change)
    import keras
    import tensorflow as tf

    from keras_bert_lite import BertConfig, build_pretrainer
    from keras_bert_lite.checkpoints import load_pretrainer
    from keras_bert_lite.data.masking import DynamicMasker
    from keras_bert_lite.data.pretraining import (expand_patterns, pretraining_dataset, text_file_documents,
                                                   tfds_documents)
    from keras_bert_lite.models.introspect import encoder_config
    from keras_bert_lite.text import BertPacker, BertTokenizer, Vocab
    from keras_bert_lite.training.distribute import is_chief, resolve_strategy
    from keras_bert_lite.training.optimization import create_optimizer
    from keras_bert_lite.training.trainer import Trainer
    from keras_bert_lite.utils.files import atomic_save_model

    strategy = resolve_strategy(job.strategy, job.tpu)   # first: multi-worker/TPU set-up precedes other TF work
    chief = is_chief(strategy)
    if job.mixed_precision != "none":
        keras.mixed_precision.set_global_policy({"bf16": "mixed_bfloat16", "fp16": "mixed_float16"}[
            job.mixed_precision])
    keras.utils.set_random_seed(job.seed)
    vocab_path = _find_vocab(job)
    vocab = Vocab.from_file(vocab_path)
    os.makedirs(job.model_dir, exist_ok=True)

    # ---- Model and optimizer, created in the strategy's scope.
    with strategy.scope():
        if job.init:
            pretrainer = load_pretrainer(job.init, new_heads=True)
        else:
            config = (BertConfig.from_json(job.config) if job.config else
                      BertConfig.from_preset(job.preset, vocab_size=len(vocab)))
            pretrainer = build_pretrainer(config)
        vocab_size = pretrainer.get_layer("masked_lm").vocab_size
        if vocab_size != len(vocab):
            raise SystemExit(f"The model's vocab_size is {vocab_size} but {vocab_path} has {len(vocab)} tokens.")
        architecture = encoder_config(pretrainer.encoder).to_dict()
        if resuming:
            check_architecture(job.model_dir, architecture)
        if chief:
            save_flags(job.model_dir, dataclasses.asdict(job))
            save_architecture(job.model_dir, architecture)
        # --steps and --warmup_steps count batches; the schedule counts optimizer updates.
        updates = max(1, job.steps // job.accumulation_steps)
        warmup = (job.warmup_steps if job.warmup_steps >= 0 else job.steps // 10) // job.accumulation_steps
        optimizer = create_optimizer(job.optimizer, learning_rate=job.learning_rate, total_steps=updates,
                                     warmup_steps=warmup, weight_decay=job.weight_decay,
                                     accumulation_steps=job.accumulation_steps)
        if job.mixed_precision == "fp16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)

    # ---- Data: this worker's shard of an endless, seeded stream of examples.
    tokenizer = BertTokenizer(vocab, lower_case=job.lower_case)
    packer = BertPacker(job.seq_length, vocab=vocab)
    masker = DynamicMasker.from_vocab(vocab, max_predictions=job.max_predictions,
                                      whole_word=job.whole_word_masking)

    def dataset_fn(context: tf.distribute.InputContext):
        shards, shard = context.num_input_pipelines, context.input_pipeline_id
        # Shard by file/tfds shard when every worker can have its own files, else by example (see
        # data/pretraining.py); workers reading different files also draw from different seeds.
        if job.tfds_name:
            by_file = True
            documents = tfds_documents(job.tfds_name, job.tfds_split, seed=job.seed, input_context=context)
        else:
            by_file = shards > 1 and len(expand_patterns(job.input_files)) >= shards
            documents = text_file_documents(job.input_files, seed=job.seed,
                                            num_shards=shards if by_file else 1, shard=shard if by_file else 0)
        return pretraining_dataset(
            documents, tokenizer, packer, masker, short_seq_prob=job.short_seq_prob,
            window_docs=job.window_docs, shuffle_buffer=job.shuffle_buffer,
            seed=job.seed + (1_000_003 * shard if by_file else 0),
            num_shards=1 if by_file else shards, shard=0 if by_file else shard)

    # ---- Train (resumes from the latest checkpoint in model_dir).
    trainer = Trainer(pretrainer, optimizer, strategy, job.model_dir, checkpoint_every=job.checkpoint_every,
                      steps_per_loop=min(job.log_every, job.checkpoint_every), jit_compile=job.xla)
    history = trainer.train(dataset_fn, job.batch_size, job.steps, log_every=job.log_every, verbose=job.verbose)

    # ---- Final models for fine-tuning.
    if chief:
        atomic_save_model(pretrainer, os.path.join(job.model_dir, "pretrainer.keras"))
        atomic_save_model(pretrainer.encoder, os.path.join(job.model_dir, "encoder.keras"))
        vocab.save(os.path.join(job.model_dir, "vocab.txt"))
    return history


def main(argv=None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    with exit_on_training_error():
        run(parse_args(argv))


if __name__ == "__main__":
    main(sys.argv[1:])

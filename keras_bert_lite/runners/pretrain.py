"""`kbl-pretrain`: BERT pretraining (MLM + NSP) from raw text.

    kbl-pretrain --input_files 'corpus/*.txt' --vocab vocab.txt --preset tiny \\
        --seq_length 128 --batch_size 32 --steps 10000 --model_dir runs/pretrain

The run directory (`keras_bert_lite.artifacts`) gets resume checkpoints every `--checkpoint_every` steps (the
same command resumes from the newest readable one: weights, optimizer, schedule, step and data position),
TensorBoard logs, the settings a resumed run must match, and at the end `pretrainer.keras`, `encoder.keras` and
the vocabulary with its casing. `--init` a pretraining run directory continues pretraining from its model, heads
included. A non-finite loss or gradient norm stops the run at that step, with every kept checkpoint finite.

Distribution (`--strategy`): the same custom training loop (`training.Trainer`) on one device, several GPUs
(mirrored), several machines (multi_worker, from TF_CONFIG; run the same command on every worker) or a TPU
(Keras 3's `fit` crashes under MultiWorkerMirroredStrategy, keras-team/keras#20585).
"""

from __future__ import annotations

import dataclasses
import os
import sys

import keras
import tensorflow as tf

from keras_bert_lite import artifacts
from keras_bert_lite.data.masking import DynamicMasker
from keras_bert_lite.data.pretraining import expand_patterns, pretraining_dataset, text_file_documents, tfds_documents
from keras_bert_lite.runners import common
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.runners.flags import MAX_SEED, flag, redefault
from keras_bert_lite.runners.run_lock import holds_run_dir
from keras_bert_lite.text import BertPacker, BertTokenizer
from keras_bert_lite.training.distribute import is_chief, resolve_strategy
from keras_bert_lite.training.optimization import create_optimizer
from keras_bert_lite.training.trainer import Trainer
from keras_bert_lite.utils.files import atomic_save_model
from keras_bert_lite.xla import configure_gpu_compiles


@dataclasses.dataclass
class PretrainingJob(common.RunJob):
    """Every setting of a pretraining run (one flag each)."""

    input_files: str = flag(
        "",
        "comma-separated globs of text files: one sentence per line, a blank line between "
        "documents (google-research/bert format)",
        input_path=True,
        group="data",
    )
    tfds_name: str = flag(
        "", "or a tensorflow-datasets text dataset, e.g. wikipedia/20230601.en (streamed)", group="data"
    )
    tfds_split: str = flag("train", "the tensorflow-datasets split", group="data")
    max_predictions: int = flag(20, "masked positions per sequence", group="data", type=int, minimum=1)
    whole_word_masking: bool = flag(False, "mask every piece of a chosen word", group="data", action="store_true")
    short_seq_prob: float = flag(
        0.1, "share of sequences cut to a random shorter length", group="data", type=float, minimum=0, maximum=1
    )
    window_docs: int = flag(
        256,
        "documents per window; a NotNext B comes from another document of the window",
        group="data",
        type=int,
        minimum=2,
    )
    shuffle_buffer: int = flag(
        10_000, "examples in the shuffle buffer (1: no shuffling)", group="data", type=int, minimum=1
    )
    learning_rate: float = redefault(common.RunJob, "learning_rate", 1e-4)
    steps: int = flag(1000, "training steps (batches)", type=int, minimum=1)
    warmup_steps: int = flag(-1, "steps of linear warmup; 0: none; -1: 10% of --steps", type=int, minimum=-1)
    optimizer: str = flag("adamw", "adamw (google-research/bert) or lamb", choices=("adamw", "lamb"))
    accumulation_steps: int = flag(1, "batches whose mean gradient makes one update", type=int, minimum=1)
    checkpoint_every: int = flag(1000, "steps between resume checkpoints", type=int, minimum=1)
    log_every: int = flag(100, "steps between metric logs", type=int, minimum=1)
    seed: int = flag(0, "random seed (data, masks, initialisation)", type=int, minimum=0, maximum=MAX_SEED)

    def check(self) -> None:
        """Refuses both or neither of --input_files and --tfds_name (and `RunJob.check`'s rules)."""
        super().check()
        if bool(self.input_files) == bool(self.tfds_name):
            raise SettingsError(
                "Give exactly one of --input_files (text files) and --tfds_name (a tensorflow-datasets text dataset)."
            )


# The shape of a batch: the checkpointed position in the data stream holds batches of it.
BATCH_SHAPE = ("batch_size", "seq_length", "max_predictions")


@holds_run_dir
def run(job: PretrainingJob) -> list[dict]:
    """Runs (or resumes) pretraining; returns the logged metrics (one dict per log)."""
    resuming = common.is_resuming(job.model_dir)
    if resuming:
        common.check_settings(job, fixed=BATCH_SHAPE)
        common.check_not_shorter(job.model_dir, "steps", job.steps)
    strategy = resolve_strategy(job.strategy, job.tpu)  # first: multi-worker/TPU set-up precedes other TF work
    chief = is_chief(strategy)
    common.set_precision(job)
    configure_gpu_compiles()
    keras.utils.set_random_seed(job.seed)
    vocab = common.run_vocab(job)

    with strategy.scope():
        pretrainer = common.start_pretrainer(job, vocab)
        record_settings = common.record_run(job, pretrainer.encoder, resuming, write=chief)
        # --steps and --warmup_steps count batches; the schedule counts optimizer updates.
        updates = max(1, job.steps // job.accumulation_steps)
        warmup = (job.warmup_steps if job.warmup_steps >= 0 else job.steps // 10) // job.accumulation_steps
        optimizer = create_optimizer(
            job.optimizer,
            learning_rate=job.learning_rate,
            total_steps=updates,
            warmup_steps=warmup,
            weight_decay=job.weight_decay,
            accumulation_steps=job.accumulation_steps,
        )
        if job.mixed_precision == "fp16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)

    # This worker's shard of an endless, seeded stream of examples.
    tokenizer = BertTokenizer(vocab)
    packer = BertPacker(job.seq_length, vocab=vocab)
    masker = DynamicMasker.from_vocab(vocab, max_predictions=job.max_predictions, whole_word=job.whole_word_masking)

    def dataset_fn(context: tf.distribute.InputContext):
        shards, shard = context.num_input_pipelines, context.input_pipeline_id
        # Shard by file/tfds shard when every worker can have its own files, else by example (see
        # data/pretraining.py); workers reading different files also draw from different seeds.
        if job.tfds_name:
            by_file = True
            documents = tfds_documents(job.tfds_name, job.tfds_split, seed=job.seed, input_context=context)
        else:
            by_file = shards > 1 and len(expand_patterns(job.input_files)) >= shards
            documents = text_file_documents(
                job.input_files,
                seed=job.seed,
                num_shards=shards if by_file else 1,
                shard=shard if by_file else 0,
                window_docs=job.window_docs,
            )
        return pretraining_dataset(
            documents,
            tokenizer,
            packer,
            masker,
            short_seq_prob=job.short_seq_prob,
            window_docs=job.window_docs,
            shuffle_buffer=job.shuffle_buffer,
            seed=job.seed + (1_000_003 * shard if by_file else 0),
            num_shards=1 if by_file else shards,
            shard=0 if by_file else shard,
        )

    trainer = Trainer(
        pretrainer,
        optimizer,
        strategy,
        job.model_dir,
        checkpoint_every=job.checkpoint_every,
        steps_per_loop=min(job.log_every, job.checkpoint_every),
        jit_compile=job.xla,
        before_save=record_settings,
        divergence_advice=common.divergence_advice(job),
    )
    history = trainer.train(dataset_fn, job.batch_size, job.steps, log_every=job.log_every, verbose=not job.quiet)

    if chief:
        atomic_save_model(pretrainer, os.path.join(job.model_dir, artifacts.PRETRAINER_FILE))
        atomic_save_model(pretrainer.encoder, os.path.join(job.model_dir, artifacts.ENCODER_FILE))
        vocab.save(os.path.join(job.model_dir, artifacts.VOCAB_FILES[0]))
    return history


parse_args, main = common.command(
    PretrainingJob, run, "BERT pretraining (MLM + NSP) with on-the-fly dynamic masking and next-sentence pairs."
)

if __name__ == "__main__":
    main(sys.argv[1:])

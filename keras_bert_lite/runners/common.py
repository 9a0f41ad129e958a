"""What every training command shares: its settings (`RunJob`, one flag per field), and the steps every run
starts with (precision, the vocabulary and its casing, the model to start from, the resume checks)."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os

import keras

from keras_bert_lite import artifacts
from keras_bert_lite.checkpoints import load
from keras_bert_lite.config import PRESETS, BertConfig
from keras_bert_lite.models import build_encoder, build_pretrainer
from keras_bert_lite.models.introspect import encoder_config, max_positions
from keras_bert_lite.runners.errors import SettingsError, exit_on_expected_error
from keras_bert_lite.runners.flags import CheckedFlags, flag, names, parse_job, true_or_false
from keras_bert_lite.runners.input_digests import input_digests
from keras_bert_lite.runners.resume import (
    check_architecture,
    check_inputs,
    check_resume,
    save_architecture,
    save_flags,
    save_inputs,
)
from keras_bert_lite.text import Vocab
from keras_bert_lite.text.vocab import table_mismatch
from keras_bert_lite.training.checkpointing import checkpoint_number, checkpoint_paths
from keras_bert_lite.training.distribute import STRATEGIES, tf_config_problem

PRECISION_POLICIES = {"bf16": "mixed_bfloat16", "fp16": "mixed_float16"}


@dataclasses.dataclass
class CommandJob(CheckedFlags):
    """The setting of every command; every job checks its fields against their bounds and choices when it is
    constructed (`runners.flags`)."""

    verbose: bool = flag(
        False, "also show TensorFlow's start-up lines and warnings", group="output", action="store_true"
    )


@dataclasses.dataclass
class RunJob(CommandJob):
    """The settings of every training command (pretraining and fine-tuning)."""

    model_dir: str = flag(
        "",
        "where the run's files go (see keras_bert_lite.artifacts); a directory with checkpoints resumes",
        required=True,
    )
    init: str = flag(
        "",
        "start from weights: a keras_bert_lite run directory or .keras file, a Hugging Face "
        "directory or model name ([org/]name[@revision], through its cache; HF_HUB_OFFLINE=1: the "
        "cache only), or an original TF1 checkpoint (directory or .zip)",
        input_path=True,
        group="model",
    )
    preset: str = flag("", "start from scratch with this size", group="model", choices=PRESETS)
    config: str = flag(
        "",
        "start from scratch with this BertConfig JSON (ours, bert_config.json or HF config.json)",
        input_path=True,
        group="model",
    )
    vocab: str = flag(
        "", "vocab.txt or tokenizer.json (default: the one beside --init)", input_path=True, group="model"
    )
    lower_case: bool | None = flag(
        None,
        "true: uncased vocabulary (lower-case, strip accents), false: cased. "
        "Default: what the vocabulary records beside it (tokenizer_config.json) or its "
        "tokens show; a contradicting value is refused",
        group="model",
        type=true_or_false,
        metavar="true|false",
    )
    seq_length: int = flag(128, "longest packed sequence, in tokens", group="model", type=int, minimum=8)
    batch_size: int = flag(32, "global batch size", type=int, minimum=1)
    learning_rate: float = flag(2e-5, "peak learning rate", type=float, above=0)
    weight_decay: float = flag(0.01, "decoupled weight decay (not on LayerNorm and biases)", type=float, minimum=0)
    strategy: str = flag(
        "auto",
        "auto|cpu|mirrored (all local GPUs)|multi_worker (TF_CONFIG)|tpu",
        group="distribution",
        choices=STRATEGIES,
    )
    tpu: str = flag("", "TPU name or grpc:// address for --strategy tpu", group="distribution")
    mixed_precision: str = flag(
        "none", "compute in bf16 or fp16 (fp16 with loss scaling)", choices=("none", *PRECISION_POLICIES)
    )
    xla: bool | None = flag(
        None,
        "XLA-compile the steps (default: where TensorFlow sees a GPU or TPU; on CPUs graph mode is faster)",
        action=argparse.BooleanOptionalAction,
    )
    quiet: bool = flag(
        False,
        "log lines instead of a progress bar (always so when the output is not a terminal)",
        group="output",
        action="store_true",
    )
    allow_flag_change: tuple = flag(
        (), "resume a run although these settings differ from its flags.json", type=names, metavar="NAME[,NAME]"
    )

    def check(self) -> None:
        """Refuses none or several of --init, --preset and --config, and a TF_CONFIG --strategy cannot use."""
        super().check()
        given = [f"--{name}" for name in ("init", "preset", "config") if getattr(self, name)]
        if len(given) != 1:
            raise SettingsError(
                "Give exactly one of --init (pretrained weights), --preset and --config (from "
                f"scratch); got {' and '.join(given) or 'none'}."
            )
        if tf_config_problem(self.strategy):
            raise SettingsError(tf_config_problem(self.strategy))


def command(job_class, run, description: str):
    """`(parse_args, main)` of a command: `parse_args(argv) -> job`; `main(argv)` parses, runs, and reports the
    expected errors (`runners.errors`) as one line."""

    def parse_args(argv=None):
        return parse_job(job_class, argv, description)

    def main(argv=None) -> None:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        with exit_on_expected_error():
            run(parse_args(argv))

    return parse_args, main


def set_precision(job: RunJob) -> None:
    """The Keras dtype policy of --mixed_precision (float32 for "none")."""
    keras.mixed_precision.set_global_policy(PRECISION_POLICIES.get(job.mixed_precision, "float32"))


def run_vocab(job: RunJob) -> Vocab:
    """The run's vocabulary (--vocab or beside --init) with its casing resolved against --lower_case."""
    return model_vocab(job.vocab, job.init, job.lower_case)


def model_vocab(vocab_flag: str, model: str, lower_case: bool | None, model_flag: str = "--init") -> Vocab:
    """The vocabulary --vocab names (`vocab_flag`), else the one beside the model (`model`, given as
    `model_flag`), with its casing resolved against --lower_case (`lower_case`)."""
    path = artifacts.vocab_given_or_beside(vocab_flag, model, model_flag)
    vocab = Vocab.from_file(path)
    try:
        return vocab.with_lower_case(
            vocab.resolve_lower_case(lower_case, "--lower_case"), casing_source=vocab.casing_source
        )
    except ValueError as error:
        raise SettingsError(f"{path}: {error}") from None


def check_vocab_size(model_vocab_size: int, vocab: Vocab) -> None:
    """Refuses a vocabulary that does not fit the model's embedding table (`text.vocab.table_mismatch`)."""
    mismatch = table_mismatch(model_vocab_size, vocab)
    if mismatch:
        raise SettingsError(f"{mismatch[0].upper()}{mismatch[1:]}: pass the --vocab the model was trained with.")


def check_seq_length(job: RunJob, encoder) -> None:
    """Refuses a --seq_length beyond the encoder's position table (before any step runs, not inside the first)."""
    positions = max_positions(encoder)
    if job.seq_length > positions:
        raise SettingsError(
            f"--seq_length {job.seq_length} is longer than the {positions} positions of the model "
            f"({_model_source(job)}: max_position_embeddings): pass --seq_length {positions} or "
            "less."
        )


def check_segments(job: RunJob, encoder, pairs: str) -> None:
    """Refuses a model with one segment type (type_vocab_size 1) for inputs that pair two texts (`pairs`: what
    they are), whose second text has segment id 1 (before any step runs, not inside the first)."""
    types = encoder.get_layer("embeddings").type_vocab_size
    if types < 2:
        raise SettingsError(
            f"{pairs} give the second text segment id 1, but the model ({_model_source(job)}: "
            f"type_vocab_size) has {types} segment type: train it on single texts, or start from "
            "a model with type_vocab_size 2."
        )


def _model_source(job: RunJob) -> str:
    return f"--init {job.init}" if job.init else f"--config {job.config}" if job.config else f"--preset {job.preset}"


def start_encoder(job: RunJob, vocab: Vocab, pairs: str = "") -> keras.Model:
    """The encoder to fine-tune: from --init, or new from --config / --preset (call inside the strategy scope).

    Args:
        job: the settings.
        vocab: the run's vocabulary.
        pairs: what the task's pairs of texts are, for the message (e.g. "The task's text pairs"); "" for single
            texts.
    """
    if job.init:
        encoder = load(job.init)
    else:
        encoder = build_encoder(_new_config(job, vocab))
    check_vocab_size(encoder.get_layer("embeddings").vocab_size, vocab)
    check_seq_length(job, encoder)
    if pairs:
        check_segments(job, encoder, pairs)
    return encoder


def start_pretrainer(job: RunJob, vocab: Vocab):
    """The pretrainer to train: from --init (its heads too where it has them; a pretraining run continues), or
    new (call inside the strategy scope)."""
    model = load(job.init, "pretrainer", new_heads=True) if job.init else build_pretrainer(_new_config(job, vocab))
    check_vocab_size(model.get_layer("masked_lm").vocab_size, vocab)
    check_seq_length(job, model.get_layer("encoder"))
    check_segments(job, model.get_layer("encoder"), "Next-sentence pairs")
    return model


def _new_config(job: RunJob, vocab: Vocab) -> BertConfig:
    return BertConfig.from_json(job.config) if job.config else BertConfig.of_size(job.preset, vocab_size=len(vocab))


def divergence_advice(job: RunJob) -> str:
    """What usually fixes a run whose loss diverged, naming only flags this command has (`training.non_finite`'s
    `advice`): its warmup flag (--warmup_steps or --warmup_proportion), and bf16 only for a run in fp16."""
    warmup = next(
        (f"more --{name}" for name in ("warmup_steps", "warmup_proportion") if hasattr(job, name)), "a longer warmup"
    )
    precision = ", --mixed_precision bf16 instead of fp16" if job.mixed_precision == "fp16" else ""
    return f"a lower --learning_rate or {warmup}{precision}, or checking the input data of that step"


def resume_dir(run_dir: str) -> str:
    return os.path.join(run_dir, artifacts.CHECKPOINTS_DIR)


def is_resuming(*run_dirs: str) -> bool:
    """Whether any of the run directories holds resume checkpoints."""
    return any(checkpoint_paths(resume_dir(d)) for d in run_dirs)


def check_not_shorter(run_dir: str, flag: str, value: int) -> None:
    """Refuses to resume the run in `run_dir` for fewer steps or epochs (`flag`, `value`) than its newest
    checkpoint has done (numbered by them): it would end at once, its files saying `value`.

    Raises:
        SettingsError: naming both counts.
    """
    paths = checkpoint_paths(resume_dir(run_dir))
    done = checkpoint_number(paths[0]) if paths else 0
    if done > value:
        raise SettingsError(
            f"--{flag} {value}: the run in {run_dir} has done {done} already. Pass --{flag} {done} "
            "or more to continue it, or use a new --model_dir (--init starts from its weights)."
        )


def check_settings(job: RunJob, fixed: tuple[str, ...] = ()) -> None:
    """Refuses to resume the run in --model_dir with other settings (`runners.resume`; `fixed`: ones that cannot
    change even with --allow_flag_change)."""
    defaults = {field.name: field.default for field in dataclasses.fields(job)}
    check_resume(job.model_dir, dataclasses.asdict(job), job.allow_flag_change, fixed, defaults)
    check_inputs(job.model_dir, input_digests(job), job.allow_flag_change)


def record_run(job: RunJob, encoder, resuming: bool, write: bool = True):
    """Checks the architecture against a resumed run's and writes model_config.json.

    Returns:
        `record_settings()`, which writes the run's flags.json and inputs.json (the digests of its files now): call
        it before each checkpoint is saved. They then describe the newest checkpoint's settings: a resume whose
        accepted changes stop before their first checkpoint leaves those of the checkpoints it found. A no-op
        where `write` is False (a worker that is not the chief).
    """
    architecture = encoder_config(encoder).to_dict()
    if resuming:
        check_architecture(job.model_dir, architecture)
    if not write:
        return lambda: None
    os.makedirs(job.model_dir, exist_ok=True)
    save_architecture(job.model_dir, architecture)
    settings, digests = dataclasses.asdict(job), input_digests(job)

    def record_settings() -> None:
        save_flags(job.model_dir, settings)
        save_inputs(job.model_dir, digests)

    return record_settings

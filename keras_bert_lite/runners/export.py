"""`kbl-export`: a trained model as a versioned, audited, text-in SavedModel for TF Serving.

    kbl-export --model runs/sst2 --model_base_path exports/sst2 --keep 3
    kbl-export --model runs/sst2 --model_base_path hf/sst2 --target hf    # Hugging Face transformers
    kbl-export --model runs/pretrain --model_base_path exports/bert --target tf-hub

`--target tf-hub` writes TF Hub's BERT pair instead (`keras_bert_lite.export.tf_hub`): the encoder (a fine-tuned
run's encoder, without its head) to <model_base_path>/encoder/<version>/ and its preprocessor to
<model_base_path>/preprocess/<version>/, for code written against tfhub.dev's BERT encoders and preprocessors.

`--model` is a run directory (fine-tuning: model.keras + task.json; pretraining: encoder.keras) or a .keras file;
its vocabulary, casing and task come from beside it (`keras_bert_lite.artifacts`). The flags below override or
supply them for a bare .keras file; a casing that contradicts the vocabulary's is refused.

Sentence embedders: a run that trained one (task.json's task_type "embedding") exports as it is; with
`--task_type embedding`, `--model` may also be any checkpoint `kbl.load_embedder` reads, e.g. a sentence-transformers
model, which pools, normalises and cuts texts as its own files say:

    kbl-export --model path/to/all-MiniLM-L6-v2 --task_type embedding --model_base_path exports/minilm

Fill-mask: `--task_type fill_mask` exports a pretraining run, or any checkpoint `kbl.load_masked_lm` reads (a Hugging
Face BertForMaskedLM or BertForPreTraining, an original TF1 checkpoint), with its masked-LM head: the `fill_mask`
signature (also `serving_default`) gives the `--top_k` most probable tokens for each [MASK] of a text:

    kbl-export --model runs/pretrain --task_type fill_mask --top_k 10 --model_base_path exports/fill_mask
"""

from __future__ import annotations

import dataclasses
import os
import sys

from keras_bert_lite import artifacts
from keras_bert_lite.checkpoints import embedding_settings, load_embedder, load_masked_lm, load_trained
from keras_bert_lite.export.exporter import MAX_VERSION, TARGET_VARIANTS, ExportRefusedError, export_saved_model
from keras_bert_lite.export.hf import export_hf
from keras_bert_lite.export.signature_keys import signature_keys
from keras_bert_lite.export.tf_hub import export_tf_hub
from keras_bert_lite.models.embedder import is_embedder
from keras_bert_lite.models.introspect import max_positions
from keras_bert_lite.runners.common import CommandJob, command
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.runners.flags import flag, true_or_false
from keras_bert_lite.text import Vocab
from keras_bert_lite.utils.files import dirs_removed_on_failure

_OVERRIDES = "overrides (for a model without task.json or vocab.txt beside it)"
HF = "hf"  # a Hugging Face transformers directory (export.hf), written to --model_base_path itself
TF_HUB = "tf-hub"
# The flags a target has no use for (tf-serving and portable use them all).
UNUSED_FLAGS = {
    HF: ("version", "keep", "seq_length", "pair", "max_query_length", "max_answer_length", "top_k"),
    TF_HUB: ("task_type", "labels", "pair", "max_query_length", "max_answer_length", "top_k"),
}


@dataclasses.dataclass
class ExportJob(CommandJob):
    """The settings of kbl-export (one flag each)."""

    model: str = flag(
        "",
        "a run directory (model.keras, task.json, vocab.txt), a pretraining run directory "
        "(encoder.keras) or a .keras file; with --task_type embedding also a Hugging Face or "
        "sentence-transformers checkpoint (directory or Hub name)",
        group="export",
        required=True,
    )
    model_base_path: str = flag(
        "", "versions are written to <this>/<version>/ (TF Serving's --model_base_path)", group="export", required=True
    )
    target: str = flag(
        "tf-serving",
        "the runtime the export must load in (audited): tf-serving or portable (core "
        "TensorFlow ops only); tf-hub: TF Hub's BERT encoder + preprocessor pair (core ops only) "
        "in <model_base_path>/encoder/<version> and .../preprocess/<version>; hf: a Hugging Face "
        "transformers model (config.json, model.safetensors, vocab.txt) in <model_base_path> itself",
        group="export",
        choices=(*TARGET_VARIANTS, TF_HUB, HF),
    )
    version: int | None = flag(
        None,
        "the integer version (default: one above the newest)",
        group="export",
        type=int,
        minimum=0,
        maximum=MAX_VERSION,
    )
    keep: int | None = flag(None, "keep only the N newest versions", group="export", type=int, minimum=1)
    vocab: str = flag("", "vocab.txt or tokenizer.json", group=_OVERRIDES)
    lower_case: bool | None = flag(
        None,
        "true: uncased vocabulary, false: cased (default: the vocabulary's)",
        group=_OVERRIDES,
        type=true_or_false,
        metavar="true|false",
    )
    task_type: str = flag("", "what the model does", group=_OVERRIDES, choices=("", *artifacts.TASK_TYPES))
    labels: str = flag("", "comma-separated label names in id order", group=_OVERRIDES)
    pair: bool = flag(False, "the model takes two texts (text, text_b)", group=_OVERRIDES, action="store_true")
    seq_length: int | None = flag(
        None,
        "the length exports pad to (default: the run's, else 128 or the model's positions if fewer)",
        group=_OVERRIDES,
        type=int,
        minimum=8,
    )
    max_query_length: int | None = flag(
        None,
        "span tasks: question tokens kept (default: the run's, else what the context leaves)",
        group=_OVERRIDES,
        type=int,
        minimum=1,
    )
    max_answer_length: int | None = flag(
        None,
        f"span tasks: the longest answer, in tokens (default: the run's, else {artifacts.DEFAULT_MAX_ANSWER_LENGTH})",
        group=_OVERRIDES,
        type=int,
        minimum=1,
    )
    top_k: int | None = flag(
        None,
        f"fill_mask: tokens per mask (default {artifacts.DEFAULT_TOP_K}; at most the vocabulary's size)",
        group=_OVERRIDES,
        type=int,
        minimum=1,
    )

    def check(self) -> None:
        """Refuses flags that --target has no use for (`UNUSED_FLAGS`), which it would ignore."""
        super().check()
        unused = [
            f"--{field.name}"
            for field in dataclasses.fields(self)
            if field.name in UNUSED_FLAGS.get(self.target, ()) and getattr(self, field.name) != field.default
        ]
        if unused:
            raise SettingsError(
                f"--target {self.target} does not use {', '.join(unused)}: drop {'it' if len(unused) == 1 else 'them'}."
            )
        if self.top_k is not None and self.task_type not in ("", "fill_mask"):
            raise SettingsError(f"--top_k is a setting of --task_type fill_mask, not {self.task_type}: drop it.")


def run(job: ExportJob) -> str:
    """Exports; returns the new version's path (tf-hub: the encoder's). A failed export leaves no directory it
    created behind (`utils.files.dirs_removed_on_failure`)."""
    with dirs_removed_on_failure(job.model_base_path):
        return _export(job)


def _export(job: ExportJob) -> str:
    """`run`'s export: the model and its vocabulary loaded, casing resolved, written for --target."""
    model, spec, vocab_path = _load(job)
    vocab_path = job.vocab or vocab_path
    if vocab_path is None:
        raise SettingsError(f"{job.model}: no vocab.txt beside the model; pass --vocab.")
    vocab = Vocab.from_file(vocab_path)
    try:
        requested = job.lower_case if job.lower_case is not None else (spec.lower_case if spec else None)
        lower_case = vocab.resolve_lower_case(
            requested, "--lower_case" if job.lower_case is not None else f"{artifacts.TASK_SPEC_FILE}'s lower_case"
        )
        if job.target == HF:
            labels = job.labels.split(",") if job.labels else (spec.labels or None if spec else None)
            path = export_hf(
                model,
                job.model_base_path,
                vocab.with_lower_case(lower_case),
                labels=labels,
                task_type=job.task_type or (spec.task_type if spec else None),
                seq_length=spec.seq_length if spec else _default_seq_length(job, model),
            )
            print(
                f"exported to {path} for Hugging Face transformers (config.json, model.safetensors, vocab.txt"
                f"{'; sentence-transformers: modules.json' if is_embedder(model) else ''})"
            )
            if spec and spec.doc_stride:
                print(
                    f"note: the run read long texts in windows (doc_stride {spec.doc_stride}); this export holds "
                    "the model alone, and transformers' pipelines cut a text at its first tokens."
                )
            return path
        if job.target == TF_HUB:
            paths = export_tf_hub(
                model,
                vocab.with_lower_case(lower_case),
                job.model_base_path,
                seq_length=job.seq_length or (spec.seq_length if spec else 128),
                version=job.version,
                keep=job.keep,
            )
            print(f"exported TF Hub encoder to {paths[0]} and preprocessor to {paths[1]}")
            return paths[0]
        spec = _spec(job, spec, model, lower_case)
        path = export_saved_model(
            model,
            spec,
            vocab.with_lower_case(lower_case),
            job.model_base_path,
            target=job.target,
            version=job.version,
            keep=job.keep,
        )
    except (ExportRefusedError, FileExistsError, ValueError) as error:
        raise SettingsError(f"export failed: {error}") from None
    print(
        f"exported {spec.task_type} model to {path} (target {job.target}; signatures "
        f"{', '.join(signature_keys(spec.task_type))})"
    )
    return path


def _load(job: ExportJob):
    """(model, task.json's spec or None, vocabulary path or None) of --model. `--task_type embedding` loads with
    `load_embedder`: a run's embedder as saved, a sentence-transformers checkpoint as its files say, any other
    encoder mean-pooled; task.json's spec is kept only when it is an embedding's."""
    if job.task_type == "fill_mask":  # a pretraining run's pretrainer.keras, or any checkpoint with the head
        return load_masked_lm(job.model), None, artifacts.vocab_beside(job.model)
    if job.task_type != "embedding":
        return load_trained(job.model)
    found = artifacts.keras_file_of(job.model, (artifacts.TASK_MODEL_FILE, artifacts.ENCODER_FILE))
    spec_path = os.path.join(artifacts.run_dir_of(found), artifacts.TASK_SPEC_FILE) if found else ""
    spec = artifacts.TaskSpec.load(spec_path) if os.path.isfile(spec_path) else None
    return (
        load_embedder(job.model),
        spec if spec and spec.task_type == "embedding" else None,
        artifacts.vocab_beside(job.model),
    )


def _default_seq_length(job: ExportJob, model) -> int:
    """The length an export without task.json pads to: an embedder's sentence-transformers max_seq_length, else
    its positions (sentence-transformers' own default); other models 128, or their positions if fewer."""
    positions = max_positions(model if _is_encoder(model) else model.get_layer("encoder"))
    if not is_embedder(model):
        return min(128, positions)
    settings = embedding_settings(job.model)
    return settings.max_seq_length if settings and settings.max_seq_length else positions


def _spec(job: ExportJob, spec: artifacts.TaskSpec | None, model, lower_case: bool) -> artifacts.TaskSpec:
    """task.json's spec with the flags applied, or one built from the flags alone."""
    changes = {
        "task_type": job.task_type or None,
        "seq_length": job.seq_length,
        "labels": tuple(job.labels.split(",")) if job.labels else None,
        "lower_case": lower_case,
        "text_fields": ("text", "text_b") if job.pair else None,
        "max_query_length": job.max_query_length,
        "max_answer_length": job.max_answer_length,
        "top_k": job.top_k,
    }
    changes = {k: v for k, v in changes.items() if v is not None}
    if spec is not None:
        return dataclasses.replace(spec, **changes)
    if _is_encoder(model) or is_embedder(model):
        changes.setdefault("task_type", "encoder" if _is_encoder(model) else "embedding")
    if "task_type" not in changes:
        raise SettingsError(f"{job.model}: no task.json beside the model; pass --task_type (and --labels).")
    changes.setdefault("seq_length", _default_seq_length(job, model))
    return artifacts.TaskSpec(**changes)


def _is_encoder(model) -> bool:
    return isinstance(model.output, dict) and "sequence_output" in model.output


parse_args, main = command(ExportJob, run, "Export a trained model as a text-in SavedModel for TF Serving.")

if __name__ == "__main__":
    main(sys.argv[1:])

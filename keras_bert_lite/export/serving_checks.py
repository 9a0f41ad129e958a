"""What `ServingModule` refuses at export time: a model exported as a task type it is not, and a `TaskSpec` the
model cannot serve. Found here, not by the first request."""

from __future__ import annotations

from keras_bert_lite.artifacts import LABELED_TASKS, TaskSpec
from keras_bert_lite.models.embedder import is_embedder
from keras_bert_lite.models.introspect import max_positions
from keras_bert_lite.models.pretrainer import BertPretrainer


def check_task_type(model, spec: TaskSpec) -> None:
    """Refuses a task type that has no text-in export (multiple choice) or that `model` is not exported as.

    Args:
        model: the Keras model to export.
        spec: its TaskSpec.

    Raises:
        ValueError: for multiple choice (export the encoder instead), an embedder as another task type or another
            model as an embedder, a pretrainer as another task type or another model for fill_mask, and a top_k
            beyond the vocabulary.
    """
    if spec.task_type == "multiple_choice":
        raise ValueError(
            "Text-in export of a multiple-choice model is not supported (how the choices arrive "
            "is application-specific); export its encoder (task_type 'encoder') and build the "
            "choice pairs in the client with the `preprocess` signature of that export."
        )
    _check_embedder(model, spec)
    _check_masked_lm(model, spec)


def _check_embedder(model, spec: TaskSpec) -> None:
    """Refuses an embedder exported as another task type, and another model exported as an embedder.

    Raises:
        ValueError: naming the model and the task type to export it with.
    """
    if is_embedder(model) and spec.task_type != "embedding":
        raise ValueError(f"model {model.name!r} is an embedder (build_embedder): export it with task_type 'embedding'.")
    if spec.task_type == "embedding" and not is_embedder(model):
        raise ValueError(
            f"task_type 'embedding' needs an embedder (build_embedder, load_embedder); model "
            f"{model.name!r} has no pooling layer."
        )


def _check_masked_lm(model, spec: TaskSpec) -> None:
    """Refuses a pretrainer exported as another task type, another model for fill_mask, and a top_k beyond the
    vocabulary.

    Raises:
        ValueError: naming the model, the task type or top_k.
    """
    if isinstance(model, BertPretrainer) != (spec.task_type == "fill_mask"):
        raise ValueError(
            f"task_type {spec.task_type!r} for model {model.name!r}: a BertPretrainer exports with "
            "task_type 'fill_mask' (its masked-LM head; its encoder alone with 'encoder'), and only "
            "a BertPretrainer (load_masked_lm) does."
        )
    vocab_size = model.get_layer("masked_lm").vocab_size if spec.task_type == "fill_mask" else 0
    if spec.top_k > vocab_size:
        raise ValueError(f"top_k {spec.top_k} is more than the model's {vocab_size} tokens.")


def check_spec(model, encoder, spec: TaskSpec) -> None:
    """Refuses a spec the model cannot serve: found here, not by the first long or unlucky request.

    Args:
        model: the Keras model to export.
        encoder: its encoder (the model itself for task_type "encoder").
        spec: its TaskSpec.

    Raises:
        ValueError: `spec.seq_length` beyond the encoder's positions, text pairs for a model with one segment type,
            or not as many `spec.labels` as the model has outputs (classification, multi_label, token
            classification).
    """
    positions = max_positions(encoder)
    if spec.seq_length > positions:
        raise ValueError(
            f"seq_length {spec.seq_length} is longer than the model's {positions} positions "
            f"(max_position_embeddings); export with seq_length {positions} or less."
        )
    if len(spec.text_fields) == 2 and encoder.get_layer("embeddings").type_vocab_size < 2:
        raise ValueError(
            "text pairs give the second text segment id 1, but the model has 1 segment type "
            "(type_vocab_size): export it for single texts."
        )
    if spec.task_type in LABELED_TASKS:
        classes = model.output.shape[-1]
        if len(spec.labels) != classes:
            raise ValueError(
                f"{len(spec.labels)} labels {list(spec.labels)} for a model with {classes} outputs; "
                f"give one label name per output, in id order."
            )

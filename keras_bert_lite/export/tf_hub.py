"""Export an encoder as the pair of SavedModels TF Hub publishes for BERT: an encoder and its preprocessor.

    encoder_path, preprocess_path = export_tf_hub(encoder, vocab, "exports/bert")
    # exports/bert/encoder/1    like tfhub.dev/tensorflow/bert_en_uncased_L-12_H-768_A-12/4  (tf_hub_encoder.py)
    # exports/bert/preprocess/1 like tfhub.dev/tensorflow/bert_en_uncased_preprocess/3       (tf_hub_preprocessor.py)

Code written for TF Hub's pair runs on these with only the two handles changed (`hub.load`, `hub.KerasLayer`
under tf-keras, or `HubLayer` under Keras 3). Both get the same integer version, one above the newest of either,
so a matching pair shares a number; each version directory appears atomically and audited, as
`export_saved_model`'s do (both are staged and audited before either is renamed into place), and an existing
version is never overwritten.

The preprocessor's tokenizer defaults to the "portable" variant: core TensorFlow ops only, so loading it needs no
`import tensorflow_text` (TF Hub's preprocessors do). `variant="default"` uses tf_text's FastWordpiece op
instead (faster; audited for the TF Serving op set; loading needs tensorflow_text).
"""

from __future__ import annotations

import os
import shutil
import tempfile

import tensorflow as tf

from keras_bert_lite.export.audit import PORTABLE, TF_SERVING
from keras_bert_lite.export.exporter import check_version, prune_versions, stage_saved_model, versions
from keras_bert_lite.export.tf_hub_encoder import HubEncoder
from keras_bert_lite.export.tf_hub_preprocessor import HubPreprocessor
from keras_bert_lite.models.introspect import max_positions
from keras_bert_lite.text import Vocab

ENCODER_DIR = "encoder"
PREPROCESS_DIR = "preprocess"
VARIANT_TARGETS = {"portable": PORTABLE, "default": TF_SERVING}


def export_tf_hub(
    model,
    vocab: Vocab,
    model_base_path: str,
    *,
    seq_length: int = 128,
    lower_case: bool | None = None,
    variant: str = "portable",
    version: int | None = None,
    keep: int | None = None,
) -> tuple[str, str]:
    """Writes `<model_base_path>/encoder/<version>/` and `<model_base_path>/preprocess/<version>/`.

    Args:
        model: an encoder (`build_encoder`, `kbl.load`) or a task model; a task model's "encoder" layer is
            exported, without the head.
        vocab: the vocabulary the encoder was trained with.
        model_base_path: the directory both SavedModels go under.
        seq_length: the preprocessor's default length (`preprocess(text)`, `bert_pack_inputs` without
            `seq_length`); TF Hub's is 128. At most the encoder's max_position_embeddings.
        lower_case: True for an uncased vocabulary; default the vocabulary's own (a contradiction is refused).
        variant: the preprocessor's tokenizer ops, "portable" (core TensorFlow) or "default" (tf_text).
        version: the integer version (default: one above the newest of either directory).
        keep: if given, keep only this many newest versions in each directory.

    Returns:
        (encoder path, preprocessor path).

    Raises:
        ExportRefusedError: a SavedModel uses ops the variant's runtime lacks; nothing was written.
        FileExistsError: `version` exists in either directory.
        ValueError: no encoder in `model`, or a bad seq_length, variant or keep.
    """
    if variant not in VARIANT_TARGETS:
        raise ValueError(f"variant must be one of {tuple(VARIANT_TARGETS)}, got {variant!r}.")
    if keep is not None and keep < 1:
        raise ValueError(f"keep must be >= 1, got {keep}.")
    check_version(version)
    encoder = _encoder_of(model)
    positions = max_positions(encoder)
    if not 3 <= seq_length <= positions:
        raise ValueError(
            f"seq_length={seq_length}: it must be at least 3 ([CLS] and two [SEP]) and at most the "
            f"encoder's max_position_embeddings ({positions})."
        )
    lower_case = vocab.resolve_lower_case(lower_case)
    vocab = vocab.with_lower_case(lower_case)

    bases = [os.path.join(model_base_path, ENCODER_DIR), os.path.join(model_base_path, PREPROCESS_DIR)]
    newest = max((v for base in bases for v in versions(base)), default=0)
    version = version if version is not None else newest + 1
    finals = [os.path.join(base, str(version)) for base in bases]
    for final in finals:
        if os.path.exists(final):
            raise FileExistsError(
                f"{final} already exists; versions are never overwritten (omit --version to use {newest + 1})."
            )
    for base in bases:
        os.makedirs(base, exist_ok=True)

    target = VARIANT_TARGETS[variant]
    staged = []
    with tempfile.TemporaryDirectory() as scratch:
        vocab_path = os.path.join(scratch, "vocab.txt")  # copied into the encoder's assets/ by the save
        vocab.save(vocab_path)
        hub_encoder = HubEncoder(encoder, vocab_path, lower_case)
        preprocessor = HubPreprocessor(vocab, seq_length, lower_case=lower_case, variant=variant)
        try:
            for obj, base in ((hub_encoder, bases[0]), (preprocessor, bases[1])):
                staged.append(
                    stage_saved_model(
                        lambda tmp, obj=obj: tf.saved_model.save(obj, tmp, signatures=obj.signatures()),
                        base,
                        version,
                        target,
                    )
                )
            for tmp, final in zip(staged, finals):
                os.rename(tmp, final)
        finally:
            for tmp in staged:
                shutil.rmtree(tmp, ignore_errors=True)
    for base in bases:
        prune_versions(base, keep)
    return finals[0], finals[1]


def _encoder_of(model):
    """The encoder itself, or a task model's "encoder" layer."""
    if isinstance(getattr(model, "output", None), dict) and "sequence_output" in model.output:
        return model
    try:
        return model.get_layer("encoder")
    except ValueError:
        raise ValueError(
            f"{getattr(model, 'name', model)!r} is no encoder and has no layer named 'encoder'; "
            "pass the encoder (keras_bert_lite.load(path), or build_encoder)."
        ) from None

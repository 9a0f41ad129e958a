"""keras_bert_lite: BERT (Devlin et al., 2018) for TensorFlow and Keras 3.

    import keras_bert_lite as kbl
    encoder = kbl.load_encoder("path/to/hf_or_tf1_checkpoint_dir")
    model = kbl.build_classifier(encoder, num_classes=2)

Subpackages: `text` (vocab, tokenizer, packer), `data` (pretraining and task data), `models`, `training`
(optimizers, schedules, the training loop, strategies, callbacks, metrics), `export` (SavedModels for TF
Serving), `serving` (gRPC server and client), `runners` (the `kbl-*` commands); `artifacts` (run directories).

The names below load on first use, so that importing the package (as every `kbl-*` command does first) imports
TensorFlow only when it is needed. Where Keras is imported already, so is TensorFlow: then the package registers
its Keras classes at once (`saving`), and `keras.saving.load_model` reads our `.keras` files.
"""

import importlib
import sys

from keras_bert_lite import _cpu_kernels  # noqa: F401  (must run before TensorFlow is imported: see there)
from keras_bert_lite._version import __version__

_EXPORTS = {
    "BertConfig": "keras_bert_lite.config",
    "load_encoder": "keras_bert_lite.checkpoints", "load_pretrainer": "keras_bert_lite.checkpoints",
    "load_embedder": "keras_bert_lite.checkpoints", "load_masked_lm": "keras_bert_lite.checkpoints",
    "fill_mask": "keras_bert_lite.mask_filling", "MaskFill": "keras_bert_lite.mask_filling",
    "embed": "keras_bert_lite.text_embedding", "load_text_embedder": "keras_bert_lite.text_embedding",
    "TextEmbedder": "keras_bert_lite.models.text_embedder",
    "export_hf": "keras_bert_lite.export.hf", "load_model": "keras_bert_lite.saving",
    **{name: "keras_bert_lite.models" for name in (
        "BertPretrainer", "build_classifier", "build_embedder", "build_encoder", "build_multiple_choice",
        "build_pretrainer", "MultipleNegativesRankingLoss",
        "build_span_labeler", "build_token_classifier", "encoder_config", "inference_function")},
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS))


if "keras" in sys.modules:
    importlib.import_module("keras_bert_lite.saving")

"""keras_bert_lite: BERT (Devlin et al., 2018) for TensorFlow and Keras 3.

    import keras_bert_lite as kbl
    encoder = kbl.load("google-bert/bert-base-uncased")    # or a HF / TF1 / run directory, a .keras file
    model = kbl.build_classifier(encoder, num_classes=2)
    kbl.export_saved_model(model, kbl.TaskSpec("classification", lower_case=True, seq_length=128,
                                               labels=("neg", "pos")), vocab, "exports/sentiment")

`__all__` is the public API: `load` (every model file, one order: see there), the builders, the text pipeline
(`Vocab`, `BertTokenizer`, `BertPacker`), `TaskSpec` and the exports, `embed` and `fill_mask`, `minilm_dir`
(real weights offline: `pretrained`).

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

# The public API: what the README and the guides use, `__all__`.
_PUBLIC = {
    "load": "keras_bert_lite.checkpoints",
    "minilm_dir": "keras_bert_lite.pretrained",
    "BertConfig": "keras_bert_lite.config",
    **{name: "keras_bert_lite.text" for name in ("BertPacker", "BertTokenizer", "Vocab")},
    **{
        name: "keras_bert_lite.models"
        for name in (
            "build_classifier",
            "build_embedder",
            "build_encoder",
            "build_multiple_choice",
            "build_pretrainer",
            "build_span_labeler",
            "build_token_classifier",
            "inference_function",
        )
    },
    "TaskSpec": "keras_bert_lite.artifacts",
    "export_saved_model": "keras_bert_lite.export.exporter",
    "export_hf": "keras_bert_lite.export.hf",
    "embed": "keras_bert_lite.text_embedding",
    "load_text_embedder": "keras_bert_lite.text_embedding",
    "fill_mask": "keras_bert_lite.mask_filling",
}
# Also here, for code that uses them: the former loaders (each `load` with a part) and classes the above return.
_KEPT = {
    **{
        name: "keras_bert_lite.checkpoints"
        for name in ("load_encoder", "load_pretrainer", "load_embedder", "load_masked_lm")
    },
    "load_model": "keras_bert_lite.saving",
    "MaskFill": "keras_bert_lite.mask_filling",
    "TextEmbedder": "keras_bert_lite.models.text_embedder",
    **{name: "keras_bert_lite.models" for name in ("BertPretrainer", "MultipleNegativesRankingLoss", "encoder_config")},
}
_EXPORTS = {**_PUBLIC, **_KEPT}

__all__ = ["__version__", *_PUBLIC]


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

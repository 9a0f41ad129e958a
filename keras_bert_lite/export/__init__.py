"""Exporting models for serving, and checking what was exported.

`audit_saved_model(path, target)` lists every op of a SavedModel and checks it against a runtime ("portable":
core TensorFlow only; "tf-serving": core TensorFlow plus the TF.Text ops stock TF Serving links); the
exporter runs it before moving a temporary export into place. Command line:
`python -m keras_bert_lite.export.audit DIR [--target tf-serving|portable]`.

`export_tf_hub(encoder, vocab, dir)` writes the encoder + preprocessor SavedModel pair of TF Hub's BERT contract
(tf_hub.py); `HubLayer` loads such a SavedModel as a Keras 3 layer, as `hub.KerasLayer` does for tf-keras.
"""

import importlib

_MODULES = {"AuditReport": "audit", "audit_saved_model": "audit", "export_tf_hub": "tf_hub", "HubLayer": "tf_hub_layer"}
__all__ = list(_MODULES)


def __getattr__(name):
    # Lazy, so that `python -m keras_bert_lite.export.audit` does not import the module twice.
    if name in _MODULES:
        return getattr(importlib.import_module(f"keras_bert_lite.export.{_MODULES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

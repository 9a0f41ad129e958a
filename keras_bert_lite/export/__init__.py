"""Exporting models for serving, and checking what was exported.

`audit_saved_model(path, target)` lists every op of a SavedModel and checks it against a runtime ("portable":
core TensorFlow only; "tf-serving": core TensorFlow plus the TF.Text ops stock TF Serving links); the
exporter runs it before moving a temporary export into place. Command line:
`python -m keras_bert_lite.export.audit DIR [--target tf-serving|portable]`.
"""

__all__ = ["AuditReport", "audit_saved_model"]


def __getattr__(name):
    # Lazy, so that `python -m keras_bert_lite.export.audit` does not import the module twice.
    if name in __all__:
        from keras_bert_lite.export import audit
        return getattr(audit, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

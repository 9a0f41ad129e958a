"""The signature keys of a text-in export (`ServingModule`): every export's, and a task type's own."""

SIGNATURES = ("serving_default", "preprocess", "encode")  # every export's
TASK_SIGNATURES = {
    "classification": ("classify",),
    "embedding": ("embed",),  # and a task's own
    "fill_mask": ("fill_mask",),
    "multi_label": ("classify",),
}


def signature_keys(task_type: str) -> tuple[str, ...]:
    """The signature keys of an export for `task_type`."""
    return SIGNATURES + TASK_SIGNATURES.get(task_type, ())

"""Version labels ("stable" -> 2): which label assignments a config may make, by TF Serving's rule.

TF Serving (server_core.cc, UpdateModelVersionLabelMap) checks the labels of a new config against the versions
available *when the config is applied*, before it loads anything the config adds: a label must point to an
available version, so that moving "stable" to a version still loading never sends "stable" traffic nowhere.
With `--allow_version_labels_for_unavailable_models`, a label that is new (or keeps its version) may point to a
version not available yet; moving an existing label still needs an available version. One refused label refuses
the whole label map (the previous one stays). Hence TF Serving's two steps to move a label to a new version:
first a config that serves both versions, then one that moves the label.
"""

from keras_bert_lite.serving.errors import failed_precondition

ALLOW_FLAG = "--allow_version_labels_for_unavailable_models"


def assign_labels(configs, available, current, allow_unavailable=False):
    """The label map {model: {label: version}} that `configs` ask for.

    Args:
        configs: The `ModelConfig`s of the new config.
        available: {model name: set of available versions}, now.
        current: The label map in force.
        allow_unavailable: `--allow_version_labels_for_unavailable_models`.

    Raises:
        ServingError: FAILED_PRECONDITION (TF Serving's message) for a label the rule refuses.
    """
    labels = {}
    for config in configs:
        for label, version in config.labels:
            existing = current.get(config.name, {}).get(label)
            may_wait = allow_unavailable and existing in (None, version)
            if not may_wait and version not in available.get(config.name, ()):
                raise failed_precondition(_refusal(config.name, label, version, existing, allow_unavailable))
            labels.setdefault(config.name, {})[label] = version
    return labels


def _refusal(name, label, version, existing, allow_unavailable):
    message = (
        f"Request to assign label to version {version} of model {name}, which is not currently available for inference"
    )
    if existing is not None and allow_unavailable:
        return (
            f"{message} (label '{label}' points to version {existing}: a label in use moves only to an "
            f"available version; serve version {version} first, then move the label)"
        )
    return f"{message} (label '{label}': serve version {version} first, then add the label, or start with {ALLOW_FLAG})"

"""Our `.keras` files in plain Keras: every class they may hold, registered, and `load_model`.

Keras finds a custom class of a `.keras` file only once the module that defines it has been imported. The package
imports its modules on first use (`keras_bert_lite/__init__.py`), so importing this module is what registers
them: `load_model` does, and so does `import keras_bert_lite` in a process that has imported Keras already, after
which `keras.saving.load_model` reads our files too.
"""

import keras

from keras_bert_lite import artifacts
from keras_bert_lite import layers, models  # noqa: F401  (their classes register with Keras on import)
from keras_bert_lite.training import optimization, schedules  # noqa: F401  (the optimizers and schedule, too)


def load_model(path: str, **kwargs) -> keras.Model:
    """`keras.saving.load_model` of one of our `.keras` files or run directories.

    Args:
        path: a `.keras` file, or a run directory: a fine-tuning run's `model.keras`, else a pretraining run's
            `encoder.keras`, else its `pretrainer.keras`.
        **kwargs: `keras.saving.load_model`'s own (`compile`, `safe_mode`).

    Returns:
        The model as saved.

    Raises:
        FileNotFoundError: `path` is neither; the message names what was looked for.
    """
    return artifacts.load_keras_file(artifacts.existing_model_file(path), **kwargs)

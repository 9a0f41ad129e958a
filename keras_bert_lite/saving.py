"""Our `.keras` files in plain Keras: every class they may hold, registered, and `load_model`.

Keras finds a custom class of a `.keras` file only once the module that defines it has been imported. The package
imports its modules on first use (`keras_bert_lite/__init__.py`), so importing this module is what registers
them: `load_model` does, and so does `import keras_bert_lite` in a process that has imported Keras already, after
which `keras.saving.load_model` reads our files too.
"""

import keras

from keras_bert_lite import layers, models, training  # noqa: F401  (their classes register with Keras on import)
from keras_bert_lite.checkpoints import load


def load_model(path: str, **kwargs) -> keras.Model:
    """`kbl.load(path, "task", **kwargs)`: one of our `.keras` files or run directories, the model as saved."""
    return load(path, "task", **kwargs)

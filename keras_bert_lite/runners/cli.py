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


def import_tensorflow_quietly(tf_text: bool = True) -> None:
    """Imports TensorFlow (and tensorflow_text, when installed and `tf_text`) with their start-up lines dropped
    from stderr."""
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"       # later C++ INFO and WARNING lines
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            importlib.import_module("tensorflow")
            try:
                if tf_text:
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


def _run(module: str, tf_text: bool = True):
    if not _wants_everything(sys.argv[1:]):
        import_tensorflow_quietly(tf_text)
    return importlib.import_module(module).main(sys.argv[1:])


def vocab():
    _run("keras_bert_lite.runners.vocab")


def pretrain():
    _run("keras_bert_lite.runners.pretrain")


def glue():
    _run("keras_bert_lite.runners.glue")


def squad():
    _run("keras_bert_lite.runners.squad")


def ner():
    _run("keras_bert_lite.runners.ner")


def swag():
    _run("keras_bert_lite.runners.swag")


def export():
    _run("keras_bert_lite.runners.export")


def serve():
    # --no_tf_text serves without TF.Text's ops registered: tensorflow_text must stay unimported.
    sys.exit(_run("keras_bert_lite.serving.__main__", tf_text="--no_tf_text" not in sys.argv[1:]))


def client():
    sys.exit(_run("keras_bert_lite.serving.client_cli", tf_text=False))

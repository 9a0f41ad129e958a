"""The SavedModel op audit: core-only, classic TF.Text (TF Serving has it), new TF.Text ops and py_function."""

import os
import subprocess
import sys

import pytest
import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow.python.framework import op_def_registry

from keras_bert_lite.export import audit_saved_model
from keras_bert_lite.export.audit import TF_SERVING_TEXT_OPS, core_ops, main
from tests.serving.server_process import REPO_ROOT
from tests.serving.toy_models import ToyModel, save_module, tf_text_tokenizer_model

CLASSIC_TEXT_OPS = {"CaseFoldUTF8", "NormalizeUTF8", "RegexSplitWithOffsets", "WordpieceTokenizeWithOffsets"}


class PairTrimmer(tf.Module):
    """Trims two ragged segments with tf_text.RoundRobinTrimmer (the TFText>RoundRobinTrim op)."""

    def __init__(self):
        super().__init__()
        self.trimmer = tf_text.RoundRobinTrimmer(max_seq_length=8)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.string)])
    def serve(self, text, text_b):
        with tf.name_scope("pair_packer"):
            first, second = self.trimmer.trim([tf.strings.split(text), tf.strings.split(text_b)])
        return {"length": first.row_lengths() + second.row_lengths()}


class NumpyFunction(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def serve(self, x):
        return {"y": tf.numpy_function(lambda value: value * 2, [x], tf.float32)}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("audit")
    toy = ToyModel("v1")
    tokenizer, tokenizer_signatures = tf_text_tokenizer_model()
    trimmer, numpy_function = PairTrimmer(), NumpyFunction()
    return {
        "core": save_module(toy, str(root / "core"), toy.signatures()),
        "bert_tokenizer": save_module(tokenizer, str(root / "bert_tokenizer"), tokenizer_signatures),
        "round_robin": save_module(trimmer, str(root / "round_robin"), {"serving_default": trimmer.serve}),
        "numpy_function": save_module(
            numpy_function, str(root / "numpy_function"), {"serving_default": numpy_function.serve}
        ),
    }


@pytest.mark.parametrize("target", ["portable", "tf-serving"])
def test_core_only_model_passes_both_targets(models, target):
    report = audit_saved_model(models["core"], target)
    assert report.ok and report.offending == {}
    assert {"UnicodeDecode", "ParseExampleV2", "While", "Softmax"} <= set(report.ops)
    assert {"UnicodeDecode", "Softmax"} <= set(report.signatures["serving_default"])
    assert "ParseExampleV2" in report.signatures["classify"]
    assert "While" in report.signatures["slow"] and "While" not in report.signatures["serving_default"]


def test_bert_tokenizer_fails_portable_and_passes_tf_serving(models):
    portable = audit_saved_model(models["bert_tokenizer"], "portable")
    assert not portable.ok
    assert set(portable.offending) == CLASSIC_TEXT_OPS
    assert CLASSIC_TEXT_OPS <= set(portable.signatures["serving_default"])
    assert all(place.startswith("serving_default > ") for places in portable.offending.values() for place in places)
    assert "[NOT ALLOWED]" in portable.format() and "FAIL" in portable.format()

    serving = audit_saved_model(models["bert_tokenizer"], "tf-serving")
    assert serving.ok, serving.format()
    assert CLASSIC_TEXT_OPS <= set(serving.ops)


def test_round_robin_trimmer_fails_tf_serving_and_says_where(models):
    report = audit_saved_model(models["round_robin"], "tf-serving")
    assert not report.ok
    assert list(report.offending) == ["TFText>RoundRobinTrim"]
    [place] = report.offending["TFText>RoundRobinTrim"]
    assert place.startswith("serving_default > __inference_signature_wrapper_serve_")
    assert "__inference_serve_" in place  # the tf.function (a Keras layer's call shows its name here)
    assert "node 'pair_packer/RoundRobinTrimmer/trim/" in place  # the name scope path of the layer
    text = report.format()
    assert "TFText>RoundRobinTrim [NOT ALLOWED]" in text and "tensorflow/serving#2267" in text


@pytest.mark.parametrize("target", ["portable", "tf-serving"])
def test_python_functions_fail_every_target(models, target):
    report = audit_saved_model(models["numpy_function"], target)
    assert list(report.offending) == ["PyFunc"]


def test_core_ops_ignore_the_tf_text_ops_this_process_registered():
    assert op_def_registry.get("CaseFoldUTF8") is not None  # this process did register the TF.Text ops
    core = core_ops()
    assert {"MatMul", "StatefulPartitionedCall", "UnicodeDecode"} <= core
    assert not core & TF_SERVING_TEXT_OPS
    assert "TFText>RoundRobinTrim" not in core


def test_command_line_exit_codes(models, capsys):
    assert main([models["bert_tokenizer"]]) == 0
    assert "target tf-serving: PASS" in capsys.readouterr().out
    assert main([models["bert_tokenizer"], "--target", "portable"]) == 1
    assert "not available on portable:" in capsys.readouterr().out
    assert main([models["core"] + "/missing"]) == 2
    assert "is not a SavedModel directory" in capsys.readouterr().err


def test_module_entry_point(models):
    result = subprocess.run(
        [sys.executable, "-m", "keras_bert_lite.export.audit", models["round_robin"]],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    assert result.returncode == 1, result.stderr
    assert "TFText>RoundRobinTrim" in result.stdout
    assert "RuntimeWarning" not in result.stderr

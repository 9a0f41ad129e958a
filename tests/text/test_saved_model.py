"""Export: a SavedModel with tokenizer + packer runs where tensorflow_text is never imported (portable variant);
the default variant's graph uses only ops stock TF Serving links."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.text import BertPacker

TEXTS = ["Hello, world!", "", "Ünïcödé ΟΔΟΣ 中文 \x01 tab\there", "b" * 120]
# tf_text ops linked by stock TF Serving (FastBertNormalize only from 2.12; we do not use it).
SERVING_TF_TEXT_OPS = {
    "CaseFoldUTF8",
    "NormalizeUTF8",
    "RegexSplitWithOffsets",
    "WordpieceTokenizeWithOffsets",
    "FastWordpieceTokenizeWithOffsets",
    "FastBertNormalize",
}

LOAD_AND_CHECK = r"""
import json, sys
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2
from tensorflow.python.framework import op_def_registry

def op_types(path):
    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString(open(path + "/saved_model.pb", "rb").read())
    graph = proto.meta_graphs[0].graph_def
    nodes = list(graph.node) + [n for f in graph.library.function for n in f.node_def]
    return sorted({n.op for n in nodes})

portable, default = sys.argv[1], sys.argv[2]
outputs = tf.saved_model.load(portable).signatures["preprocess"](text=tf.constant(json.loads(sys.argv[3])))
print(json.dumps({
    "outputs": {k: v.numpy().tolist() for k, v in outputs.items()},
    "tensorflow_text_imported": "tensorflow_text" in sys.modules,
    "non_core_ops": {name: [op for op in op_types(path) if op_def_registry.get(op) is None]
                     for name, path in (("portable", portable), ("default", default))},
}))
"""


class Preprocess(tf.Module):
    def __init__(self, tokenizer, packer):
        super().__init__()
        self.tokenizer = tokenizer
        self.packer = packer

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def preprocess(self, text):
        return self.packer(self.tokenizer.tokenize(text))


def _save(tokenizer, path):
    module = Preprocess(tokenizer, BertPacker(16, tokenizer.vocab))
    tf.saved_model.save(module, path, signatures={"preprocess": module.preprocess})
    return module


@pytest.mark.slow
def test_saved_model_runs_without_tensorflow_text(tmp_path, uncased_vocab, tokenizers):
    portable = _save(tokenizers["portable", "uncased"], str(tmp_path / "portable"))
    _save(tokenizers["default", "uncased"], str(tmp_path / "default"))
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            LOAD_AND_CHECK,
            str(tmp_path / "portable"),
            str(tmp_path / "default"),
            json.dumps(TEXTS),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert not report["tensorflow_text_imported"]
    assert report["non_core_ops"]["portable"] == []
    assert set(report["non_core_ops"]["default"]) <= SERVING_TF_TEXT_OPS, report["non_core_ops"]["default"]
    expected = portable.preprocess(tf.constant(TEXTS))
    for key, value in expected.items():
        np.testing.assert_array_equal(report["outputs"][key], value.numpy(), err_msg=key)
    assert report["outputs"]["input_word_ids"][1][:3] == [uncased_vocab.cls_id, uncased_vocab.sep_id, 0]

"""Tiny SavedModels for the serving and audit tests, written the way our exporter writes them.

`ToyModel` uses core TensorFlow string ops only. Its signatures:

- serving_default: text tf.string [batch] -> length (int64), logits/probabilities (float32 [batch, 2]),
  label (string), tag (string: the version's tag, so tests can tell versions apart). Invalid UTF-8 fails
  inside the graph (strict decode).
- pair: text, text_b -> length, length_b.
- classify: TF Serving's classification convention - inputs (serialized tf.Example with a bytes feature
  "text") -> classes (string [batch, 2]), scores (float32 [batch, 2]).
- stats: text -> count (a scalar, so not batchable) and length.
- ids: ids (int32 [batch, None]) -> total (the sum of each row) and ids (echoed), for numeric inputs.
- slow: text -> length, after busy-waiting float(text[0]) seconds inside the graph; with a second text, first
  writes a file at that path (so a test knows the request is inside the model).
"""

import os
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow.python.data.experimental.ops import testing as tf_data_testing  # its sleep: a nap in a graph

LABELS = ("short", "long")


class ToyModel(tf.Module):
    def __init__(self, tag):
        super().__init__()
        self.tag = tf.Variable(tag)
        self.scale = tf.Variable(0.25)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def serve(self, text):
        length = tf.strings.unicode_decode(text, "UTF-8", errors="strict").row_lengths()
        x = tf.cast(length, tf.float32) * self.scale - 2.0
        logits = tf.stack([-x, x], axis=1)
        return {
            "length": length,
            "logits": logits,
            "probabilities": tf.nn.softmax(logits),
            "label": tf.gather(tf.constant(LABELS), tf.argmax(logits, axis=1)),
            "tag": tf.fill(tf.shape(text), self.tag.read_value()),
        }

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.string)])
    def pair(self, text, text_b):
        return {"length": tf.strings.length(text), "length_b": tf.strings.length(text_b)}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def classify(self, inputs):
        features = tf.io.parse_example(inputs, {"text": tf.io.FixedLenFeature([], tf.string)})
        scores = self.serve(features["text"])["probabilities"]
        return {"classes": tf.tile(tf.constant([LABELS]), [tf.shape(inputs)[0], 1]), "scores": scores}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def stats(self, text):
        return {"count": tf.size(text), "length": tf.strings.length(text)}

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)])
    def ids(self, ids):
        return {"total": tf.reduce_sum(ids, axis=1), "ids": tf.identity(ids)}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def slow(self, text):
        seconds = tf.strings.to_number(text[0], tf.float64)

        def mark():
            with tf.control_dependencies([tf.io.write_file(text[-1], "running")]):
                return tf.constant(True)

        marked = tf.cond(tf.size(text) > 1, mark, lambda: tf.constant(False))
        with tf.control_dependencies([marked]):
            start = tf.timestamp()
        (waited,) = tf.while_loop(lambda t: t - start < seconds, lambda t: [tf.timestamp()], [start])
        with tf.control_dependencies([waited]):
            return {"length": tf.strings.length(text)}

    def signatures(self):
        return {
            "serving_default": self.serve,
            "pair": self.pair,
            "classify": self.classify,
            "stats": self.stats,
            "ids": self.ids,
            "slow": self.slow,
        }


def tf_text_tokenizer_model():
    """(module, signatures) of a model whose serving_default runs tf_text.BertTokenizer (TF.Text ops)."""
    import tensorflow_text as tf_text

    class Tokenizer(tf.Module):
        def __init__(self):
            super().__init__()
            vocab = ["[UNK]", "the", "great", "movie", "##s"]
            initializer = tf.lookup.KeyValueTensorInitializer(vocab, tf.range(len(vocab), dtype=tf.int64))
            self.table = tf.lookup.StaticVocabularyTable(initializer, num_oov_buckets=1)
            self.tokenizer = tf_text.BertTokenizer(self.table, lower_case=True)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def serve(self, text):
            return {"num_tokens": self.tokenizer.tokenize(text).merge_dims(1, 2).row_lengths()}

    module = Tokenizer()
    return module, {"serving_default": module.serve}


def reference_outputs(texts):
    """What serving_default must return, computed with NumPy (independently of TensorFlow)."""
    length = np.array([len(text) for text in texts], np.int64)
    x = length.astype(np.float32) * 0.25 - 2.0
    logits = np.stack([-x, x], axis=1)
    return {"length": length, "logits": logits, "label": [LABELS[int(v > 0)] for v in x]}


def save_module(module, path, signatures):
    tf.saved_model.save(module, path, signatures=signatures)
    return path


def export_version(module, base_path, version, signatures=None):
    """Writes `module` to a hidden temp dir in `base_path`, then renames it to `base_path/<version>`."""
    os.makedirs(base_path, exist_ok=True)
    temp = tempfile.mkdtemp(prefix=".tmp-export-", dir=base_path)
    save_module(module, temp, signatures or module.signatures())
    final = os.path.join(base_path, str(version))
    os.rename(temp, final)
    return final


class GateModel(tf.Module):
    """A model whose requests wait inside TensorFlow until a test lets them go.

    gate: text [marker path, release path] -> length: writes the marker (the request is inside the model), then
    naps 20 ms at a time (a tf.data sleep, using no CPU) until a file exists at the release path.
    """

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def gate(self, text):
        with tf.control_dependencies([tf.io.write_file(text[0], "inside")]):
            naps = tf.constant(0)

        def closed(naps):
            return tf.size(tf.io.matching_files(text[1])) == 0

        def nap(naps):
            slept = tf.data.Dataset.from_tensors(naps).apply(tf_data_testing.sleep(20_000))
            return [slept.reduce(naps, lambda _, value: value) + 1]

        (naps,) = tf.while_loop(closed, nap, [naps])
        with tf.control_dependencies([naps]):
            return {"length": tf.strings.length(text)}

    def signatures(self):
        return {"serving_default": self.gate}


def slow_loading_model(functions=40, ops=20):
    """(module, signatures) whose `tf.saved_model.load` takes long, mostly inside TensorFlow: many functions to
    restore."""
    module = tf.Module()
    module.scale = tf.Variable(1)

    def chain(text):
        x = tf.strings.length(text)
        for step in range(ops):
            x = x + step * module.scale
        return {"length": x}

    spec = [tf.TensorSpec([None], tf.string)]
    return module, {
        f"chain_{i}": tf.function(chain, input_signature=spec).get_concrete_function() for i in range(functions)
    }

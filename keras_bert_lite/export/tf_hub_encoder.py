"""`HubEncoder`: a Keras encoder as TF Hub's BERT encoder SavedModel (`bert_en_uncased_L-12_H-768_A-12/4`).

What TF Hub's encoders provide (tensorflow/models `official/nlp/tools/export_tfhub_lib.py` `export_model`, which
saves a tf.keras model; TF Hub's "Common SavedModel APIs for Text", Transformer encoders), and this object does:

* `__call__(inputs, training=False)`: `inputs` a dict of int32 `[batch, seq]` `input_word_ids`, `input_mask`,
  `input_type_ids` -> dict: `pooled_output` `[batch, H]`, `default` (= pooled_output), `sequence_output`
  `[batch, seq, H]` and `encoder_outputs`, a list of L `[batch, seq, H]` tensors, all float32.
  `training=True` runs dropout (hub.KerasLayer passes it).
* `variables`, `trainable_variables`, `regularization_losses` (empty): the Reusable SavedModel API, so
  `hub.KerasLayer(path, trainable=True)` and `HubLayer` fine-tune it.
* `vocab_file` (an asset) and `do_lower_case` (a bool variable, in `variables`), which TF Hub's encoders keep
  for code that tokenizes outside TensorFlow.
* `serving_default` signature: the three inputs -> the outputs under the names tf.keras gave TF Hub's, the
  output layer's name with a counter over the outputs in sorted-key order: `bert_encoder` (default),
  `bert_encoder_1` .. `bert_encoder_L` (encoder_outputs), `bert_encoder_{L+1}` (pooled_output),
  `bert_encoder_{L+2}` (sequence_output). (That is tf_keras `saving_utils.trace_model_call` naming outputs by
  `model.output_names`; a published dump of the L-12 model's signature shows exactly these 15 names.) It checks
  a request's ids first (`input_checks`); `__call__`, which training runs, does not.
"""

from __future__ import annotations

import tensorflow as tf

from keras_bert_lite.export.input_checks import checked_encoder_inputs
from keras_bert_lite.models.encoder import INPUT_NAMES

SERVING_OUTPUT_LAYER = "bert_encoder"


def serving_output_names(num_layers: int) -> list[str]:
    """TF Hub's serving_default output names, in the order of the flattened outputs (default,
    encoder_outputs[0..L-1], pooled_output, sequence_output)."""
    return [SERVING_OUTPUT_LAYER] + [f"{SERVING_OUTPUT_LAYER}_{i}" for i in range(1, num_layers + 3)]


class HubEncoder(tf.train.Checkpoint):
    """The root object of a TF Hub encoder SavedModel; save it with `tf.saved_model.save(obj, dir,
    signatures=obj.signatures())`.

    Args:
        encoder: the Keras encoder (`build_encoder` or a task model's "encoder" layer).
        vocab_path: the vocabulary file saved as the `vocab_file` asset.
        lower_case: stored as `do_lower_case`.
    """

    def __init__(self, encoder, vocab_path: str, lower_case: bool):
        super().__init__()
        self.encoder = encoder
        self.num_layers = len(encoder.output["encoder_outputs"])
        self.vocab_file = tf.saved_model.Asset(vocab_path)
        self.do_lower_case = tf.Variable(lower_case, trainable=False, name="do_lower_case")
        # The Keras variables' tf.Variables: what the restored functions read and hub.KerasLayer trains.
        self.trainable_variables = [v.value for v in encoder.trainable_variables]
        trainable = {id(v) for v in self.trainable_variables}
        self.variables = (
            self.trainable_variables
            + [v.value for v in encoder.variables if id(v.value) not in trainable]
            + [self.do_lower_case]
        )
        self.regularization_losses = []

        spec = {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES}
        self.__call__ = tf.function(self._call, autograph=False)  # graph code: no source rewrite
        for training in (False, True):
            self.__call__.get_concrete_function(spec, training=training)
        self._serve = tf.function(
            self._serving_default,
            input_signature=[tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES],
            autograph=False,
        )

    def _call(self, inputs, training=False):
        out = self.encoder({name: inputs[name] for name in INPUT_NAMES}, training=training)
        pooled = tf.cast(out["pooled_output"], tf.float32)
        return {
            "pooled_output": pooled,
            "default": pooled,
            "sequence_output": tf.cast(out["sequence_output"], tf.float32),
            "encoder_outputs": [tf.cast(x, tf.float32) for x in out["encoder_outputs"]],
        }

    def _serving_default(self, input_word_ids, input_mask, input_type_ids):
        out = self._call(checked_encoder_inputs(self.encoder, input_word_ids, input_mask, input_type_ids))
        flat = [out["default"], *out["encoder_outputs"], out["pooled_output"], out["sequence_output"]]
        return dict(zip(serving_output_names(self.num_layers), flat))

    def signatures(self) -> dict:
        return {"serving_default": self._serve.get_concrete_function()}

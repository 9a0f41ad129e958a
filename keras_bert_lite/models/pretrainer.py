"""BertPretrainer: the encoder plus the masked-LM and next-sentence heads of the paper's pretraining."""

import keras
import tensorflow as tf
from keras import ops

from keras_bert_lite.config import BertConfig
from keras_bert_lite.layers import LogitsHead, MaskedLMHead
from keras_bert_lite.models.encoder import INPUT_NAMES, build_encoder, encoder_inputs
from keras_bert_lite.models.introspect import encoder_config
from keras_bert_lite.models.masked_lm_loss import masked_lm_cross_entropy


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertPretrainer(keras.Model):
    """Encoder + MLM head (tied to the word embeddings) + NSP head, as a functional model.

    A `keras.Model` subclass so that the MLM head's weight tying survives a `.keras` round trip (its config
    is the encoder, and the graph is rebuilt around it on load), and so that `call` can run the last block at
    the positions the heads read only (see `call`); the functional graph defines the layers and weights.

    Inputs (dict, int32): `input_word_ids`, `input_mask`, `input_type_ids` `[b, s]` and
    `masked_lm_positions` `[b, P]`.
    Outputs (dict, float32): `mlm_logits` `[b, P, V]` and `nsp_logits` `[b, 2]`.
    Labels for `fit`/`evaluate` (dict): `masked_lm_ids` `[b, P]`, `masked_lm_weights` `[b, P]` (1 for real
    predictions, 0 for padding) and `next_sentence_labels` `[b]` (0 = IsNext, 1 = NotNext, as the original).

    Loss = MLM cross-entropy averaged over real predictions + NSP cross-entropy averaged over the batch, both
    normalised by *global* counts (all replicas), so 1 and N replicas with the same global batch compute the
    same loss and gradients. Metrics: `mlm_loss`, `nsp_loss`, `mlm_accuracy`, `nsp_accuracy`.

    Args:
        encoder: a model from `build_encoder`; shared, not copied.
    """

    def __init__(self, encoder, **kwargs):
        config = encoder_config(encoder)
        inputs = encoder_inputs()
        inputs["masked_lm_positions"] = keras.Input(shape=(None,), dtype="int32", name="masked_lm_positions")
        outputs = encoder({name: inputs[name] for name in INPUT_NAMES})

        # ---- Masked LM, computed at masked_lm_positions only, output projection tied to the word table.
        mlm_logits = MaskedLMHead(
            config.vocab_size,
            config.hidden_size,
            hidden_act=config.hidden_act,
            layer_norm_eps=config.layer_norm_eps,
            initializer_range=config.initializer_range,
            name="masked_lm",
        )(outputs["sequence_output"], inputs["masked_lm_positions"], encoder.get_layer("embeddings").word_embeddings)

        # ---- Next sentence: 2-way on the pooled [CLS] vector (no dropout, as in the original).
        nsp_logits = LogitsHead(
            2, config.hidden_size, dropout=0.0, initializer_range=config.initializer_range, name="next_sentence"
        )(outputs["pooled_output"])

        super().__init__(inputs=inputs, outputs={"mlm_logits": mlm_logits, "nsp_logits": nsp_logits}, **kwargs)
        self.encoder = encoder
        self.num_layers = config.num_layers
        self.mlm_loss_metric = keras.metrics.Mean(name="mlm_loss")
        self.nsp_loss_metric = keras.metrics.Mean(name="nsp_loss")
        self.mlm_accuracy = keras.metrics.Mean(name="mlm_accuracy")  # weighted mean of the hits
        self.nsp_accuracy = keras.metrics.SparseCategoricalAccuracy(name="nsp_accuracy")

    def call(self, inputs, training=None, mask=None):
        """The graph above, with the last block computed only where the heads read it.

        The heads read the last block's output at [CLS] (NSP, through the pooler) and at the P masked
        positions, so that block runs at those 1 + P positions (`output_positions`; its attention still reads
        all s): the same outputs and gradients, without the last block's FFN, attention output and query
        projection at the other s - 1 - P positions (at s = 128, P = 20: ~70% of that block's work).
        """
        inputs = {name: ops.cast(inputs[name], "int32") for name in (*INPUT_NAMES, "masked_lm_positions")}
        input_mask, positions = inputs["input_mask"], inputs["masked_lm_positions"]
        x = self.encoder.get_layer("embeddings")(
            inputs["input_word_ids"], inputs["input_type_ids"], training=training
        )  # [b, s, H]
        for i in range(self.num_layers - 1):
            x = self.encoder.get_layer(f"layer_{i}")(x, input_mask, training=training)  # [b, s, H]
        cls_and_masked = ops.concatenate([ops.zeros((ops.shape(positions)[0], 1), "int32"), positions], axis=1)
        x = self.encoder.get_layer(f"layer_{self.num_layers - 1}")(
            x, input_mask, output_positions=cls_and_masked, training=training
        )  # [b, 1 + P, H]
        mlm_logits = self.get_layer("masked_lm")(
            x[:, 1:], None, self.encoder.get_layer("embeddings").word_embeddings
        )  # [b, P, V]
        nsp_logits = self.get_layer("next_sentence")(self.encoder.get_layer("pooler")(x))  # [b, 2]
        return {"mlm_logits": mlm_logits, "nsp_logits": nsp_logits}

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """This replica's share of the global pretraining loss (shares sum to the loss over all replicas)."""
        weights = ops.cast(y["masked_lm_weights"], "float32")  # [b, P]
        mlm_ce, mlm_hits = masked_lm_cross_entropy(y["masked_lm_ids"], y_pred["mlm_logits"])  # [b, P] each
        nsp_ce = keras.losses.sparse_categorical_crossentropy(
            y["next_sentence_labels"], y_pred["nsp_logits"], from_logits=True
        )  # [b]
        total_weight = _sum_over_replicas(ops.sum(weights))
        batch = _sum_over_replicas(ops.cast(ops.shape(nsp_ce)[0], "float32"))
        mlm_loss = ops.sum(mlm_ce * weights) / (total_weight + 1e-5)
        nsp_loss = ops.sum(nsp_ce) / batch
        num_replicas = tf.distribute.get_strategy().num_replicas_in_sync
        self.mlm_loss_metric.update_state(mlm_loss * num_replicas)
        self.nsp_loss_metric.update_state(nsp_loss * num_replicas)
        self.mlm_accuracy.update_state(mlm_hits, sample_weight=weights)
        self.nsp_accuracy.update_state(y["next_sentence_labels"], y_pred["nsp_logits"])
        return mlm_loss + nsp_loss

    def get_config(self):
        return {
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "name": self.name,
            "trainable": self.trainable,
        }

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        encoder = keras.saving.deserialize_keras_object(config.pop("encoder"), custom_objects=custom_objects)
        return cls(encoder, **config)


def _sum_over_replicas(value):
    """Sums a per-replica scalar over all replicas (identity outside tf.distribute)."""
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return value
    return context.all_reduce(tf.distribute.ReduceOp.SUM, value)


def build_pretrainer(config_or_encoder: BertConfig | keras.Model, name: str = "pretrainer") -> BertPretrainer:
    """Builds a BertPretrainer around a new encoder (from a BertConfig) or an existing one (shared)."""
    encoder = build_encoder(config_or_encoder) if isinstance(config_or_encoder, BertConfig) else config_or_encoder
    return BertPretrainer(encoder, name=name)

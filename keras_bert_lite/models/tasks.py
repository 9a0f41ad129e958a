"""Fine-tuning models of the paper (Fig. 4): one output layer on a shared encoder.

Each builder takes a BertConfig (a new encoder) or an existing encoder model (shared, so pretrained weights
move into the task model), and returns a functional `keras.Model` whose inputs are the three encoder inputs
and whose outputs are float32 logits. The encoder is the nested layer named "encoder". The dropout before an
output layer defaults to the encoder's `hidden_dropout` (0.1 in every preset and released BERT, as the original's
classifier dropout; Hugging Face's default too).
"""

import keras

from keras_bert_lite.config import BertConfig
from keras_bert_lite.layers import FoldChoices, LogitsHead, MultipleChoiceHead, SpanHead
from keras_bert_lite.models.encoder import INPUT_NAMES, encoder_inputs
from keras_bert_lite.models.introspect import encoder_and_config


def _dropout(dropout: float | None, config: BertConfig) -> float:
    return config.hidden_dropout if dropout is None else dropout


def build_classifier(
    config_or_encoder, num_classes: int, dropout: float | None = None, name: str = "classifier"
) -> keras.Model:
    """Sequence (pair) classification on the pooled [CLS] vector: logits `[b, num_classes]`.

    `num_classes=1` makes a regression model (STS-B): its single output is the score.
    """
    if num_classes < 1:
        raise ValueError(f"num_classes must be >= 1 (1 = regression), got {num_classes}.")
    return _logits_on("pooled_output", config_or_encoder, num_classes, dropout, name)


def build_token_classifier(
    config_or_encoder, num_classes: int, dropout: float | None = None, name: str = "token_classifier"
) -> keras.Model:
    """Per-token classification (NER): logits `[b, s, num_classes]`."""
    return _logits_on("sequence_output", config_or_encoder, num_classes, dropout, name)


def _logits_on(output: str, config_or_encoder, num_classes: int, dropout: float | None, name: str) -> keras.Model:
    """The encoder with a `LogitsHead` (dropout, then one dense layer) on its `output`."""
    encoder, config = encoder_and_config(config_or_encoder)
    inputs = encoder_inputs()
    head = LogitsHead(
        num_classes,
        config.hidden_size,
        dropout=_dropout(dropout, config),
        initializer_range=config.initializer_range,
        name="logits",
    )
    return keras.Model(inputs, head(encoder(inputs)[output]), name=name)


def build_span_labeler(config_or_encoder, name: str = "span_labeler") -> keras.Model:
    """SQuAD answer spans: dict of `start_logits` and `end_logits`, each `[b, s]` (padding masked out)."""
    encoder, config = encoder_and_config(config_or_encoder)
    inputs = encoder_inputs()
    sequence = encoder(inputs)["sequence_output"]
    start, end = SpanHead(config.hidden_size, initializer_range=config.initializer_range, name="span")(
        sequence, inputs["input_mask"]
    )
    return keras.Model(inputs, {"start_logits": start, "end_logits": end}, name=name)


def build_multiple_choice(
    config_or_encoder, num_choices: int, dropout: float | None = None, name: str = "multiple_choice"
) -> keras.Model:
    """SWAG-style multiple choice. Inputs are `[b, num_choices, s]`; output logits `[b, num_choices]`."""
    encoder, config = encoder_and_config(config_or_encoder)
    inputs = encoder_inputs(prefix_shape=(num_choices,))
    fold = FoldChoices(name="fold_choices")
    pooled = encoder({key: fold(inputs[key]) for key in INPUT_NAMES})["pooled_output"]  # [b * C, H]
    logits = MultipleChoiceHead(
        num_choices,
        config.hidden_size,
        dropout=_dropout(dropout, config),
        initializer_range=config.initializer_range,
        name="choice_logits",
    )(pooled)
    return keras.Model(inputs, logits, name=name)

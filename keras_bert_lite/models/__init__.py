"""Functional model builders: the encoder, the pretrainer and the fine-tuning models."""

from keras_bert_lite.models.embedder import build_embedder
from keras_bert_lite.models.encoder import INPUT_NAMES, build_encoder
from keras_bert_lite.models.inference import inference_function
from keras_bert_lite.models.introspect import encoder_config
from keras_bert_lite.models.pretrainer import BertPretrainer, build_pretrainer
from keras_bert_lite.models.ranking_loss import MultipleNegativesRankingLoss
from keras_bert_lite.models.tasks import (
    build_classifier,
    build_multiple_choice,
    build_span_labeler,
    build_token_classifier,
)

__all__ = [
    "INPUT_NAMES",
    "build_encoder",
    "encoder_config",
    "BertPretrainer",
    "build_pretrainer",
    "build_classifier",
    "build_token_classifier",
    "build_span_labeler",
    "build_multiple_choice",
    "build_embedder",
    "inference_function",
    "MultipleNegativesRankingLoss",
]

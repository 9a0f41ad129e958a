"""Training utilities: the optimizers and learning-rate schedule of the BERT recipe."""

from keras_bert_lite.training.bert_adamw import BertAdamW
from keras_bert_lite.training.bert_lamb import BertLamb
from keras_bert_lite.training.bert_optimizer import DEFAULT_WEIGHT_DECAY_EXCLUSIONS
from keras_bert_lite.training.optimization import create_optimizer
from keras_bert_lite.training.schedules import WarmupLinearDecay

__all__ = ["BertAdamW", "BertLamb", "WarmupLinearDecay", "create_optimizer", "DEFAULT_WEIGHT_DECAY_EXCLUSIONS"]

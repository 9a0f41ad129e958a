"""Pure Keras layers of BERT; each is serializable and its get_config() holds exactly its constructor args."""

from keras_bert_lite.layers.attention import MultiHeadSelfAttention
from keras_bert_lite.layers.dropout import Dropout
from keras_bert_lite.layers.embeddings import BertEmbeddings
from keras_bert_lite.layers.encoder_block import TransformerEncoderBlock
from keras_bert_lite.layers.layer_norm import LayerNorm
from keras_bert_lite.layers.pooling import POOLING_MODES, SentencePooling
from keras_bert_lite.layers.heads import (BertPooler, FoldChoices, LogitsHead, MaskedLMHead, MultipleChoiceHead,
                                          SpanHead)

__all__ = ["BertEmbeddings", "MultiHeadSelfAttention", "TransformerEncoderBlock", "LayerNorm", "Dropout", "BertPooler",
           "MaskedLMHead", "LogitsHead", "SpanHead", "MultipleChoiceHead", "FoldChoices", "POOLING_MODES",
           "SentencePooling"]

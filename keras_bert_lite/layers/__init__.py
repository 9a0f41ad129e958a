"""Pure Keras layers of BERT; each is serializable and its get_config() holds exactly its constructor args."""

from keras_bert_lite.layers import former_names  # noqa: F401  (registers the former classes: see there)
from keras_bert_lite.layers.attention import MultiHeadSelfAttention
from keras_bert_lite.layers.dropout import Uint16MaskDropout
from keras_bert_lite.layers.embeddings import BertEmbeddings
from keras_bert_lite.layers.encoder_block import TransformerEncoderBlock
from keras_bert_lite.layers.heads import BertPooler, FoldChoices, LogitsHead, MaskedLMHead, MultipleChoiceHead, SpanHead
from keras_bert_lite.layers.layer_norm import FusedLayerNorm
from keras_bert_lite.layers.pooling import POOLING_MODES, SentencePooling
from keras_bert_lite.utils.deprecation import renamed_attributes

__all__ = [
    "BertEmbeddings",
    "MultiHeadSelfAttention",
    "TransformerEncoderBlock",
    "FusedLayerNorm",
    "Uint16MaskDropout",
    "BertPooler",
    "MaskedLMHead",
    "LogitsHead",
    "SpanHead",
    "MultipleChoiceHead",
    "FoldChoices",
    "POOLING_MODES",
    "SentencePooling",
]

# Former names (they shadowed keras.layers.Dropout and read as Keras' layer norm), for one release.
__getattr__ = renamed_attributes(__name__, {"Dropout": "Uint16MaskDropout", "LayerNorm": "FusedLayerNorm"})

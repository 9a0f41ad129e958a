"""tf.data input pipelines: dynamic masking, pretraining instances, task readers."""

from keras_bert_lite.data.masking import DynamicMasker

__all__ = ["DynamicMasker"]

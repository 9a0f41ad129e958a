"""Deprecated: renamed `keras_bert_lite.export.tf_hub_preprocessor` (TF Hub).

This alias goes in the next release.
"""

from keras_bert_lite.utils.deprecation import alias_module

alias_module(__name__, "keras_bert_lite.export.tf_hub_preprocessor")

"""Deprecated: renamed `keras_bert_lite.data.text_files` (files read as UTF-8 text).

This alias goes in the next release.
"""

from keras_bert_lite.utils.deprecation import alias_module

alias_module(__name__, "keras_bert_lite.data.text_files")

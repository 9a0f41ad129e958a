"""The most probable tokens for each [MASK] in texts: the same as `kbl-fill-mask` (keras_bert_lite/runners/
fill_mask.py); see --help."""

from keras_bert_lite.runners import cli

if __name__ == "__main__":
    cli.fill_mask()

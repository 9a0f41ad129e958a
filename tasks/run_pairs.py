"""Train a text embedder on (anchor, positive) pairs: the same as `kbl-pairs` (keras_bert_lite/runners/pairs.py);
see --help."""

from keras_bert_lite.runners import cli

if __name__ == "__main__":
    cli.pairs()

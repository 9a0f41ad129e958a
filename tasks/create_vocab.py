"""Train a WordPiece vocab.txt: the same as `kbl-vocab` (keras_bert_lite/runners/vocab.py); see --help."""

from keras_bert_lite.runners import cli

if __name__ == "__main__":
    cli.vocab()

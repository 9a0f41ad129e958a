"""One vector per text of a file (sentence embeddings): the same as `kbl-embed` (keras_bert_lite/runners/embed.py);
see --help."""

from keras_bert_lite.runners import cli

if __name__ == "__main__":
    cli.embed()

"""Fine-tune on GLUE or your own classification/regression data: the same as `kbl-glue`
(keras_bert_lite/runners/glue.py); see --help."""

from keras_bert_lite.runners import cli

if __name__ == "__main__":
    cli.glue()

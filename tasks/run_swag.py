"""Fine-tune for multiple choice (SWAG): the same as `kbl-swag` (keras_bert_lite/runners/swag.py); see --help."""

from keras_bert_lite.runners import cli

if __name__ == "__main__":
    cli.swag()

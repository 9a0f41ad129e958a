"""Export a trained model as a text-in SavedModel: the same as `kbl-export` (keras_bert_lite/runners/export.py)."""

from keras_bert_lite.runners import cli

if __name__ == "__main__":
    cli.export()

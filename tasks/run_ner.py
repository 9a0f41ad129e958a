"""Fine-tune for named-entity recognition: the same as `kbl-ner` (keras_bert_lite/runners/ner.py); see --help."""

from keras_bert_lite.runners import cli

if __name__ == "__main__":
    cli.ner()

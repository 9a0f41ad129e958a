"""Fine-tune on SQuAD v1.1 / v2.0: the same as `kbl-squad` (keras_bert_lite/runners/squad.py); see --help."""

from keras_bert_lite.runners import cli

if __name__ == "__main__":
    cli.squad()

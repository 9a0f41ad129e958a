"""Pretrain BERT (MLM + NSP) on raw text: the same as `kbl-pretrain` (keras_bert_lite/runners/pretrain.py);
see --help."""

from keras_bert_lite.runners import cli

if __name__ == "__main__":
    cli.pretrain()

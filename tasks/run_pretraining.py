"""BERT pretraining (MLM + NSP) with on-the-fly masking. See keras_bert_lite/training/pretrain.py or --help."""

from keras_bert_lite.training.pretrain import main

if __name__ == "__main__":
    main()

"""Fine-tune on SQuAD v1.1 / v2.0. See keras_bert_lite/training/run_squad.py or --help."""

from keras_bert_lite.training.run_squad import main

if __name__ == "__main__":
    main()

"""Fine-tune for named-entity recognition (CoNLL-2003). See keras_bert_lite/training/run_ner.py or --help."""

from keras_bert_lite.training.run_ner import main

if __name__ == "__main__":
    main()

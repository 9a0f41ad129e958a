"""Fine-tune on GLUE or your own classification/regression data. See keras_bert_lite/training/run_glue.py or --help."""

from keras_bert_lite.training.run_glue import main

if __name__ == "__main__":
    main()

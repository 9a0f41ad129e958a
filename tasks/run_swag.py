"""Fine-tune on SWAG (multiple choice). See keras_bert_lite/training/run_swag.py or --help."""

from keras_bert_lite.training.run_swag import main

if __name__ == "__main__":
    main()

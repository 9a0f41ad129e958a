"""Train a WordPiece vocab.txt from text files. See keras_bert_lite/text/create_vocab.py or --help."""

from keras_bert_lite.text.create_vocab import main

if __name__ == "__main__":
    main()

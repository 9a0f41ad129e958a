"""Export a trained model as a versioned, audited, text-in SavedModel. See keras_bert_lite/export/exporter.py."""

from keras_bert_lite.export.exporter import main

if __name__ == "__main__":
    main()

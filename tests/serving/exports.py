"""SavedModels written by our own exporter, for the tests that hold the server to real exports."""

import keras

import keras_bert_lite as kbl
from keras_bert_lite.artifacts import TaskSpec
from keras_bert_lite.export.exporter import export_saved_model
from keras_bert_lite.text import Vocab

LABELS = ("negative", "positive")


def export_tiny_classifier(vocab_path, base_path, seed=0):
    """Exports an untrained L2 H32 classifier (labels `LABELS`, sequences of 32) as version 1 of `base_path`
    (portable target: no TF.Text ops); returns the version's path."""
    keras.utils.set_random_seed(seed)
    vocab = Vocab.from_file(vocab_path)
    config = kbl.BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_layers=2,
        num_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    task = TaskSpec("classification", lower_case=True, seq_length=32, labels=LABELS)
    return export_saved_model(
        kbl.build_classifier(config, num_classes=len(LABELS)), task, vocab, str(base_path), target="portable"
    )

"""SavedModels written by our own exporter, for the tests that hold the server to real exports."""

import keras

import keras_bert_lite as kbl
from keras_bert_lite.artifacts import TaskSpec
from keras_bert_lite.export.exporter import export_saved_model
from keras_bert_lite.text import Vocab
from tests.conftest import tiny_bert_config

LABELS = ("negative", "positive")


def export_tiny_classifier(vocab_path, base_path, seed=0, labels=LABELS, **config_changes):
    """Exports an untrained L2 H32 classifier (`tiny_bert_config` changed by `config_changes`; one output per label
    of `labels`, sequences of 32) as the next version of `base_path` (1 in an empty one; portable target: no
    TF.Text ops); returns the version's path."""
    keras.utils.set_random_seed(seed)
    vocab = Vocab.from_file(vocab_path)
    config = tiny_bert_config(len(vocab), **config_changes)
    task = TaskSpec("classification", lower_case=True, seq_length=32, labels=labels)
    return export_saved_model(
        kbl.build_classifier(config, num_classes=len(labels)), task, vocab, str(base_path), target="portable"
    )

"""keras_bert_lite.saving: our .keras files load in plain Keras and through kbl.load_model."""

import subprocess
import sys

import numpy as np
import pytest

import keras_bert_lite as kbl
from keras_bert_lite import artifacts
from keras_bert_lite.training.optimization import create_optimizer
from tests.conftest import random_inputs

# A fresh interpreter, as a user's script: Keras first, then the package, then plain keras.saving.load_model.
_PLAIN_KERAS = """
import sys, numpy as np
import keras
import keras_bert_lite
model = keras.saving.load_model(sys.argv[1])
inputs = dict(np.load(sys.argv[2]))
np.save(sys.argv[3], model.predict(inputs, verbose=0))
print(type(model.optimizer).__name__, int(model.optimizer.iterations))
"""


def _run(code, *args):
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


@pytest.fixture
def saved_classifier(tiny_config, tmp_path):
    model = kbl.build_classifier(kbl.build_encoder(tiny_config), num_classes=3)
    model.compile(
        optimizer=create_optimizer(learning_rate=1e-4, total_steps=10), loss="sparse_categorical_crossentropy"
    )
    inputs = random_inputs(tiny_config)
    model.fit(inputs, np.array([0, 1, 2]), epochs=1, verbose=0)  # optimizer state to save
    path = str(tmp_path / artifacts.TASK_MODEL_FILE)
    model.save(path)
    return model, path, inputs


def test_plain_keras_load_model_reads_our_file_with_its_optimizer(saved_classifier, tmp_path):
    model, path, inputs = saved_classifier
    np.savez(tmp_path / "inputs.npz", **inputs)
    printed = _run(_PLAIN_KERAS, path, str(tmp_path / "inputs.npz"), str(tmp_path / "out.npy"))
    assert printed == "BertAdamW 1"  # the optimizer and its state
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), model.predict(inputs, verbose=0), atol=1e-6)


def test_load_model_takes_files_and_run_directories(saved_classifier, tiny_config, tmp_path):
    model, path, inputs = saved_classifier
    assert kbl.load_model(path).name == model.name
    assert kbl.load_model(str(tmp_path)).name == model.name  # a fine-tuning run: model.keras
    pretraining_run = tmp_path / "pretrain"
    pretraining_run.mkdir()
    kbl.build_encoder(tiny_config).save(str(pretraining_run / artifacts.ENCODER_FILE))
    assert kbl.load_model(str(pretraining_run)).name == "encoder"  # else encoder.keras
    kbl.build_encoder(tiny_config).save(str(tmp_path / artifacts.ENCODER_FILE))
    assert kbl.load_model(str(tmp_path)).name == model.name  # model.keras comes first
    with pytest.raises(FileNotFoundError, match=f"{tmp_path / 'empty'}: no .keras file.*model.keras"):
        kbl.load_model(str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError, match="missing.keras: no .keras file"):
        kbl.load_model(str(tmp_path / "missing.keras"))
    with pytest.raises(FileNotFoundError, match="missing.keras: no .keras file"):
        artifacts.load_keras_file(str(tmp_path / "missing.keras"))  # not "not a .keras archive"


def test_the_package_alone_still_imports_neither_keras_nor_tensorflow():
    """Registering at import is only for processes that have Keras already: the gRPC client and the vocab tools
    stay free of TensorFlow's start-up."""
    code = "import sys, keras_bert_lite; print('keras' in sys.modules, 'tensorflow' in sys.modules)"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout.strip()
        == "False False"
    )

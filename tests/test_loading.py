"""`kbl.load`, the one loader: its order, and every former entry point reading the file it reads.

Which file a call reads is seen by a spy on the three readers underneath (`keras.saving.load_model`, safetensors'
`load_file`, `tf.train.load_checkpoint`) that raises `Read(path)` at the first file, so a run directory of empty
`.keras` archives is enough to follow the order; one test loads real tiny models."""

import itertools
import os
import shutil
import zipfile

import keras
import pytest
import tensorflow as tf

import keras_bert_lite as kbl
from keras_bert_lite import artifacts, checkpoints, saving
from keras_bert_lite.checkpoints import readers
from tests.conftest import GOLDEN_DIR
from tests.test_checkpoints import tiny_tf1_checkpoint  # noqa: F401  (a fixture)

# The order, as documented in `kbl.load`: the part's own file, then encoder.keras, pretrainer.keras, model.keras.
ORDER = {
    "encoder": ("encoder.keras", "pretrainer.keras", "model.keras"),
    "pretrainer": ("pretrainer.keras", "encoder.keras", "model.keras"),
    "task": ("model.keras", "encoder.keras", "pretrainer.keras"),
}
# Each former entry point, and the part of `kbl.load` it stands for.
FORMER = {
    "load_encoder": (checkpoints.load_encoder, "encoder"),
    "load_pretrainer": (checkpoints.load_pretrainer, "pretrainer"),
    "load_masked_lm": (checkpoints.load_masked_lm, "pretrainer"),
    "load_model": (saving.load_model, "task"),
    "load_trained": (artifacts.load_trained, "task"),
    "load_keras_file": (artifacts.load_keras_file, "task"),
    "load_embedder": (checkpoints.load_embedder, "task"),
}
RUN_FILES = ("encoder.keras", "pretrainer.keras", "model.keras")


class Read(Exception):
    """Raised by the spy at the first file read, with its path."""


@pytest.fixture
def first_read(monkeypatch):
    """`first_read(call)`: the name of the file `call()` reads first, or the name of the exception it raises
    before reading any."""

    def spy(path, *args, **kwargs):
        raise Read(os.fspath(path))

    monkeypatch.setattr(keras.saving, "load_model", spy)
    monkeypatch.setattr(readers, "load_file", spy)
    monkeypatch.setattr(tf.train, "load_checkpoint", spy)

    def first_read(call):
        try:
            call()
        except Read as read:
            return os.path.basename(read.args[0])
        except Exception as error:  # noqa: BLE001  (compared: the same refusal from both)
            return type(error).__name__
        raise AssertionError("read no file and raised nothing")

    return first_read


def run_directory(tmp_path, names):
    """A run directory holding `names`, each an empty `.keras` (zip) archive."""
    directory = tmp_path / "_".join(name.split(".")[0] for name in names)
    directory.mkdir()
    for name in names:
        zipfile.ZipFile(directory / name, "w").close()
    return str(directory)


def subsets():
    return [names for size in (1, 2, 3) for names in itertools.combinations(RUN_FILES, size)]


@pytest.mark.parametrize("part", sorted(ORDER))
def test_the_order_of_a_run_directorys_files(part, tmp_path, first_read):
    assert artifacts.model_files(part) == ORDER[part]
    for names in subsets():
        expected = next(name for name in ORDER[part] if name in names)
        assert first_read(lambda: kbl.load(run_directory(tmp_path, names), part)) == expected, names
    assert ", ".join(ORDER["encoder"]) in " ".join(kbl.load.__doc__.split())  # documented as it is


def test_our_files_come_before_a_checkpoint_in_the_same_directory(tmp_path, first_read):
    directory = tmp_path / "both"
    shutil.copytree(GOLDEN_DIR / "hf_tiny_pretraining", directory)
    assert first_read(lambda: kbl.load(str(directory))) == "model.safetensors"
    zipfile.ZipFile(directory / "pretrainer.keras", "w").close()
    assert first_read(lambda: kbl.load(str(directory))) == "pretrainer.keras"
    assert first_read(lambda: kbl.load(str(directory / "pretrainer.keras"), "task")) == "pretrainer.keras"


@pytest.mark.parametrize("former", sorted(FORMER))
def test_each_former_entry_point_reads_the_file_the_loader_reads(former, tmp_path, first_read):
    function, part = FORMER[former]
    for names in subsets():
        directory = run_directory(tmp_path, names)
        assert first_read(lambda: function(directory)) == first_read(lambda: kbl.load(directory, part)), names
        file = os.path.join(directory, names[0])
        assert first_read(lambda: function(file)) == first_read(lambda: kbl.load(file, part)) == names[0]


def test_checkpoint_readers_read_the_file_the_loader_reads(tiny_tf1_checkpoint, first_read):  # noqa: F811
    hf = str(GOLDEN_DIR / "hf_tiny_pretraining")
    for path in (hf, str(tiny_tf1_checkpoint[0])):
        expected = first_read(lambda: kbl.load(path))
        assert expected in ("model.safetensors", "bert_model.ckpt")
        for function in (
            checkpoints.read_checkpoint,
            checkpoints.load_encoder,
            checkpoints.load_pretrainer,
            checkpoints.load_masked_lm,
            checkpoints.load_embedder,
        ):
            assert first_read(lambda: function(path)) == expected, function.__name__
    assert first_read(lambda: kbl.load(hf, "task")) == "FileNotFoundError"  # a checkpoint holds no task model


def test_each_part_of_a_real_run_directory(tiny_config, tmp_path):
    encoder = kbl.build_encoder(tiny_config)
    kbl.build_pretrainer(encoder).save(str(tmp_path / "pretrainer.keras"))
    kbl.build_classifier(encoder, num_classes=2).save(str(tmp_path / "model.keras"))
    directory = str(tmp_path)
    assert kbl.load(directory).name == "encoder"  # pretrainer.keras's encoder
    assert isinstance(kbl.load(directory, "pretrainer"), kbl.BertPretrainer)
    task = kbl.load(directory, "task")
    assert task.name == kbl.load_model(directory).name != "encoder"
    encoder.save(str(tmp_path / "encoder.keras"))
    assert kbl.load(directory).count_params() == encoder.count_params()
    with pytest.raises(ValueError, match=r"part 'model': one of encoder, pretrainer, task"):
        kbl.load(directory, "model")
    with pytest.raises(ValueError, match="not a BertPretrainer; pass new_heads=True"):
        kbl.load(str(tmp_path / "model.keras"), "pretrainer")
    assert isinstance(kbl.load(str(tmp_path / "model.keras"), "pretrainer", new_heads=True), kbl.BertPretrainer)

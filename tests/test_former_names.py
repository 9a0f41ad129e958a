"""Former names (issue 60's renames), kept for one release: each still works, as the new name's object, and warns
with a DeprecationWarning naming its replacement; `.keras` files saved under the layers' former registered names
still load."""

import importlib
import os
import re
import sys

import keras
import numpy as np
import pytest

import keras_bert_lite as kbl
from keras_bert_lite import artifacts, layers
from keras_bert_lite.config import BertConfig
from keras_bert_lite.layers import FusedLayerNorm, Uint16MaskDropout
from keras_bert_lite.layers import dropout as dropout_module
from keras_bert_lite.layers import layer_norm as layer_norm_module

# Saved by commit 7e246be's code, when the layers were registered as keras_bert_lite>LayerNorm and >Dropout:
# Input [6, 8] -> Dense(8) -> LayerNorm(epsilon=1e-12; gamma linspace(0.5, 1.5), beta linspace(-1, 1))
# -> Dropout(0.1, seed=3).
FORMER_LAYERS_FILE = os.path.join(os.path.dirname(__file__), "golden", "former_layer_names.keras")

MODULES = {
    "keras_bert_lite.hub_names": "keras_bert_lite.hf_hub",
    "keras_bert_lite.export.hub_encoder": "keras_bert_lite.export.tf_hub_encoder",
    "keras_bert_lite.export.hub_layer": "keras_bert_lite.export.tf_hub_layer",
    "keras_bert_lite.export.hub_preprocessor": "keras_bert_lite.export.tf_hub_preprocessor",
    "keras_bert_lite.data.encoding": "keras_bert_lite.data.text_files",
    "keras_bert_lite.data.records": "keras_bert_lite.data.table_files",
}
ATTRIBUTES = [
    (artifacts, "init_vocab", "vocab_given_or_beside"),
    (artifacts, "model_file", "keras_file_of"),
    (artifacts, "existing_model_file", "require_keras_file"),
    (layers, "Dropout", "Uint16MaskDropout"),
    (layers, "LayerNorm", "FusedLayerNorm"),
    (dropout_module, "Dropout", "Uint16MaskDropout"),
    (layer_norm_module, "LayerNorm", "FusedLayerNorm"),
]


@pytest.mark.parametrize("old, new", MODULES.items())
def test_former_module_is_the_new_module_and_warns_at_the_import(old, new):
    sys.modules.pop(old, None)  # an earlier import would skip the module's body, and its warning
    with pytest.warns(DeprecationWarning, match=f"{re.escape(old)} is deprecated .*: use {re.escape(new)}") as seen:
        exec(compile(f"import {old}", __file__, "exec"), {})
    assert sys.modules[old] is importlib.import_module(new)
    assert [w.filename for w in seen if w.category is DeprecationWarning] == [__file__]  # the import is blamed


def test_former_module_names_reach_private_names_too():
    sys.modules.pop("keras_bert_lite.hub_names", None)
    with pytest.warns(DeprecationWarning):
        from keras_bert_lite.hub_names import _snapshot, resolve_model
    from keras_bert_lite import hf_hub

    assert (_snapshot, resolve_model) == (hf_hub._snapshot, hf_hub.resolve_model)


@pytest.mark.parametrize("module, old, new", ATTRIBUTES, ids=lambda v: v if isinstance(v, str) else v.__name__)
def test_former_attribute_is_the_new_one_and_warns(module, old, new):
    with pytest.warns(
        DeprecationWarning,
        match=f"{re.escape(module.__name__)}.{old} is deprecated .*: use {re.escape(module.__name__)}.{new}",
    ) as seen:
        value = getattr(module, old)
    assert value is getattr(module, new)
    assert [w.filename for w in seen if w.category is DeprecationWarning] == [__file__]
    assert old not in getattr(module, "__all__", ())


def test_unknown_attribute_is_still_an_attribute_error():
    for module in (artifacts, layers, dropout_module):
        with pytest.raises(AttributeError, match="has no attribute 'Droput'"):
            module.Droput  # noqa: B018
    assert artifacts.load_trained is importlib.import_module("keras_bert_lite.checkpoints").load_trained


def test_from_preset_is_of_size_and_warns():
    with pytest.warns(DeprecationWarning, match=r"BertConfig.from_preset is deprecated .*: use BertConfig.of_size"):
        config = BertConfig.from_preset("mini", hidden_act="relu")
    assert config == BertConfig.of_size("mini", hidden_act="relu")


def test_keras_file_saved_under_the_former_layer_names_loads_as_the_renamed_layers():
    model = kbl.load(FORMER_LAYERS_FILE, "task")
    norm, dropout = model.get_layer("layer_norm"), model.get_layer("dropout")
    assert isinstance(norm, FusedLayerNorm) and isinstance(dropout, Uint16MaskDropout)
    assert (norm.epsilon, dropout.rate, dropout.seed) == (1e-12, 0.1, 3)
    np.testing.assert_array_equal(norm.gamma.numpy(), np.linspace(0.5, 1.5, 8, dtype="float32"))
    x = np.random.default_rng(0).normal(size=(2, 6, 8)).astype("float32")
    reference = keras.layers.LayerNormalization(epsilon=1e-12)
    reference.build(x.shape)
    reference.set_weights(norm.get_weights())
    expected = reference(model.get_layer("dense")(x))
    np.testing.assert_allclose(model(x).numpy(), expected.numpy(), rtol=1e-5, atol=1e-5)
    # Saved again, the file names the new classes.
    assert keras.saving.get_registered_name(FusedLayerNorm) == "keras_bert_lite>FusedLayerNorm"
    assert keras.saving.get_registered_name(Uint16MaskDropout) == "keras_bert_lite>Uint16MaskDropout"

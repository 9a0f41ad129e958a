"""Several models: the one resolution of a request's ModelSpec (TF Serving's statuses and messages), version
labels by TF Serving's rule, and configs applied while serving. In process, with a fake loader."""

import functools

import grpc
import pytest
from tensorflow_serving.apis import model_pb2

from keras_bert_lite.serving.errors import ServingError
from keras_bert_lite.serving.manager import ModelManager, State
from keras_bert_lite.serving.model_config import ModelConfig
from keras_bert_lite.serving.registry import ModelRegistry
from keras_bert_lite.serving.version_policy import VersionPolicy
from tests.serving.test_manager import add_version, fake_load

SPECIFIC_1_2 = VersionPolicy("specific", versions=(1, 2))


def spec(name="a", version=None, label=None):
    model_spec = model_pb2.ModelSpec(name=name)
    if version is not None:
        model_spec.version.value = version
    if label is not None:
        model_spec.version_label = label
    return model_spec


def registry(allow_unavailable_labels=False, changes=None):
    make = functools.partial(ModelManager, poll_seconds=0, load=fake_load)
    on_change = None if changes is None else lambda name, serving: changes.append((name, serving))
    return ModelRegistry(make, allow_unavailable_labels, on_change=on_change)


@pytest.fixture
def trees(tmp_path):
    """Model base paths a (versions 1, 2, 3) and b (version 1)."""
    for name in ("1", "2", "3"):
        (tmp_path / "a").mkdir(exist_ok=True)
        add_version(tmp_path / "a", name)
    (tmp_path / "b").mkdir()
    add_version(tmp_path / "b", "1")
    return tmp_path


def served(models, *args, **kwargs):
    servable = models.servable(spec(*args, **kwargs))
    return servable.name, servable.version


def test_two_models_and_a_specific_policy_resolve_by_name_version_and_label(trees):
    models = registry()
    models.apply((ModelConfig("a", str(trees / "a"), SPECIFIC_1_2), ModelConfig("b", str(trees / "b"))))
    models.apply(
        (
            ModelConfig("a", str(trees / "a"), SPECIFIC_1_2, (("canary", 2), ("stable", 1))),
            ModelConfig("b", str(trees / "b")),
        )
    )
    assert models.names() == ["a", "b"]
    assert served(models) == ("a", 2)  # latest of the specific versions, not 3
    assert served(models, version=1) == ("a", 1)
    assert served(models, label="stable") == ("a", 1) and served(models, label="canary") == ("a", 2)
    assert served(models, "b") == ("b", 1)


@pytest.mark.parametrize(
    "model_spec, code, message",
    [
        (spec(name=""), grpc.StatusCode.INVALID_ARGUMENT, "ModelSpec has no name specified."),
        (spec(name="other"), grpc.StatusCode.NOT_FOUND, "Servable not found for request: Latest(other)"),
        (spec(version=3), grpc.StatusCode.NOT_FOUND, "Servable not found for request: Specific(a, 3)"),
        (spec(version=9), grpc.StatusCode.NOT_FOUND, "Servable not found for request: Specific(a, 9)"),
        (spec(label="beta"), grpc.StatusCode.INVALID_ARGUMENT, "Unrecognized servable version label: beta"),
        (
            spec(name="b", label="stable"),
            grpc.StatusCode.INVALID_ARGUMENT,
            "Unrecognized servable version label: stable",
        ),
    ],
)
def test_resolution_errors_are_tf_servings(trees, model_spec, code, message):
    models = registry(allow_unavailable_labels=True)
    models.apply(
        (ModelConfig("a", str(trees / "a"), SPECIFIC_1_2, (("stable", 1),)), ModelConfig("b", str(trees / "b")))
    )
    with pytest.raises(ServingError) as raised:
        models.servable(model_spec)
    assert (raised.value.code, raised.value.message) == (code, message)


def test_labels_on_versions_not_available_refuse_the_whole_config(trees):
    # TF Serving checks labels before it loads anything: at start, a label can only be added with the flag.
    models = registry()
    config = (ModelConfig("a", str(trees / "a"), SPECIFIC_1_2, (("stable", 1),)),)
    with pytest.raises(ServingError) as raised:
        models.apply(config)
    assert raised.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert raised.value.message.startswith(
        "Request to assign label to version 1 of model a, which is not currently "
        "available for inference (label 'stable': serve version 1 first"
    )
    assert models.names() == [] and models.configs is None  # nothing applied


def test_with_the_flag_a_new_label_may_wait_but_a_label_in_use_moves_only_to_an_available_version(trees):
    models = registry(allow_unavailable_labels=True)
    models.apply((ModelConfig("a", str(trees / "a"), SPECIFIC_1_2, (("stable", 1),)),))
    assert served(models, label="stable") == ("a", 1)
    with pytest.raises(
        ServingError, match="label 'stable' points to version 1: a label in use moves only to an available version"
    ):
        models.apply((ModelConfig("a", str(trees / "a"), VersionPolicy("all"), (("stable", 3),)),))
    assert models.configs[0].policy == SPECIFIC_1_2  # the refused config changed nothing: 3 never loaded
    assert models.servable(spec()).version == 2
    models.apply((ModelConfig("a", str(trees / "a"), VersionPolicy("all"), (("stable", 1),)),))
    models.apply((ModelConfig("a", str(trees / "a"), VersionPolicy("all"), (("stable", 3),)),))  # 3 is available now
    assert served(models, label="stable") == ("a", 3)


def test_a_label_on_a_version_that_is_not_served_is_not_found(trees):
    models = registry(allow_unavailable_labels=True)
    models.apply((ModelConfig("a", str(trees / "a"), SPECIFIC_1_2, (("next", 7),)),))
    with pytest.raises(ServingError, match=r"Servable not found for request: Specific\(a, 7\)"):
        models.servable(spec(label="next"))


def test_a_removed_model_is_not_found_and_its_versions_end(trees):
    changes = []
    models = registry(changes=changes)
    models.apply((ModelConfig("a", str(trees / "a")), ModelConfig("b", str(trees / "b"))))
    models.apply((ModelConfig("a", str(trees / "a")),))
    with pytest.raises(ServingError, match=r"Servable not found for request: Latest\(b\)"):
        models.servable(spec("b"))
    assert models.names() == ["a"]
    assert {version: state.state for version, state in models.version_states("b").items()} == {1: State.END}
    assert changes[-1] == ("b", False)
    models.apply((ModelConfig("a", str(trees / "a")), ModelConfig("b", str(trees / "b"))))  # and back
    assert served(models, "b") == ("b", 1) and changes[-1] == ("b", True)


def test_a_changed_policy_applies_at_once(trees):
    models = registry()
    models.apply((ModelConfig("a", str(trees / "a")),))
    assert models.servable(spec(version=3)).version == 3
    models.apply((ModelConfig("a", str(trees / "a"), VersionPolicy("specific", versions=(1,))),))
    assert served(models) == ("a", 1)
    with pytest.raises(ServingError, match=r"Servable not found for request: Specific\(a, 3\)"):
        models.servable(spec(version=3))

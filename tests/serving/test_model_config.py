"""--model_config_file: TF Serving's text-format ModelServerConfig, parsed by protobuf and checked as TF Serving
checks it (server_core.cc's messages)."""

import pytest

from keras_bert_lite.serving.model_config import ConfigError, ModelConfig, parse_config, read_config_file
from keras_bert_lite.serving.version_policy import VersionPolicy

FULL = """
# two models, as TF Serving's documentation writes them
model_config_list {
  config {
    name: 'reviews'
    base_path: '/models/reviews'
    model_platform: 'tensorflow'
    model_version_policy { specific { versions: 2 versions: 1 } }
    version_labels { key: 'stable' value: 1 }
    version_labels { key: 'canary' value: 2 }
  }
  config { name: "minilm" base_path: "/models/minilm" model_platform: "tensorflow"
           model_version_policy { latest { num_versions: 2 } } }
  config { name: "all" base_path: "/models/all" model_type: TENSORFLOW model_version_policy { all {} } }
  config { name: "plain" base_path: "/models/plain" model_platform: "tensorflow" }
}
"""


def test_a_full_config_reads_as_tf_serving_reads_it():
    assert parse_config(FULL) == (
        ModelConfig(
            "reviews", "/models/reviews", VersionPolicy("specific", versions=(1, 2)), (("canary", 2), ("stable", 1))
        ),
        ModelConfig("minilm", "/models/minilm", VersionPolicy("latest", num_versions=2)),
        ModelConfig("all", "/models/all", VersionPolicy("all")),
        ModelConfig("plain", "/models/plain", VersionPolicy("latest", num_versions=1)),
    )


def test_an_empty_config_is_no_action_and_an_empty_list_serves_nothing(tmp_path):
    assert parse_config("") is None
    assert parse_config("model_config_list {}") == ()
    path = tmp_path / "models.config"
    path.write_text(FULL)
    assert read_config_file(str(path)) == parse_config(FULL)


def config(body):
    return "model_config_list { config { " + body + " } }"


@pytest.mark.parametrize(
    "text, message",
    [
        (
            config('name: "a" base_pth: "/x"'),
            "cannot parse the model config as a ModelServerConfig: 1:40 : Message type "
            '"tensorflow.serving.ModelConfig" has no field named "base_pth".',
        ),
        (
            config(
                'name: "a" base_path: "/x" model_platform: "tensorflow" } config { name: "a" base_path: "/y" '
                'model_platform: "tensorflow"'
            ),
            "Illegal to list model a multiple times in config list",
        ),
        (
            config('name: "a" base_path: "models/a" model_platform: "tensorflow"'),
            "Expected model a to have an absolute path or URI; got base_path()=models/a",
        ),
        (
            config('name: "a" base_path: "/x"'),
            "Illegal setting neither ModelServerConfig::model_type (deprecated) nor "
            "ModelServerConfig::model_platform, model name is a",
        ),
        (config('name: "a" base_path: "/x" model_platform: "onnx"'), "Model a requests unsupported platform onnx"),
        (
            config('name: "a" base_path: "/x" model_platform: "tensorflow" model_type: TENSORFLOW'),
            "Illegal setting both ModelServerConfig::model_type (deprecated) and ModelServerConfig::model_platform",
        ),
        (
            config('name: "a" base_path: "gs://bucket/a" model_platform: "tensorflow"'),
            "is a URI; kbl-serve serves local",
        ),
        (config('base_path: "/x" model_platform: "tensorflow"'), "a config has no name"),
        ("custom_model_config { }", "custom_model_config is not supported"),
    ],
)
def test_a_config_tf_serving_refuses_is_refused_with_its_message(text, message):
    with pytest.raises(ConfigError) as raised:
        parse_config(text)
    assert message in str(raised.value)


def test_an_unreadable_file_is_refused_by_name(tmp_path):
    with pytest.raises(ConfigError, match=f"cannot read {tmp_path / 'missing.config'}"):
        read_config_file(str(tmp_path / "missing.config"))

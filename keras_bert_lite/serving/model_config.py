"""`--model_config_file`: TF Serving's text-format `ModelServerConfig`, read into `ModelConfig`s.

    model_config_list {
      config {
        name: "reviews"
        base_path: "/models/reviews"
        model_platform: "tensorflow"
        model_version_policy { specific { versions: 1 versions: 2 } }
        version_labels { key: "stable" value: 1 }
        version_labels { key: "canary" value: 2 }
      }
      config { name: "embedder" base_path: "/models/minilm" model_platform: "tensorflow" }
    }

The file is parsed by protobuf's `text_format` into tensorflow_serving's own `ModelServerConfig` message, so any
file TF Serving reads parses the same way here, and one that does not is refused with protobuf's line:column.
It is then checked as TF Serving's server_core.cc checks it, with its messages: every model listed once, an
absolute `base_path`, `model_platform` "tensorflow" (or the deprecated `model_type: TENSORFLOW`). Only local
paths are served (no gs:// or s3://), and `custom_model_config` is refused; `logging_config` is ignored with a
warning (kbl-serve has its own access log).
"""

import dataclasses
import logging
import os

from google.protobuf import text_format
from tensorflow_serving.config import model_server_config_pb2

from keras_bert_lite.serving import version_policy

log = logging.getLogger(__name__)
TENSORFLOW_PLATFORM = "tensorflow"


class ConfigError(ValueError):
    """A model server config that cannot be served; the message says what to fix."""


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """One model to serve.

    Attributes:
        name: The name requests give in `model_spec.name`.
        base_path: The directory holding one subdirectory per integer version.
        policy: The `VersionPolicy` choosing the versions served.
        labels: ((label, version), ...), sorted: TF Serving's `version_labels`.
    """

    name: str
    base_path: str
    policy: version_policy.VersionPolicy = version_policy.VersionPolicy()
    labels: tuple = ()


def read_config_file(path):
    """The `ModelConfig`s of the `ModelServerConfig` text file at `path`, or None for an empty config.

    An empty file (no `model_config_list`) is "no action" in TF Serving: the models served stay as they are.

    Raises:
        ConfigError: The file cannot be read or parsed, or its content cannot be served (the message names the
            file and, for a syntax error, the line and column).
    """
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read {path}: {error}") from None
    return parse_config(text, path)


def parse_config(text, source="the model config"):
    """The `ModelConfig`s of a text-format `ModelServerConfig`; None when it sets no config (see above)."""
    try:
        config = text_format.Parse(text, model_server_config_pb2.ModelServerConfig())
    except text_format.ParseError as error:
        raise ConfigError(f"cannot parse {source} as a ModelServerConfig: {error}") from None
    kind = config.WhichOneof("config")
    if kind is None:
        return None
    if kind != "model_config_list":
        raise ConfigError(f"{source}: custom_model_config is not supported; list the models in model_config_list")
    return checked_configs(config.model_config_list.config, source)


def checked_configs(protos, source):
    """`ModelConfig`s of `ModelConfig` protos, checked as TF Serving checks a ModelConfigList."""
    names = set()
    configs = []
    for proto in protos:
        if proto.name in names:
            raise ConfigError(f"{source}: Illegal to list model {proto.name} multiple times in config list")
        names.add(proto.name)
        configs.append(_model_config(proto, source))
    return tuple(configs)


def _model_config(proto, source):
    if not proto.name:
        raise ConfigError(
            f"{source}: a config has no name (base_path {proto.base_path!r}); requests name the "
            f"model they want, so every model needs one"
        )
    _check_platform(proto, source)
    _check_base_path(proto, source)
    if proto.HasField("logging_config"):
        log.warning(
            "%s: model %s: logging_config is ignored (kbl-serve logs one access line per call)", source, proto.name
        )
    policy = version_policy.from_proto(proto.model_version_policy)
    if policy.kind == version_policy.SPECIFIC and not policy.versions:
        log.warning("No specific versions requested for servable %s.", proto.name)
    return ModelConfig(proto.name, proto.base_path, policy, tuple(sorted(proto.version_labels.items())))


def _check_platform(proto, source):
    """TF Serving's GetPlatform: model_platform "tensorflow", or the deprecated model_type TENSORFLOW."""
    model_type = proto.model_type
    if model_type != model_server_config_pb2.MODEL_TYPE_UNSPECIFIED:
        if proto.model_platform:
            raise ConfigError(
                f"{source}: Illegal setting both ModelServerConfig::model_type (deprecated) and "
                f"ModelServerConfig::model_platform, model name is {proto.name}"
            )
        if model_type != model_server_config_pb2.TENSORFLOW:
            raise ConfigError(f"{source}: ModelServerConfig::model_type choice {model_type} not supported.")
        return
    if not proto.model_platform:
        raise ConfigError(
            f"{source}: Illegal setting neither ModelServerConfig::model_type (deprecated) nor "
            f"ModelServerConfig::model_platform, model name is {proto.name} (add model_platform: "
            f'"{TENSORFLOW_PLATFORM}")'
        )
    if proto.model_platform != TENSORFLOW_PLATFORM:
        raise ConfigError(f"{source}: Model {proto.name} requests unsupported platform {proto.model_platform}")


def _check_base_path(proto, source):
    if "://" in proto.base_path:
        raise ConfigError(
            f"{source}: model {proto.name}: base_path {proto.base_path} is a URI; kbl-serve serves "
            f"local directories only"
        )
    if not os.path.isabs(proto.base_path):
        raise ConfigError(
            f"{source}: Expected model {proto.name} to have an absolute path or URI; got base_path()={proto.base_path}"
        )

"""TF Serving's `--monitoring_config_file`: a text-format `tensorflow.serving.MonitoringConfig`.

    prometheus_config {
      enable: true
      path: "/monitoring/prometheus/metrics"
    }

With `enable: true`, the REST port serves the metrics (see `metrics`) at `path` (TF Serving's default when
empty). The tensorflow-serving-api package ships no `monitoring_config_pb2`, so the two messages are declared
here from TF Serving's `monitoring_config.proto`, in a pool of their own, and read with protobuf's text format.
"""

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format

DEFAULT_PATH = "/monitoring/prometheus/metrics"
_FIELD = descriptor_pb2.FieldDescriptorProto


def _message_class():
    proto = descriptor_pb2.FileDescriptorProto(
        name="tensorflow_serving/config/monitoring_config.proto", package="tensorflow.serving", syntax="proto3"
    )
    prometheus = proto.message_type.add(name="PrometheusConfig")
    prometheus.field.add(name="enable", number=1, type=_FIELD.TYPE_BOOL, label=_FIELD.LABEL_OPTIONAL)
    prometheus.field.add(name="path", number=2, type=_FIELD.TYPE_STRING, label=_FIELD.LABEL_OPTIONAL)
    monitoring = proto.message_type.add(name="MonitoringConfig")
    monitoring.field.add(
        name="prometheus_config",
        number=1,
        type=_FIELD.TYPE_MESSAGE,
        label=_FIELD.LABEL_OPTIONAL,
        type_name=".tensorflow.serving.PrometheusConfig",
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("tensorflow.serving.MonitoringConfig"))


MonitoringConfig = _message_class()


def metrics_path(config_file):
    """The path the metrics are served at, from a monitoring config file; None when Prometheus is not enabled.

    Raises:
        ValueError: For a file that cannot be read or parsed, or a path that is not an absolute URL path
            outside the REST API's /v1/ (naming the file and the problem).
    """
    try:
        with open(config_file, encoding="utf-8") as f:
            config = text_format.Parse(f.read(), MonitoringConfig())
    except (OSError, UnicodeDecodeError, text_format.ParseError) as error:
        raise ValueError(f"cannot read the monitoring config {config_file}: {error}") from None
    if not config.prometheus_config.enable:
        return None
    path = config.prometheus_config.path or DEFAULT_PATH
    if not path.startswith("/") or path.lower().startswith("/v1/") or any(char.isspace() for char in path):
        raise ValueError(
            f"{config_file}: prometheus_config.path {path!r} must be a URL path starting with / and "
            f"outside /v1/ (TF Serving's default: {DEFAULT_PATH})"
        )
    return path

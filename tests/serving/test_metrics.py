"""--monitoring_config_file: Prometheus metrics on the REST port, counting exactly the calls a test sent."""

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from keras_bert_lite.serving import flags
from tests.serving import http
from tests.serving.server_process import ServerProcess
from tests.serving.stubs import predict_request, prediction_stub, rpc_error

METRICS = "/monitoring/prometheus/metrics"


@pytest.fixture
def monitoring(tmp_path):
    path = tmp_path / "monitoring.config"
    path.write_text('prometheus_config {\n  enable: true,\n  path: "/monitoring/prometheus/metrics"\n}\n')
    return path


def samples(server, path=METRICS):
    """{(sample name, sorted label items): value} scraped from the server."""
    status, kind, text = http.get(server.url + path)
    assert status == 200 and kind.startswith("text/plain"), (status, kind, text)
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def count_key(model, status, api, version, entrypoint):
    labels = {"model_name": model, "status": status, "API": api, "version": version, "entrypoint": entrypoint}
    return ":tensorflow:serving:request_count", tuple(sorted(labels.items()))


def test_request_counts_are_exactly_the_calls_sent_by_status(toy_v1, start_server, monitoring):
    server = start_server(toy_v1, "--monitoring_config_file", str(monitoring), "--max_batch_size", "8")
    predict = server.url + "/v1/models/toy:predict"
    for _ in range(3):
        assert http.post(predict, {"instances": ["abc", "de", "f"]})[0] == 200
    for _ in range(2):
        assert http.post(predict, {"instances": [1]})[0] == 400
    assert http.post(server.url + "/v1/models/toy/versions/9:predict", {"instances": ["a"]})[0] == 404
    assert http.post(server.url + "/v1/models/nope:predict", {"instances": ["a"]})[0] == 404
    assert http.get(server.url + "/v1/models/toy")[0] == 200
    stub = prediction_stub(server.address)
    stub.Predict(predict_request({"text": ["ab", "cd"]}), timeout=30)
    assert rpc_error(stub.Predict, predict_request({"txt": ["a"]})).code() == grpc.StatusCode.INVALID_ARGUMENT

    scraped = samples(server)
    counts = {key: value for key, value in scraped.items() if key[0] == ":tensorflow:serving:request_count"}
    assert counts == {
        count_key("toy", "OK", "Predict", "1", "REST"): 3,
        count_key("toy", "INVALID_ARGUMENT", "Predict", "-", "REST"): 2,
        count_key("toy", "NOT_FOUND", "Predict", "-", "REST"): 1,  # version 9: not a label value
        count_key("-", "NOT_FOUND", "Predict", "-", "REST"): 1,  # an unknown model: "-"
        count_key("toy", "OK", "GetModelStatus", "-", "REST"): 1,
        count_key("toy", "OK", "Predict", "1", "GRPC"): 1,
        count_key("toy", "INVALID_ARGUMENT", "Predict", "-", "GRPC"): 1,
    }
    latency = {
        dict(labels)["entrypoint"] + " " + dict(labels)["API"]: value
        for (name, labels), value in scraped.items()
        if name == ":tensorflow:serving:request_latency_count"
    }
    assert latency == {"REST Predict": 3, "REST GetModelStatus": 1, "GRPC Predict": 1}  # OK calls only
    batches = {
        name: value
        for (name, labels), value in scraped.items()
        if name.startswith(":tensorflow:serving:batching:batch_size_") and dict(labels)["model_name"] == "toy"
    }
    assert batches[":tensorflow:serving:batching:batch_size_count"] == 4  # one batch per sequential call
    assert batches[":tensorflow:serving:batching:batch_size_sum"] == 3 * 3 + 2
    state = ("kbl_serving_model_version_state", (("model_name", "toy"), ("state", "AVAILABLE"), ("version", "1")))
    assert scraped[state] == 1
    assert scraped[("kbl_serving_calls_in_flight", ())] == 0


@pytest.fixture(scope="module")
def custom_path_server(toy_v1, tmp_path_factory):
    """A server with metrics at /metrics; only test_tf_servings_counter_name_has_no_total_suffix calls its APIs."""
    config = tmp_path_factory.mktemp("monitoring") / "custom.config"
    config.write_text('prometheus_config { enable: true path: "/metrics" }')
    server = ServerProcess(toy_v1, "--monitoring_config_file", str(config))
    try:
        yield server.wait_ready()
    finally:
        server.kill()


def test_tf_servings_counter_name_has_no_total_suffix(custom_path_server):
    server = custom_path_server
    http.get(server.url + "/v1/models/toy")
    text = http.get(server.url + "/metrics")[2]
    assert (
        '\n:tensorflow:serving:request_count{API="GetModelStatus",entrypoint="REST",model_name="toy",status="OK",'
        'version="-"} 1.0\n'
    ) in text
    assert "_total{" not in text.split("process_")[0] and "_created" not in text


def test_metrics_are_served_only_where_the_config_says(toy_server, custom_path_server):
    assert "--monitoring_config_file" not in toy_server.process.args
    assert http.get(toy_server.url + METRICS)[0] == 404  # no config: no metrics (TF Serving's default)
    custom = custom_path_server
    assert ":tensorflow:serving:request_count" in http.get(custom.url + "/metrics")[2]
    assert http.get(custom.url + METRICS)[0] == 404
    assert "metrics at /metrics" in custom.log()


@pytest.mark.parametrize(
    "text, message",
    [
        ("prometheus_config { enable: tru }", "cannot read the monitoring config"),
        ("prometheus_config { enabled: true }", "cannot read the monitoring config"),
        ('prometheus_config { enable: true path: "metrics" }', "must be a URL path starting with /"),
        ('prometheus_config { enable: true path: "/v1/metrics" }', "outside /v1/"),
    ],
)
def test_a_bad_monitoring_config_is_refused_at_start(tmp_path, capsys, text, message):
    config = tmp_path / "monitoring.config"
    config.write_text(text)
    with pytest.raises(SystemExit):
        flags.parse_args(
            ["--model_name", "m", "--model_base_path", str(tmp_path), "--monitoring_config_file", str(config)]
        )
    error = capsys.readouterr().err.splitlines()[-1]
    assert (
        error.startswith("kbl-serve: error: --monitoring_config_file: ") and message in error and str(config) in error
    )

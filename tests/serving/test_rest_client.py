"""RestClient and `kbl-client --server http://...`: the same answers over REST as over gRPC, to the bit."""

import socket

import numpy as np
import pytest

from keras_bert_lite.serving import ServerUnavailableError, ServingClient, ServingClientError
from keras_bert_lite.serving.client_cli import main
from keras_bert_lite.serving.rest_client import RestClient
from tests.serving.server_process import ServerProcess

TEXTS = ["a great movie, I loved it", "two hours I will never get back", "naïve but fun 🎬"]


@pytest.fixture(scope="module")
def served(exported_classifier):
    server = ServerProcess(exported_classifier, model_name="clf")
    try:
        yield server.wait_ready()
    finally:
        server.kill()


def test_rest_and_grpc_clients_give_identical_answers(served):
    with (
        ServingClient("clf", served.address, timeout=60) as grpc_client,
        RestClient("clf", served.url, timeout=60) as rest_client,
    ):
        for signature in ("serving_default", "preprocess"):
            expected, got = (
                grpc_client.predict(TEXTS, signature=signature),
                rest_client.predict(TEXTS, signature=signature),
            )
            assert sorted(got) == sorted(expected)
            for key in expected:
                assert got[key].dtype == expected[key].dtype and got[key].shape == expected[key].shape, key
                np.testing.assert_array_equal(got[key], expected[key], err_msg=key)
        assert rest_client.classify(TEXTS) == grpc_client.classify(TEXTS)
        assert rest_client.predict_labels(TEXTS)[0] == grpc_client.predict_labels(TEXTS)[0]
        assert rest_client.status() == grpc_client.status()
        assert rest_client.metadata() == grpc_client.metadata()
        assert list(rest_client.predict(TEXTS, output_filter=["label"])) == ["label"]


def test_rest_client_errors_carry_the_status_code(served):
    with RestClient("nope", served.url, timeout=60) as client:
        with pytest.raises(ServingClientError) as raised:
            client.status()
    assert raised.value.code.name == "NOT_FOUND" and "Could not find any versions of model nope" in str(raised.value)
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with pytest.raises(ServerUnavailableError, match="no TF Serving REST API at http://127.0.0.1"):
        RestClient("clf", f"http://127.0.0.1:{port}", timeout=5).status()


def test_kbl_client_prints_the_same_lines_over_rest_and_grpc(served, tmp_path, capsys):
    # In-process: kbl-client's entry point itself is run by test_cli_output and test_client.
    path = tmp_path / "texts.txt"
    path.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    lines = {}
    for server in (served.address, served.url):
        assert main(["--model_name", "clf", "--server", server, str(path)]) == 0
        lines[server] = capsys.readouterr().out.splitlines()
    assert len(lines[served.url]) == len(TEXTS) and lines[served.url] == lines[served.address]

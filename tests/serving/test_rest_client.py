"""RestClient and `kbl-client --server http://...`: the same answers over REST as over gRPC, to the bit."""

import os
import socket
import subprocess
import sys

import numpy as np
import pytest

from keras_bert_lite.serving import ServerUnavailableError, ServingClient, ServingClientError
from keras_bert_lite.serving.rest_client import RestClient
from tests.serving.server_process import REPO_ROOT, ServerProcess

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


def test_kbl_client_prints_the_same_lines_over_rest_and_grpc(served):
    lines = {}
    for server in (served.address, served.url):
        result = subprocess.run(
            [sys.executable, "-m", "keras_bert_lite.serving.client_cli", "--model_name", "clf", "--server", server],
            input="\n".join(TEXTS) + "\n",
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO_ROOT,
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"},
        )
        assert result.returncode == 0, result.stderr
        lines[server] = result.stdout.splitlines()
    assert len(lines[served.url]) == len(TEXTS) and lines[served.url] == lines[served.address]

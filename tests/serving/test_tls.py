"""--ssl_cert/--ssl_key serve over TLS; binding beyond loopback without TLS logs a warning."""

import os
import shutil
import subprocess
import sys

import pytest

from keras_bert_lite.serving import ServerUnavailableError, ServingClient
from tests.serving.server_process import REPO_ROOT

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
NO_TLS_WARNING = "without TLS: anyone who can reach this address can call the model"


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """(certificate path, key path) of a self-signed certificate for localhost and 127.0.0.1."""
    directory = tmp_path_factory.mktemp("tls")
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def test_tls_server_answers_tls_clients_only(toy_v1, start_server, certificate):
    cert, key = certificate
    server = start_server(toy_v1, "--ssl_cert", str(cert), "--ssl_key", str(key))
    with ServingClient("toy", server.address, timeout=30, root_certificates=cert.read_bytes()) as client:
        assert client.predict(["over tls"], output_filter=["length"])["length"].tolist() == [8]
    with pytest.raises(ServerUnavailableError):
        ServingClient("toy", server.address, timeout=5).predict(["in clear"])
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "keras_bert_lite.serving.client_cli",
            "--model_name",
            "toy",
            "--server",
            server.address,
            "--ssl_ca",
            str(cert),
        ],
        input="hello\n",
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    assert result.returncode == 0, result.stderr
    assert '"length": 5' in result.stdout
    assert "TLS on" in server.log() and NO_TLS_WARNING not in server.log()


def test_binding_every_interface_without_tls_warns(toy_v1, start_server):
    server = start_server(toy_v1, "--host", "0.0.0.0")
    assert f"Serving on 0.0.0.0:0 {NO_TLS_WARNING}" in server.log()


def test_binding_every_interface_with_tls_does_not_warn(toy_v1, start_server, certificate):
    cert, key = certificate
    server = start_server(toy_v1, "--host", "0.0.0.0", "--ssl_cert", str(cert), "--ssl_key", str(key))
    assert NO_TLS_WARNING not in server.log()


def test_loopback_without_tls_does_not_warn(toy_server):
    assert NO_TLS_WARNING not in toy_server.log()

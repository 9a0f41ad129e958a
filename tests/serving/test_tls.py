"""--ssl_cert/--ssl_key serve gRPC and REST over TLS; binding beyond loopback without TLS logs a warning.

Two servers bound to every interface serve all the tests but the last: one with TLS, one without."""

import re
import shutil
import ssl
import subprocess

import pytest

from keras_bert_lite.serving import ServerUnavailableError, ServingClient
from keras_bert_lite.serving.client_cli import main
from tests.serving import http
from tests.serving.server_process import ServerProcess

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
NO_TLS_WARNING = "without TLS: anyone who can reach this address can call the model"
PREDICT = "/v1/models/toy:predict"


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


@pytest.fixture(scope="module")
def tls_server(toy_v1, certificate):
    """A server with TLS, bound to every interface (called on 127.0.0.1)."""
    cert, key = certificate
    server = ServerProcess(toy_v1, "--host", "0.0.0.0", "--ssl_cert", str(cert), "--ssl_key", str(key))
    try:
        yield server.wait_ready()
    finally:
        server.kill()


@pytest.fixture(scope="module")
def exposed_server(toy_v1):
    """A server without TLS, bound to every interface."""
    server = ServerProcess(toy_v1, "--host", "0.0.0.0")
    try:
        yield server.wait_ready()
    finally:
        server.kill()


def test_tls_server_answers_tls_clients_only(tls_server, certificate, tmp_path, capsys):
    cert, _ = certificate
    with ServingClient("toy", tls_server.address, timeout=30, root_certificates=cert.read_bytes()) as client:
        assert client.predict(["over tls"], output_filter=["length"])["length"].tolist() == [8]
    with pytest.raises(ServerUnavailableError):
        ServingClient("toy", tls_server.address, timeout=5).predict(["in clear"])
    (tmp_path / "texts.txt").write_text("hello\n")
    args = ["--model_name", "toy", "--server", tls_server.address, "--ssl_ca", str(cert), str(tmp_path / "texts.txt")]
    assert main(args) == 0
    assert '"length": 5' in capsys.readouterr().out
    assert "TLS on" in tls_server.log()


def test_rest_over_tls_answers_https_only(tls_server, certificate, tmp_path, capsys):
    cert, _ = certificate
    context = ssl.create_default_context(cafile=str(cert))
    status, _, answer = http.post(tls_server.url + PREDICT, {"instances": ["over tls"]}, context=context)
    assert status == 200 and answer["predictions"][0]["length"] == 8
    assert re.search(r"Exporting HTTP/REST API at \S+ \(TLS on,", tls_server.log())  # the REST line's own report
    with pytest.raises(OSError):  # plain HTTP on the TLS port: the handshake fails, nothing is answered
        http.post(f"http://127.0.0.1:{tls_server.rest_port}{PREDICT}", {"instances": ["in clear"]}, timeout=10)
    (tmp_path / "texts.txt").write_text("hello\n")
    args = ["--model_name", "toy", "--server", tls_server.url, "--ssl_ca", str(cert), str(tmp_path / "texts.txt")]
    assert main(args) == 0
    assert '"length": 5' in capsys.readouterr().out


def test_binding_every_interface_without_tls_warns(exposed_server):
    assert f"Serving on 0.0.0.0:0 {NO_TLS_WARNING}" in exposed_server.log()


def test_binding_every_interface_without_tls_warns_for_rest_too(exposed_server):
    assert f"Serving REST on 0.0.0.0:0 {NO_TLS_WARNING}" in exposed_server.log()


def test_binding_every_interface_with_tls_does_not_warn(tls_server):
    assert NO_TLS_WARNING not in tls_server.log()


def test_loopback_without_tls_does_not_warn(toy_server):
    assert NO_TLS_WARNING not in toy_server.log()

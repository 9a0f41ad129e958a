"""Fixtures for the serving tests: toy model trees and model servers in subprocesses."""

import pytest

from tests.serving.exports import export_tiny_classifier
from tests.serving.server_process import ServerProcess
from tests.serving.toy_models import ToyModel, export_version


@pytest.fixture
def start_server():
    """Factory: start_server(base_path, *flags, **options) -> a ready ServerProcess (options: ServerProcess's),
    stopped after the test, pass or fail."""
    servers = []

    def start(base_path, *flags, **options):
        server = ServerProcess(base_path, *flags, **options)
        servers.append(server)
        return server.wait_ready()

    yield start
    for server in servers:
        server.kill()


@pytest.fixture(scope="package")
def toy_v1(tmp_path_factory):
    """A model base path holding version 1 of the toy model (tag "v1")."""
    base_path = tmp_path_factory.mktemp("toy")
    export_version(ToyModel("v1"), base_path, 1)
    return base_path


@pytest.fixture(scope="package")
def toy_server(toy_v1):
    """One server for the read-only tests, with batching on so that every test also goes through the batcher."""
    server = ServerProcess(toy_v1, "--max_batch_size", "8", "--batch_timeout_ms", "2")
    try:
        yield server.wait_ready()
    finally:
        server.kill()


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    """Replaces the root conftest's per-test Keras reset (~0.2 s each): these tests never touch Keras state."""
    yield


@pytest.fixture(scope="package")
def exported_classifier(tmp_path_factory, uncased_vocab_path):
    """A model base path holding version 1 of a tiny (random) text classifier, exported by our exporter with the
    bert-base-uncased vocab: serving_default, preprocess, encode and classify, as real exports have them."""
    base_path = tmp_path_factory.mktemp("classifier")
    export_tiny_classifier(uncased_vocab_path, base_path)
    return base_path

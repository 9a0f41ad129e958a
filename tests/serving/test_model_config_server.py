"""kbl-serve --model_config_file with a real server: two models and a `specific` version policy from one file,
over gRPC and REST, and an edit of the file that adds one model and removes another while a third is under load,
without one failed request."""

import os
import threading

import pytest

from keras_bert_lite.serving import ServingClient
from keras_bert_lite.serving.client import ServingClientError
from keras_bert_lite.serving.rest_client import RestClient
from tests.serving.toy_models import ToyModel, export_version


def model_config(**models):
    """A ModelServerConfig text with one config per `name=(base_path, policy text or "")`."""
    configs = "".join(
        f'  config {{ name: "{name}" base_path: "{path}" model_platform: "tensorflow" {policy} }}\n'
        for name, (path, policy) in models.items()
    )
    return "model_config_list {\n" + configs + "}\n"


def write_atomically(path, text):
    """As an editor or a config-map update does: the new file renamed over the old one."""
    staged = f"{path}.new"
    with open(staged, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(staged, path)


@pytest.fixture
def trees(tmp_path):
    """Base paths: reviews (versions 1 and 2), minilm (1) and tagger (1); each version's tag names it."""
    for name, versions in {"reviews": (1, 2), "minilm": (1,), "tagger": (1,)}.items():
        for version in versions:
            export_version(ToyModel(f"{name}-{version}"), tmp_path / name, version)
    return tmp_path


def tag(client, version=None):
    return client.predict(["abc"], version=version)["tag"][0].decode()


def test_two_models_and_a_specific_policy_then_an_edit_under_load_fails_no_request(trees, tmp_path, start_server):
    config = tmp_path / "models.config"
    reviews = (trees / "reviews", "model_version_policy { specific { versions: 1 } }")
    write_atomically(config, model_config(reviews=reviews, minilm=(trees / "minilm", "")))
    server = start_server(
        None, "--model_config_file_poll_wait_seconds", "0.1", "--poll_seconds", "0.1", config_file=config
    )
    server.wait_for_log("Successfully loaded servable version {name: minilm version: 1}")
    server.wait_for_log("Successfully loaded servable version {name: reviews version: 1}")
    with ServingClient("reviews", server.address) as grpc_reviews, RestClient("minilm", server.url) as rest_minilm:
        assert tag(grpc_reviews) == "reviews-1"  # the policy's version, not the latest (2)
        with pytest.raises(ServingClientError, match="NOT_FOUND"):
            tag(grpc_reviews, version=2)
        assert tag(rest_minilm) == "minilm-1"
        with RestClient("reviews", server.url) as rest_reviews:
            assert rest_reviews.predict(["abc"])["tag"].tolist() == [b"reviews-1"]

    failures, answers, stop, went_on = [], [], threading.Event(), threading.Event()
    answers_at_edit = None  # how many answers the load had when the edit had taken effect

    def load():
        with ServingClient("reviews", server.address, timeout=30) as client:
            while not stop.is_set():
                try:
                    answers.append(tag(client))
                except Exception as error:  # noqa: BLE001 - every failure is the test's finding
                    failures.append(error)
                if answers_at_edit is not None and len(answers) >= answers_at_edit + 20:
                    went_on.set()

    threads = [threading.Thread(target=load) for _ in range(3)]
    for thread in threads:
        thread.start()
    try:
        write_atomically(config, model_config(reviews=reviews, tagger=(trees / "tagger", "")))  # +tagger -minilm
        server.wait_for_log("Successfully loaded servable version {name: tagger version: 1}")
        server.wait_for_log("Successfully unloaded servable version {name: minilm version: 1}")
        with ServingClient("tagger", server.address) as tagger, ServingClient("minilm", server.address) as minilm:
            assert tag(tagger) == "tagger-1"
            with pytest.raises(ServingClientError, match="NOT_FOUND"):
                tag(minilm)
        answers_at_edit = len(answers)
        assert went_on.wait(60), "the load did not go on after the edit"
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert not failures, failures[:3]
    assert set(answers) == {"reviews-1"} and len(answers) >= 20
    assert server.terminate() == 0

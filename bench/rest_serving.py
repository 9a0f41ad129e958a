"""REST against gRPC through `kbl-serve`: what TF Serving's JSON API costs over its gRPC API, same server, same model.

    .venv/bin/python bench/rest_serving.py [--calls 300] [--preset tiny]

A randomly initialised classifier (bert-base-uncased vocab, `--preset`, tf-serving target) served by
`kbl-serve`; one client at a time, one call after the other, the three clients in alternation (so a slow spell
of the shared host falls on all three), batches of 1 and 32 real sentences (Python docs):
- gRPC: `ServingClient.predict` (one channel, kept open);
- REST, keep-alive: `http.client` on one connection, the row format ({"instances": [...]}) as curl would send it;
- REST, `RestClient.predict`: urllib, a new connection per call, the columnar format.
Then, in process, the server's JSON work alone: parsing a row-format text body into a PredictRequest, and writing
the answer's JSON for the classifier's outputs and for `encode`'s sequence_output ([batch, 128, H] float32).
Prints a table; writes bench/results/rest_serving.json.
"""

import argparse
import http.client
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "peers"))

import common  # noqa: E402  (bench/peers/common.py: machine_info)

import keras_bert_lite as kbl  # noqa: E402  (first: it turns oneDNN on)

# isort: split
import tensorflow as tf  # noqa: E402
from tensorflow.core.framework import types_pb2  # noqa: E402
from tensorflow.core.protobuf import meta_graph_pb2  # noqa: E402
from tensorflow_serving.apis import predict_pb2  # noqa: E402

from keras_bert_lite.data.corpora import pydoc_sentences  # noqa: E402
from keras_bert_lite.serving import ServingClient  # noqa: E402
from keras_bert_lite.serving.json_predict import answer_json, fill_inputs  # noqa: E402
from keras_bert_lite.serving.json_request import parse_document  # noqa: E402
from keras_bert_lite.serving.limits import RequestLimits  # noqa: E402
from keras_bert_lite.serving.rest_api import json_bytes  # noqa: E402
from keras_bert_lite.serving.rest_client import RestClient  # noqa: E402
from keras_bert_lite.text import Vocab  # noqa: E402
from keras_bert_lite.utils.files import atomic_write_text  # noqa: E402
from tests.serving.server_process import ServerProcess  # noqa: E402


class KeepAlive:
    """Row-format predict calls on one kept-open HTTP connection (what curl or requests.Session send)."""

    def __init__(self, port):
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def predict(self, texts):
        self.connection.request(
            "POST", "/v1/models/bert:predict", json.dumps({"instances": texts}), {"Content-Type": "application/json"}
        )
        response = self.connection.getresponse()
        body = response.read()
        assert response.status == 200, body[:300]
        return json.loads(body)


def paired(calls, clients, batches):
    """{client: [seconds]}: `calls` calls of each client, in alternation, each on the next batch of texts."""
    times = {name: [] for name in clients}
    for index in range(calls):
        texts = batches[index % len(batches)]
        for name, call in clients.items():
            start = time.perf_counter()
            call(texts)
            times[name].append(time.perf_counter() - start)
    return times


def summary(seconds):
    ordered = sorted(seconds)
    return {
        "p50_ms": 1000 * statistics.median(ordered),
        "p99_ms": 1000 * ordered[int(0.99 * (len(ordered) - 1))],
        "calls": len(ordered),
    }


def request_ms(texts, repeats=20):
    """p50 ms of the server's JSON work on a row-format text body: parse it and fill the PredictRequest."""
    infos = {"text": meta_graph_pb2.TensorInfo(dtype=types_pb2.DT_STRING)}
    body = json.dumps({"instances": texts}).encode()
    return _p50_ms(
        lambda: fill_inputs(parse_document(body), infos, predict_pb2.PredictRequest(), RequestLimits()), repeats
    )


def response_cost(outputs, repeats=20):
    """(p50 ms of writing a row-format answer's JSON, its bytes, the PredictResponse proto's bytes)."""
    response = predict_pb2.PredictResponse()
    for key, value in outputs.items():
        response.outputs[key].CopyFrom(tf.make_tensor_proto(value.numpy()))
    answer = json_bytes(answer_json(response, "instances"))
    return _p50_ms(lambda: json_bytes(answer_json(response, "instances")), repeats), len(answer), response.ByteSize()


def _p50_ms(function, repeats):
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        seconds.append(time.perf_counter() - start)
    return 1000 * statistics.median(seconds)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "rest_serving.json"))
    args = parser.parse_args(argv)

    vocab = Vocab.from_file(os.path.join(kbl.minilm_dir(), "vocab.txt"))  # bert-base-uncased's
    texts = pydoc_sentences(2000)
    model = kbl.build_classifier(kbl.BertConfig.of_size(args.preset, vocab_size=len(vocab)), num_classes=2)
    task = kbl.TaskSpec("classification", lower_case=True, seq_length=128, labels=("negative", "positive"))
    base_path = os.path.join(tempfile.mkdtemp(), "bert")
    path = kbl.export_saved_model(model, task, vocab, base_path, target="tf-serving")
    results = {"machine": common.machine_info(), "preset": args.preset, "rows": [], "json": []}

    server = ServerProcess(base_path, model_name="bert")
    try:
        server.wait_ready(timeout=300)
        with (
            ServingClient("bert", server.address, timeout=120) as grpc_client,
            RestClient("bert", server.url, timeout=120) as rest_client,
        ):
            keep_alive = KeepAlive(server.rest_port)
            clients = {
                "gRPC (ServingClient)": grpc_client.predict,
                "REST keep-alive (row format)": keep_alive.predict,
                "REST RestClient (new connection)": rest_client.predict,
            }
            for batch in (1, 32):
                batches = [texts[i : i + batch] for i in range(0, len(texts) - batch, batch)]
                paired(10, clients, batches)  # warm-up: the first calls trace the model
                for name, seconds in paired(args.calls, clients, batches).items():
                    results["rows"].append({"client": name, "batch": batch, **summary(seconds)})
    finally:
        server.terminate()

    import tensorflow_text  # noqa: F401  (the tf-serving target's ops, for the in-process JSON timing)

    loaded = tf.saved_model.load(path)
    for batch in (1, 32):
        packed = loaded.signatures["preprocess"](text=tf.constant(texts[:batch]))
        answers = {
            "serving_default": loaded.signatures["serving_default"](text=tf.constant(texts[:batch])),
            "encode": {"sequence_output": loaded.signatures["encode"](**packed)["sequence_output"]},
        }
        for signature, outputs in answers.items():
            ms, json_size, proto_size = response_cost(outputs)
            results["json"].append(
                {
                    "outputs": signature,
                    "batch": batch,
                    "request_ms": request_ms(texts[:batch]),
                    "response_ms": ms,
                    "response_bytes": json_size,
                    "proto_bytes": proto_size,
                }
            )

    print(
        f"\nPredict through kbl-serve, {args.preset} classifier, one client, calls in alternation "
        f"({os.cpu_count()} CPU cores)"
    )
    print("| client | batch | p50 ms | p99 ms |")
    print("|---|---|---|---|")
    for r in results["rows"]:
        print(f"| {r['client']} | {r['batch']} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} |")
    print("\nThe server's JSON work alone (in process, p50)")
    print("| outputs | batch | text body -> PredictRequest ms | response -> JSON ms | JSON bytes | proto bytes |")
    print("|---|---|---|---|---|---|")
    for r in results["json"]:
        print(
            f"| {r['outputs']} | {r['batch']} | {r['request_ms']:.2f} | {r['response_ms']:.2f} | "
            f"{r['response_bytes']} | {r['proto_bytes']} |"
        )
    atomic_write_text(args.out, json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()

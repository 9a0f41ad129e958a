"""Many concurrent clients: every request answered, correctly, with no errors."""

import concurrent.futures
import time

from keras_bert_lite.serving import ServingClient

CLIENTS = 16
REQUESTS = 2000


def test_2000_requests_from_16_concurrent_clients(toy_server):
    def worker(index):
        answers = []
        with ServingClient("toy", toy_server.address, timeout=60) as client:
            for i in range(index, REQUESTS, CLIENTS):
                text = "x" * (i % 50)
                answers.append(client.predict([text], output_filter=["length"])["length"].tolist() == [i % 50])
        return answers

    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
        answers = [ok for result in pool.map(worker, range(CLIENTS)) for ok in result]
    elapsed = time.monotonic() - start
    assert len(answers) == REQUESTS and all(answers), f"{answers.count(False)} wrong answers"
    print(f"{REQUESTS} requests from {CLIENTS} clients in {elapsed:.1f} s ({REQUESTS / elapsed:.0f} req/s)")

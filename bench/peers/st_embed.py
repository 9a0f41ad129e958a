"""sentence-transformers' side of `bench/embedding_speed.py`: `SentenceTransformer.encode` on the texts, timed.

    bench/.venvs/goldens/bin/python bench/peers/st_embed.py SPEC.json OUT.json

SPEC: {"model": dir, "texts": file of JSON lines, "mode": "eager" | "compile", "batch_size": n, "threads": n,
"rounds": n, "vectors": .npy path}. OUT: load seconds, compile (warm-up) seconds, each round's seconds, and the
vectors of the last round written to SPEC's "vectors" (normalised, as encode(normalize_embeddings=True) gives).
Imports only torch and sentence-transformers (never keras_bert_lite): it runs in the reference venv.
"""

import json
import sys
import time

import numpy as np
import torch
from sentence_transformers import SentenceTransformer


def load(spec: dict) -> tuple[SentenceTransformer, float]:
    """The model, in eval mode, compiled when asked (dynamic shapes: every batch has its own length)."""
    start = time.perf_counter()
    model = SentenceTransformer(spec["model"], device="cpu")
    model.eval()
    if spec["mode"] == "compile":
        model[0].auto_model = torch.compile(model[0].auto_model, dynamic=True)
    return model, time.perf_counter() - start


def encode(model: SentenceTransformer, texts: list[str], batch_size: int) -> np.ndarray:
    with torch.inference_mode():
        return model.encode(texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True)


def main(spec_path: str, out_path: str) -> None:
    with open(spec_path) as f:
        spec = json.load(f)
    torch.set_num_threads(spec["threads"])
    with open(spec["texts"]) as f:
        texts = [json.loads(line)["text"] for line in f]
    model, load_seconds = load(spec)
    start = time.perf_counter()
    warm_texts = texts if spec["mode"] == "compile" else texts[: 2 * spec["batch_size"]]
    encode(model, warm_texts, spec["batch_size"])  # warm-up: for compile, every batch shape once
    warm_up = time.perf_counter() - start
    rounds = []
    for _ in range(spec["rounds"]):
        start = time.perf_counter()
        vectors = encode(model, texts, spec["batch_size"])
        rounds.append(time.perf_counter() - start)
    np.save(spec["vectors"], vectors.astype(np.float32))
    with open(out_path, "w") as f:
        json.dump(
            {
                "load_seconds": load_seconds,
                "warm_up_seconds": warm_up,
                "round_seconds": rounds,
                "torch": torch.__version__,
                "threads": torch.get_num_threads(),
            },
            f,
        )


if __name__ == "__main__":
    main(*sys.argv[1:3])

"""Matmul speed at the encoder's own shapes: tf.matmul (as our graph mode runs it) vs torch.matmul, side by side.

    .venv/bin/python bench/matmul_shapes.py [--presets tiny,mini] [--rounds 3]

Why the forward pass at tiny and mini is not ahead in graph mode: the peak (2048³) says little about the
small products a tiny encoder is made of. For each preset, at seq 128 and batch 32, times every matmul of one
encoder layer — the fused QKV projection, the output projection, the two FFN products (dense, `[b·s, K] ×
[K, N]`) and the attention score and context products (batched over `b·heads`) — as one tf.function call
(`tf.reduce_sum` of the product, so each call returns a scalar) in this process, with TensorFlow's oneDNN
kernels on as keras_bert_lite turns them on, and as `torch.matmul` in `bench/.venvs/hf` (the venv
`bench/compare_peers.py` creates), under `torch.no_grad`, all cores. Rounds alternate TF and torch; each
cell is the median over rounds of each round's median. Prints a table; writes bench/results/matmul_shapes.json.
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's keras_bert_lite, as the other bench scripts
sys.path.insert(0, str(ROOT / "bench" / "peers"))

import common  # noqa: E402  (stdlib only: importable from the torch venv too)

BATCH, SEQ, RUNS = 32, 128, 30


def layer_shapes(preset: str) -> dict:
    """name -> (batch or None, M, K, N): one encoder layer's products at BATCH x SEQ."""
    s = common.shape(preset)
    h, i, heads = s["hidden"], s["intermediate"], s["heads"]
    rows, d = BATCH * SEQ, h // heads
    return {
        "qkv": (None, rows, h, 3 * h),
        "attention output": (None, rows, h, h),
        "ffn in": (None, rows, h, i),
        "ffn out": (None, rows, i, h),
        "scores": (BATCH * heads, SEQ, d, SEQ),
        "context": (BATCH * heads, SEQ, SEQ, d),
    }


def flops(shape) -> float:
    batch, m, k, n = shape
    return 2 * (batch or 1) * m * k * n


def time_tf(shapes: dict) -> dict:
    import keras_bert_lite  # noqa: F401  (first: it turns TensorFlow's oneDNN kernels on)

    # isort: split
    import tensorflow as tf

    out = {}
    for name, (batch, m, k, n) in shapes.items():
        lead = [batch] if batch else []
        a, b = tf.random.normal(lead + [m, k]), tf.random.normal(lead + [k, n])
        run = tf.function(lambda a, b: tf.reduce_sum(tf.matmul(a, b)))
        out[name] = common.median_seconds(lambda: run(a, b).numpy(), RUNS, warmup=3)
    return out


def time_torch(shapes: dict) -> dict:
    import torch

    torch.set_num_threads(os.cpu_count())
    out = {}
    with torch.no_grad():
        for name, (batch, m, k, n) in shapes.items():
            lead = [batch] if batch else []
            a, b = torch.randn(*lead, m, k), torch.randn(*lead, k, n)
            out[name] = common.median_seconds(lambda: torch.matmul(a, b).sum().item(), RUNS, warmup=3)
    return out


def torch_round(presets: list[str], python: str) -> dict:
    """One round of torch timings, in the torch venv's Python (this script, `--worker torch`)."""
    done = subprocess.run(
        [python, __file__, "--worker", "torch", "--presets", ",".join(presets)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default="tiny,mini")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--torch-python", default=str(ROOT / "bench" / ".venvs" / "hf" / "bin" / "python"))
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "matmul_shapes.json"))
    parser.add_argument("--worker", choices=["torch"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    presets = args.presets.split(",")
    unknown = set(presets) - set(common.PRESETS)
    if unknown:
        parser.error(f"unknown presets {sorted(unknown)}; choose from {','.join(common.PRESETS)}")
    if args.worker:  # one torch round, printed as JSON for the parent
        print(json.dumps({p: time_torch(layer_shapes(p)) for p in presets}))
        return
    if not os.path.exists(args.torch_python):
        parser.error(
            f"{args.torch_python} not found: run bench/compare_peers.py once (it creates bench/.venvs/hf) "
            "or pass --torch-python"
        )

    rounds = {"tf": [], "torch": []}
    for r in range(args.rounds):
        rounds["tf"].append({p: time_tf(layer_shapes(p)) for p in presets})
        rounds["torch"].append(torch_round(presets, args.torch_python))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)

    rows = []
    print(
        f"\nMatmul GFLOP/s at the encoder's shapes (batch {BATCH}, seq {SEQ}, fp32, {os.cpu_count()} cores; "
        f"median of {args.rounds} rounds)\n"
    )
    print("| preset | product | shape | tf.matmul (oneDNN) | torch.matmul | tf / torch |")
    print("|---|---|---|---|---|---|")
    for p in presets:
        for name, shape in layer_shapes(p).items():
            tf_s = statistics.median(r[p][name] for r in rounds["tf"])
            torch_s = statistics.median(r[p][name] for r in rounds["torch"])
            row = {
                "preset": p,
                "product": name,
                "shape": shape,
                "tf_gflops": flops(shape) / tf_s / 1e9,
                "torch_gflops": flops(shape) / torch_s / 1e9,
                "tf_over_torch": torch_s / tf_s,
            }
            rows.append(row)
            batch, m, k, n = shape
            dims = f"{batch}×" if batch else ""
            print(
                f"| {p} | {name} | {dims}{m}×{k}×{n} | {row['tf_gflops']:.0f} | {row['torch_gflops']:.0f} | "
                f"{row['tf_over_torch']:.2f}× |"
            )
    common.write_results(args.out, {"batch": BATCH, "seq": SEQ, "rounds": rounds, "rows": rows})
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()

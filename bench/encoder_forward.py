"""Encoder forward throughput (sequences/s) per preset, graph vs XLA, with model-FLOPs utilisation (MFU).

    .venv/bin/python bench/encoder_forward.py [--presets tiny,mini,small,base] [--batch 32] [--seq 128]
        [--policies float32,mixed_bfloat16]

MFU = achieved model FLOP/s / the matmul peak measured in the same run (best of square float32 tf.matmul
1024 and 2048). Model FLOPs count the matmuls of a forward pass (`bench/peers/common.encoder_flops`, the
formula compare_peers uses).
`--policies` takes Keras dtype policies, each measured in turn in the same run (default float32 only):
`mixed_bfloat16` shows what bf16 matmuls give on CPUs that have them (oneDNN uses AVX512_BF16/AMX); MFU is
always against the float32 peak. Prints a table and writes bench/results/encoder_forward.json.
"""

import argparse
import json
import os
import statistics
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
from keras_bert_lite import BertConfig, build_encoder  # noqa: E402  (first: it turns oneDNN on)

# isort: split

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from common import cpuinfo, encoder_flops, time_calls  # noqa: E402  (bench/peers/common.py, shared by bench scripts)

from keras_bert_lite.utils.files import atomic_write_text  # noqa: E402


def matmul_peak(sizes=(1024, 2048), runs: int = 10) -> float:
    """Measured float32 matmul FLOP/s: the best median over square tf.matmul sizes."""
    best = 0.0
    for n in sizes:
        a, b = tf.random.normal((n, n)), tf.random.normal((n, n))
        mm = tf.function(lambda: tf.reduce_sum(tf.matmul(a, b)))
        best = max(best, 2 * n**3 / statistics.median(time_calls(lambda: mm().numpy(), runs, warmup=1)))
    return best


def bench_encoder(preset: str, batch: int, seq: int, jit_compile: bool, runs: int, policy: str = "float32") -> float:
    config = BertConfig.of_size(preset)
    keras.mixed_precision.set_global_policy(policy)  # what the task scripts' --mixed_precision does
    encoder = build_encoder(config)
    rng = np.random.default_rng(0)
    inputs = {
        "input_word_ids": tf.constant(rng.integers(1000, config.vocab_size, (batch, seq)), tf.int32),
        "input_mask": tf.ones((batch, seq), tf.int32),
        "input_type_ids": tf.zeros((batch, seq), tf.int32),
    }
    forward = tf.function(lambda x: encoder(x, training=False)["sequence_output"], jit_compile=jit_compile)
    times = time_calls(lambda: forward(inputs).numpy(), runs, warmup=1, min_seconds=3.0)
    return batch / statistics.median(times)


def cpu_flags() -> list:
    """The CPU's bf16/AMX feature flags (what decides whether bf16 matmuls are fast)."""
    flags = (cpuinfo("flags") or "").split()
    return sorted(flag for flag in flags if "bf16" in flag or flag.startswith("amx"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default="tiny,mini,small,base")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument(
        "--policies", default="float32", help="comma-separated Keras dtype policies, e.g. float32,mixed_bfloat16"
    )
    parser.add_argument("--runs", type=int, default=5, help="timed runs per case (at least 3 s of runs)")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "encoder_forward.json"))
    args = parser.parse_args(argv)

    peak = matmul_peak()
    rows = []
    for preset in args.presets.split(","):
        config = BertConfig.of_size(preset)
        flops = encoder_flops(config.num_layers, config.hidden_size, config.intermediate_size, args.seq)
        for policy in args.policies.split(","):
            row = {"preset": preset, "policy": policy, "gflop_per_seq": flops / 1e9}
            for mode, jit in (("graph", False), ("xla", True)):
                seq_per_s = bench_encoder(preset, args.batch, args.seq, jit, args.runs, policy)
                row[f"{mode}_seq_per_s"] = seq_per_s
                row[f"{mode}_mfu"] = seq_per_s * flops / peak
            rows.append(row)
            print(
                f"  {preset} {policy}: graph {row['graph_seq_per_s']:.1f} seq/s, xla {row['xla_seq_per_s']:.1f} seq/s",
                file=sys.stderr,
            )

    print(
        f"\nEncoder forward, batch {args.batch}, seq {args.seq}; float32 matmul peak {peak / 1e9:.1f} GFLOP/s "
        f"(best of tf.matmul 1024^3, 2048^3), {os.cpu_count()} CPU cores, TF {tf.__version__}"
    )
    print("| preset | policy | GFLOP/seq | graph seq/s | graph MFU | XLA seq/s | XLA MFU |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['preset']} | {r['policy']} | {r['gflop_per_seq']:.3f} | {r['graph_seq_per_s']:.1f} | "
            f"{r['graph_mfu']:.0%} | {r['xla_seq_per_s']:.1f} | {r['xla_mfu']:.0%} |"
        )
    result = {
        "batch": args.batch,
        "seq": args.seq,
        "matmul_peak_gflops": peak / 1e9,
        "rows": rows,
        "tensorflow": tf.__version__,
        "cpu_count": os.cpu_count(),
        "cpu_flags": cpu_flags(),
    }
    atomic_write_text(args.out, json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()

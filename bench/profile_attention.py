"""Where the encoder forward's op time goes: the attention core against the projections, LayerNorm and the rest.

    .venv/bin/python bench/profile_attention.py [--preset small] [--seq 512] [--batch 8] [--calls 5]
                                                [--precision float32|bfloat16] [--impls ours,hf,kerashub] [--out PATH]

For one shape (float32, or `--precision bfloat16`; CPU) it profiles the encoder forward of ours, Hugging Face
transformers and KerasHub, each in its own process and venv (bench/peers/suite.py's IMPLEMENTATIONS, built as
bench/peers/<impl>.py builds them for `compare_peers.py --benchmarks forward`), and sorts every op's time into
five categories:

  attention  the attention core: the QK^T score matmul, scaling and mask add, softmax, the probs·V matmul and the
             head transposes/reshapes around them (with oneDNN ours fuses the score matmul, scaling and mask add
             into one kernel);
  dense      the dense projections: QKV, attention output and FFN matmuls with their bias adds and GELU (and the
             pooler's, where an implementation computes it); a residual add fused into a matmul counts here;
  layernorm  LayerNorm;
  embeddings the word/position/segment lookups and their sum;
  other      everything else: unfused residual adds, casts, slicing, the mask's preparation outside attention.

TensorFlow (ours: `kbl.inference_function` in graph mode, the library's CPU default; KerasHub: `BertBackbone` in a
`tf.function`): `tf.profiler.experimental` writes an XSpace (`*.xplane.pb`), parsed with the `xplane_pb2` module
shipped inside TensorFlow; each op kernel's event on a host thread is "node_name:OpType", and its self time (its
duration less any op event nested in it on the same thread) is summed per node. The category comes from the
Keras layer scopes in the node name and the op type: a dense layer's scope first (KerasHub's EinsumDense
projections run as batch matmuls), then the type (batch matmuls and softmax: attention; 2-D matmuls: dense), then
the attention and embedding scopes (ours: keras_bert_lite/layers/attention.py, whose mask penalty lives in the
top-level "zz_attention_key_penalty" scope in the form oneDNN fuses, and in "attention" with the extra column of q
and k in the other; KerasHub: keras.layers.MultiHeadAttention "self_attention_layer",
its "query"/"key"/"value"/"attention_output" projections and the feedforward denses).
torch (HF `BertModel`, eager, the attention implementation transformers picks: sdpa): `torch.profiler` with a
`record_function` range around every module's forward; each aten op's self CPU time goes to the innermost module
around it (Linear and the activation: dense; LayerNorm; BertEmbeddings/Embedding; BertSelfAttention outside its
Linears: attention; anything else: other).

Op time is the sum of the op events' durations, divided by the profiled calls: ops that run at the same time on
different threads (ours runs two batch slices side by side) add up, so it can exceed the wall time per call,
which is reported beside it. Profilers add per-op overhead; compare the shares, not the milliseconds with
compare_peers'. Output: a markdown table (category -> ms and % of op time, per implementation) on stdout and a
JSON file with each category's largest ops, for checking the mapping.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / "bench" / "peers"
sys.path.insert(0, str(PEERS))

import common  # noqa: E402

CATEGORIES = ("attention", "dense", "layernorm", "embeddings", "other")
LABELS = {
    "attention": "attention core (QK^T, scale + mask, softmax, ·V, head transposes)",
    "dense": "dense projections (QKV, output, FFN matmuls + bias/GELU)",
    "layernorm": "LayerNorm",
    "embeddings": "embeddings",
    "other": "other",
}
IMPL_LABELS = {"ours": "ours (graph)", "hf": "HF eager", "kerashub": "KerasHub graph"}
TOP_OPS = 8  # largest ops per category kept in the JSON

# TensorFlow op types that decide the category by themselves (oneDNN rewrites add "_Mkl"/"_Fused" prefixes).
# Erf: our GELU runs in the block's own scope, not the intermediate Dense's; oneDNN normally fuses it into the
# matmul, and where it does not, only its erf is recognised here (its mul/add ops fall to "other").
TF_ATTENTION_TYPES = re.compile(r"^(_Mkl|_Fused|_MklFused|_MklNative)*(BatchMatMul(V2|V3)?|Softmax)$")
TF_DENSE_TYPES = re.compile(r"^(_Mkl|_Fused|_MklFused|_MklNative|_MklNativeFused)*(MatMul|BiasAdd|Erf|Erfc|Gelu)$")
TF_LAYERNORM_TYPES = re.compile(r"^(_Mkl|_MklNative)*(LayerNorm|FusedBatchNorm(V2|V3)?)$")
# Ops that call a function: their own time is the call's dispatch, their body's ops are traced themselves.
TF_CALL_TYPES = re.compile(r"^(__.*|(Stateful)?PartitionedCall|While|If|StatelessIf|StatelessWhile)$")
# Keras layer scopes (one component of the node name, a "_1" uniquifier stripped).
TF_ATTENTION_SCOPES = {"attention", "self_attention_layer", "zz_attention_key_penalty"}
TF_DENSE_SCOPES = {
    "query",
    "key",
    "value",
    "attention_output",
    "intermediate",
    "output",
    "feedforward_intermediate_dense",
    "feedforward_output_dense",
    "pooler",
    "pooled_dense",
}

TORCH_MARK = "module::"  # prefix of the record_function range put around each module's forward
TORCH_DENSE_MODULES = re.compile(r"^(Linear|BertIntermediate|BertPooler|Tanh|GELU.*|.*Activation)$")
TORCH_MODULES = {
    "LayerNorm": "layernorm",
    "Embedding": "embeddings",
    "BertEmbeddings": "embeddings",
    "BertSelfAttention": "attention",
    "BertSdpaSelfAttention": "attention",
}


# ------------------------------------------------------------------------------------------ categories


def scope_components(node_name: str) -> set[str]:
    """The scopes of a TensorFlow node name, each without trailing "_<n>" (Keras' uniquifiers, layer indices):
    "functional_1/layer_0_1/attention_2/MatMul" -> {"functional", "layer", "attention"}."""
    parts = node_name.split("/")[:-1]
    return {re.sub(r"(_\d+)+$", "", part) for part in parts}


def tf_category(node_name: str, op_type: str) -> str:
    """The category of one TensorFlow op: a dense layer's scope first, then its type where that decides, then
    its other layer scopes.

    Args:
        node_name: the graph node's name (its name scopes joined by "/").
        op_type: the kernel's op type after Grappler's rewrites (e.g. "_MklFusedBatchMatMulV2").

    Returns:
        One of CATEGORIES.
    """
    scopes = scope_components(node_name)
    if "zz_attention_key_penalty" in scopes:
        return "attention"
    if scopes & TF_DENSE_SCOPES:  # KerasHub's EinsumDense projections run as BatchMatMulV2
        return "dense"
    if TF_ATTENTION_TYPES.match(op_type):
        return "attention"
    if TF_DENSE_TYPES.match(op_type):
        return "dense"
    if TF_LAYERNORM_TYPES.match(op_type) or any("layer_norm" in s for s in scopes):
        return "layernorm"
    if scopes & TF_ATTENTION_SCOPES:
        return "attention"
    if any("embedding" in s for s in scopes):
        return "embeddings"
    return "other"


def torch_category(module: str | None) -> str:
    """The category of an aten op from the class of the innermost module whose forward ran it (None: none)."""
    if module is None:
        return "other"
    if TORCH_DENSE_MODULES.match(module):
        return "dense"
    return TORCH_MODULES.get(module, "other")


def categorize(impl: str, ops: list[dict]) -> dict:
    """Sums a worker's per-op milliseconds (per call) into CATEGORIES, keeping each category's largest ops.

    Args:
        impl: "ours", "hf" or "kerashub" (torch ops are categorized by module, TensorFlow ops by name and type).
        ops: the worker's records: {"name", "op", "ms"} (TensorFlow) or {"module", "op", "ms"} (torch).

    Returns:
        {category: {"ms", "share", "top": [[op description, ms], ...]}} plus "total_ms".
    """
    out = {c: {"ms": 0.0, "top": []} for c in CATEGORIES}
    for op in ops:
        if impl == "hf":
            category, label = torch_category(op["module"]), f"{op['module']}:{op['op']}"
        else:
            category, label = tf_category(op["name"], op["op"]), f"{op['name']}:{op['op']}"
        out[category]["ms"] += op["ms"]
        out[category]["top"].append([label, op["ms"]])
    total = sum(out[c]["ms"] for c in CATEGORIES)
    for c in CATEGORIES:
        out[c]["share"] = out[c]["ms"] / total if total else 0.0
        out[c]["top"] = [
            [label, round(ms, 4)] for label, ms in sorted(out[c]["top"], key=lambda item: -item[1])[:TOP_OPS]
        ]
    out["total_ms"] = total
    return out


# ------------------------------------------------------------------------------------------ TensorFlow side


def tf_op_event(name: str) -> tuple[str, str] | None:
    """(node name, op type) of a host event named like "layer_0/attention/MatMul:_MklMatMul#id=3#"; None for
    events that are not op kernels (executor and runtime activity)."""
    match = re.fullmatch(r"([^\s:#]+):([A-Za-z_][A-Za-z0-9_]*)(#.*)?", name)
    return (match.group(1), match.group(2)) if match else None


def self_times(events: list[tuple[int, int, str]]) -> list[tuple[str, int]]:
    """Each event's duration less the events nested in it, for one thread's (start_ps, duration_ps, key) events."""
    out, stack = [], []  # stack: [end, key, self] of open events
    for start, duration, key in sorted(events, key=lambda e: (e[0], -e[1])):
        while stack and stack[-1][0] <= start:
            end, k, own = stack.pop()
            out.append((k, own))
        if stack:
            stack[-1][2] -= duration
        stack.append([start + duration, key, duration])
    out.extend((k, own) for _, k, own in stack)
    return out


def xplane_ops(logdir: str) -> dict[tuple[str, str], float]:
    """Picoseconds of self time per (node name, op type) over all host threads of the XSpace under `logdir`."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    paths = glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)
    if not paths:
        raise RuntimeError(f"no *.xplane.pb under {logdir}")
    totals: dict[tuple[str, str], float] = {}
    for path in paths:
        space = xplane_pb2.XSpace()
        with open(path, "rb") as f:
            space.ParseFromString(f.read())
        for plane in space.planes:
            if not plane.name.startswith("/host:"):
                continue
            names = {key: meta.name for key, meta in plane.event_metadata.items()}
            for line in plane.lines:
                events = [
                    (e.offset_ps, e.duration_ps, op)
                    for e in line.events
                    if (op := tf_op_event(names.get(e.metadata_id, "")))
                ]
                for key, ps in self_times(events):
                    totals[key] = totals.get(key, 0.0) + ps
    return totals


def profile_tf(run, calls: int, warmup: int) -> dict:
    """Profiles `calls` calls of `run` (after `warmup` unprofiled ones) with tf.profiler; per-call op records."""
    import tensorflow as tf

    for _ in range(warmup):
        run()
    options = tf.profiler.experimental.ProfilerOptions(
        host_tracer_level=3, python_tracer_level=0, device_tracer_level=0
    )
    with tempfile.TemporaryDirectory(prefix="profile_attention_") as logdir:
        tf.profiler.experimental.start(logdir, options=options)
        start = time.perf_counter()
        for _ in range(calls):
            run()
        wall = time.perf_counter() - start
        tf.profiler.experimental.stop()
        totals = xplane_ops(logdir)
    ops = [
        {"name": name, "op": op, "ms": ps / 1e9 / calls}
        for (name, op), ps in totals.items()
        if not TF_CALL_TYPES.match(op)
    ]
    calls_ms = sum(ps for (_, op), ps in totals.items() if TF_CALL_TYPES.match(op)) / 1e9 / calls
    return {"ops": ops, "wall_ms": wall * 1e3 / calls, "excluded_call_ops_ms": calls_ms}


def ours_forward(preset: str, seq: int, batch: int):
    """Our encoder forward as bench/peers/ours.py's forward runs it (graph mode, `kbl.inference_function`)."""
    import ours

    encoder = ours.kbl.build_encoder(ours.config(preset))
    b = ours.tensors(common.synthetic_batch(batch, seq))
    inputs = {"input_word_ids": b["word_ids"], "input_mask": b["mask"], "input_type_ids": b["type_ids"]}
    run = ours.kbl.inference_function(encoder, outputs="sequence_output", jit_compile=False)
    return lambda: run(inputs)


def kerashub_forward(preset: str, seq: int, batch: int):
    """KerasHub's BertBackbone forward as bench/peers/kerashub.py's forward runs it (graph mode)."""
    import kerashub
    import tensorflow as tf

    model = kerashub.backbone(preset)
    x = kerashub.inputs(common.synthetic_batch(batch, seq))
    run = tf.function(lambda x: model(x, training=False)["sequence_output"], jit_compile=False)
    return lambda: run(x)


# ------------------------------------------------------------------------------------------ torch side


def module_ranges(model) -> list:
    """Puts a `record_function("module::<Class>")` range around every submodule's forward; returns the hooks."""
    import torch

    stack, handles = [], []

    def enter(module, args):
        scope = torch.autograd.profiler.record_function(TORCH_MARK + type(module).__name__)
        scope.__enter__()
        stack.append(scope)

    def leave(module, args, output):
        stack.pop().__exit__(None, None, None)

    for module in model.modules():
        handles += [module.register_forward_pre_hook(enter), module.register_forward_hook(leave)]
    return handles


def innermost_module(event) -> str | None:
    """The class of the innermost module range around a torch profiler event (None: outside every module)."""
    parent = event.cpu_parent
    while parent is not None and not parent.name.startswith(TORCH_MARK):
        parent = parent.cpu_parent
    return None if parent is None else parent.name[len(TORCH_MARK) :]


def profile_hf(preset: str, seq: int, batch: int, calls: int, warmup: int, precision: str = "float32") -> dict:
    """HF BertModel's eager forward as bench/peers/hf.py's forward runs it, under torch.profiler."""
    import hf
    import torch

    hf.setup({"bench": "forward"})
    model = hf.BertModel(hf.config(preset)).eval()
    b = hf.tensors(common.synthetic_batch(batch, seq))

    def run():
        with torch.no_grad(), torch.autocast("cpu", torch.bfloat16, enabled=precision == "bfloat16"):
            return model(input_ids=b["word_ids"], attention_mask=b["mask"], token_type_ids=b["type_ids"])

    for _ in range(warmup):
        run()
    module_ranges(model)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        for _ in range(calls):
            run()
        wall = time.perf_counter() - start
    totals: dict[tuple[str | None, str], float] = {}
    for event in prof.events():
        if not event.name.startswith(TORCH_MARK):
            key = (innermost_module(event), event.name)
            totals[key] = totals.get(key, 0.0) + event.self_cpu_time_total
    ops = [{"module": module, "op": op, "ms": us / 1e3 / calls} for (module, op), us in totals.items()]
    return {"ops": ops, "wall_ms": wall * 1e3 / calls, "attn_implementation": model.config._attn_implementation}


def worker(args) -> None:
    """One implementation's profile, written as JSON to `args.worker_out` (runs in that implementation's venv)."""
    if args.worker == "hf":
        result = profile_hf(args.preset, args.seq, args.batch, args.calls, args.warmup, args.precision)
    else:
        if args.precision == "bfloat16":
            import keras

            keras.mixed_precision.set_global_policy("mixed_bfloat16")
        build = ours_forward if args.worker == "ours" else kerashub_forward
        result = profile_tf(build(args.preset, args.seq, args.batch), args.calls, args.warmup)
    result["python"] = sys.version.split()[0]
    common.write_json_atomic(args.worker_out, result)


# ------------------------------------------------------------------------------------------ orchestration


def run_worker(impl: str, args, workdir: str) -> dict:
    """Runs the profile of `impl` in its own venv and process; returns its categorized result or an error."""
    from compare_peers import IMPLEMENTATIONS, runner_env

    python = IMPLEMENTATIONS[impl].python
    if not os.path.exists(python):
        return {"error": f"no venv: {python} (bench/compare_peers.py creates it)"}
    out = os.path.join(workdir, f"{impl}.json")
    command = [
        python,
        str(Path(__file__).resolve()),
        "--worker",
        impl,
        "--worker-out",
        out,
        "--preset",
        args.preset,
        "--seq",
        str(args.seq),
        "--batch",
        str(args.batch),
        "--calls",
        str(args.calls),
        "--warmup",
        str(args.warmup),
        "--precision",
        args.precision,
    ]
    proc = subprocess.run(
        command, env=runner_env("forward"), cwd=ROOT, capture_output=True, text=True, timeout=args.timeout
    )
    if proc.returncode or not os.path.exists(out):
        return {"error": f"exit code {proc.returncode}: {proc.stderr[-1500:]}"}
    raw = common.load_json(out)
    extra = {k: v for k, v in raw.items() if k != "ops"}
    return {**categorize(impl, raw["ops"]), **extra}


def markdown(results: dict) -> str:
    """The category table: one row per category, one "ms (share)" column per implementation."""
    impls = [i for i in results if "error" not in results[i]]
    lines = ["| category | " + " | ".join(IMPL_LABELS[i] for i in impls) + " |", "|---|" + "---|" * len(impls)]
    for c in CATEGORIES:
        cells = [f"{results[i][c]['ms']:.1f} ms ({100 * results[i][c]['share']:.1f}%)" for i in impls]
        lines.append(f"| {LABELS[c]} | " + " | ".join(cells) + " |")
    lines.append("| **op time per forward** | " + " | ".join(f"{results[i]['total_ms']:.1f} ms" for i in impls) + " |")
    lines.append(
        "| wall time per forward (profiled) | " + " | ".join(f"{results[i]['wall_ms']:.1f} ms" for i in impls) + " |"
    )
    lines += [f"\n{i}: {results[i]['error']}" for i in results if "error" in results[i]]
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="small", choices=sorted(common.PRESETS))
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--calls", type=int, default=5, help="profiled forward calls per implementation")
    parser.add_argument(
        "--precision",
        default="float32",
        choices=("float32", "bfloat16"),
        help="bfloat16: ours and KerasHub under mixed_bfloat16, HF under torch.autocast (as "
        "compare_peers --shapes SEQ:bf16 runs them)",
    )
    parser.add_argument("--warmup", type=int, default=2, help="unprofiled calls before them")
    parser.add_argument("--impls", default="ours,hf,kerashub")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per implementation")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "profile_attention.json"))
    parser.add_argument("--worker", choices=["ours", "hf", "kerashub"], help=argparse.SUPPRESS)
    parser.add_argument("--worker-out", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        worker(args)
        return
    results = {}
    with tempfile.TemporaryDirectory(prefix="profile_attention_") as workdir:
        for impl in args.impls.split(","):
            print(f"profiling {impl} ({args.preset}, seq {args.seq}, batch {args.batch}) ...", file=sys.stderr)
            results[impl] = run_worker(impl, args, workdir)
    table = markdown(results)
    print(
        f"### Op time of the encoder forward: {args.preset}, seq {args.seq}, batch {args.batch}, {args.precision}, "
        "CPU\n"
    )
    print(table)
    common.write_results(
        args.out,
        {
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "preset": args.preset,
            "seq": args.seq,
            "batch": args.batch,
            "precision": args.precision,
            "calls": args.calls,
            "warmup": args.warmup,
            "cpu": common.cpuinfo("model name"),
            "cores": os.cpu_count(),
            "categories": LABELS,
            "results": results,
            "table": table,
        },
    )


if __name__ == "__main__":
    main()

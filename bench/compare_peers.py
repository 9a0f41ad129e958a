"""keras_bert_lite side by side with Hugging Face transformers (torch, CPU) and KerasHub, on the same shapes.

    .venv/bin/python bench/compare_peers.py [--benchmarks forward,pretrain,finetune,tokenize,serving]
                                            [--presets tiny,mini,small,base] [--shapes 128,384,512,128:bf16]
                                            [--runs N] [--rounds R] [--quick] [--device cpu|gpu] [--out PATH]

The acceptance run (every shape and every seq-128 float32 bar in one run; forward and pretrain, most of its time,
are `--benchmarks forward,pretrain` alone):

    .venv/bin/python bench/compare_peers.py --rounds 3 --shapes 128,384,512,128:bf16 \
        --out bench/results/compare_peers_shapes.json

Run it with the project's venv: that Python runs our side (this checkout's package). The peers run in their own
venvs, created here when missing and never project dependencies: `bench/.venvs/hf` (torch 2.13.0 CPU, from the
local wheel, transformers, safetensors) and `bench/.venvs/kerashub` (keras-hub pinned to our TF/Keras).

One process per (implementation, benchmark, shape, preset), one at a time, each timing its modes after a
warm-up; medians, then ratios ours (default) / peer, printed as markdown tables, one per (benchmark, shape), with
the acceptance bars marked ✓/✗, and written with every cell's per-round values (`cells[].round_values`,
`acceptance[].round_ratios`) to bench/results/compare_peers.json (--quick: compare_peers_quick.json); every
process's record with its raw timings goes to compare_peers.raw.json.gz beside it (`common.load_results` reads
both). A failing or timed-out implementation is recorded as an error and never stops the others.

Shapes (--shapes, forward and pretrain; bench/peers/suite.py): SEQ[:fp32|bf16] items, default 128 (float32).
Batch 32 up to seq 128, 8 beyond (seq 512: as many tokens as 32 x 128); masked predictions per sequence 15% of
seq rounded up to a multiple of 10, at most 80 (BERT's own 20 at 128 and 80 at 512; 60 at 384). bf16: ours and
KerasHub under Keras' "mixed_bfloat16" policy, HF under torch.autocast(bfloat16); its matmul peaks in bf16.
Bars beyond the seq-128 float32 ones below (CPU): forward and pretrain at seq 384 and 512, and in bf16 at seq 128,
ours (default) >= 1.05x the best peer (of the same precision) at every preset; bf16 without a bar where
/proc/cpuinfo has neither avx512_bf16 nor amx_bf16 (emulated; the report says so); any other shape: no bar.

Benchmarks (at the default shape: fp32, batch 32, seq 128; randomly initialised BERT presets tiny L2/H128, mini
L4/H256, small L4/H512, base L12/H768; intermediate 4H, vocab 30522):
  forward   encoder forward (sequence output), all tokens real; --presets (default tiny,mini,small,base).
            Timed runs: 5 (3 at base), and more until they add up to 3 s (a tiny batch takes ~30 ms).
            MFU = seq/s x matmul FLOPs/seq at the shape's seq / the best measured matmul peak in the shape's
            precision (2048³ tf.matmul and torch.matmul, the larger of the two medians; each round of them runs
            right before a round of the base forward at that shape, so both are measured in the same minutes).
  pretrain  one optimizer step of MLM (20 predictions/sequence at seq 128) + NSP, AdamW; --presets (default
            tiny,mini,small). KerasHub has no NSP head: its step is MLM only (BertMaskedLM). Timed runs as
            forward's (5, and 3 s at least).
  finetune  fit of a 2-class classifier on 20 batches of real short sentences (the Python docs), each
            library's standard text pipeline, tokenisation included: ours = kbl-glue's (tokenise once, shuffled
            batches grouped by length, each padded to its longest rounded to 8) + build_classifier + fit; HF
            BertTokenizerFast(padding="longest", max 128) per batch + BertForSequenceClassification loop;
            KerasHub BertTextClassifier.fit on raw strings (its preprocessor's default sequence_length).
            Preset small. Examples/s over epochs after 1 warm-up epoch.
  tokenize  ids only, single-threaded, all Python-docs sentences; lines/s and MB/s.
  serving   text -> logits in process for a tiny classifier: one sentence per call at 1/8/32 concurrent
            callers (p50/p99 ms, calls/s) and 32 sentences per call; ours = the exported text-in
            serving_default, and the bare classifier on pre-packed ids; the tokenisation overhead (bar) from
            ours "paired": both called in alternation, one request after the other, on one thread.
Modes: ours graph (tf.function) / xla (jit_compile=True) and "ours (default)" = the mode the library picks by
itself (bench/peers/ours.py: library_default); HF eager / torch.compile; KerasHub graph / xla.
Threads: all cores everywhere (TF default, torch.set_num_threads(os.cpu_count())) except tokenization (1).
--rounds R: every (benchmark, shape, preset) runs its implementations R times in turn (ours, HF, KerasHub, ...)
and each cell is the median of its R values: on shared cores, whose speed drifts by tens of percent over
minutes, a single pass can catch one implementation in a slow spell; interleaved rounds compare them in the
same minutes. Serving runs once whatever R (its cells are latency distributions, not one value to take a
median of). Default 1 (--rounds 3 at the default shape took 61 min on the 2-core Xeon, forward and pretrain 29
of them; each more shape adds about as much as seq 128's forward and pretrain).
--quick: tiny only, 2 timed runs, 4 fine-tuning batches, 1 s per serving level, every --shapes shape: a smoke
test, not a result.
--device gpu: forward and pretrain on a GPU, by default in bfloat16 (--shapes 128:bf16; its bars are the seq-128
float32 ones of the CPU), same modes (XLA and torch.compile among them); the matmul peaks are 8192³; at least 1 s
of timed calls per mode. Every implementation runs in the Python that runs this script, which must hold TensorFlow,
Keras, KerasHub, torch and transformers with GPU support (the CPU venvs above have a CPU-only torch).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / "bench" / "peers"
sys.path.insert(0, str(PEERS))

import common  # noqa: E402
from suite import (  # noqa: E402
    BATCH,
    BENCHMARKS,
    BF16_FLAGS,
    IMPLEMENTATIONS,
    MFU_NEED,
    MODEL_BENCHMARKS,
    MODES,
    SEQ,
    SERVING_OVERHEAD_MAX,
    SHAPED,
    UNITS,
    Implementation,
    Shape,
    bars_for,
    bf16_instructions,
    default_shape,
    parse_shapes,
    shapes_of,
)

# ------------------------------------------------------------------------------------------ planning


def settings(args) -> dict:
    """What every case of this invocation shares (runners read it from their spec); `batch`, `seq`,
    `predictions` and `precision` are the text benchmarks', the model benchmarks' come from their shape."""
    runs, gpu = args.runs, args.device == "gpu"
    return {
        "device": args.device,
        "precision": default_shape(args.device).precision,
        "peak_n": 8192 if gpu else 2048,
        "batch": BATCH,
        "seq": SEQ,
        "predictions": Shape().predictions,
        "shapes": {
            str(shape): {
                "seq": shape.seq,
                "precision": shape.precision,
                "batch": shape.batch,
                "predictions": shape.predictions,
            }
            for shape in shapes_of(args)
        },
        "runs": {
            "forward": runs or 5,
            "pretrain": runs or 5,
            "finetune": runs or 1,
            "tokenize": runs or 5,
            "peak": 3 if args.quick else 10,
        },
        "base_forward_runs": min(runs or 3, 3),
        "warmup": {"forward": 2, "pretrain": 2, "tokenize": 1, "peak": 2},
        "min_seconds": (
            {}
            if args.quick
            else {"forward": 1.0, "pretrain": 1.0, "peak": 1.0}
            if gpu
            else {"forward": 3.0, "pretrain": 3.0, "peak": 1.0}
        ),
        "finetune_batches": 4 if args.quick else 20,
        "warmup_epochs": 1,
        "serving_seconds": 1.0 if args.quick else 5.0,
        "concurrency": [1, 8, 32],
        # KerasHub's small fine-tuning at length 512 takes ~25 min on 2 cores; a GPU case, a few compilations.
        "timeout_s": 900 if args.quick or gpu else 7200,
    }


def presets_for(bench: str, args) -> list:
    """The presets a benchmark runs at (None: it has none)."""
    if bench in ("tokenize", "peak"):
        return [None]
    if args.quick:
        return ["tiny"]
    if bench == "finetune":
        return ["small"]
    if bench == "serving":
        return ["tiny"]
    if args.presets:
        return args.presets.split(",")
    return ["tiny", "mini", "small", "base"] if bench == "forward" else ["tiny", "mini", "small"]


def plan(benchmarks, args, data_path) -> list[dict]:
    """The runner specs, in execution order: benchmark x shape x preset x round x implementation, with the matmul
    peaks.

    Forward and pretrain run at every shape of --shapes (the others once, at their own shapes). The peaks are
    what the base forward's MFU divides by, so each of their rounds runs, in the shape's precision, right before
    a round of the base forward at that shape: on shared cores the speed drifts by ±10% over the tens of minutes
    a run takes, and a peak measured at the start would score the base forward against another minute's
    machine. A precision without a base forward has its peaks first.
    """
    s = settings(args)
    shapes = shapes_of(args)
    groups = []  # (bench, shape, preset), one per round
    for bench in benchmarks:
        for shape in shapes if bench in MODEL_BENCHMARKS else [None]:
            for preset in presets_for(bench, args):
                for _ in range(1 if bench == "serving" else args.rounds):
                    if (bench, preset) == ("forward", "base"):
                        groups.append(("peak", shape, None))
                    groups.append((bench, shape, preset))
    measured = {shape.precision for bench, shape, _ in groups if bench == "peak"}
    first = {}  # each unmeasured precision at its first shape
    for shape in shapes:
        if shape.precision not in measured:
            first.setdefault(shape.precision, shape)
    groups = [("peak", shape, None) for _ in range(args.rounds) for shape in first.values()] + groups
    specs = []
    for bench, shape, preset in groups:
        dims = (
            {}
            if shape is None
            else {
                "batch": shape.batch,
                "seq": shape.seq,
                "predictions": shape.predictions,
                "precision": shape.precision,
            }
        )
        for impl, modes in MODES[bench].items():
            runs = s["base_forward_runs"] if (bench, preset) == ("forward", "base") else s["runs"].get(bench)
            specs.append(
                {
                    "impl": impl,
                    "bench": bench,
                    "preset": preset,
                    "modes": modes,
                    "runs": runs,
                    "warmup": s["warmup"].get(bench),
                    "min_seconds": s["min_seconds"].get(bench, 0.0),
                    "data": data_path,
                    **{
                        k: s[k]
                        for k in (
                            "batch",
                            "seq",
                            "predictions",
                            "finetune_batches",
                            "warmup_epochs",
                            "serving_seconds",
                            "concurrency",
                            "device",
                            "precision",
                            "peak_n",
                        )
                    },
                    **dims,
                }
            )
    return specs


# ------------------------------------------------------------------------------------------ running


def ensure_venv(impl: Implementation) -> str | None:
    """Creates the peer's venv under bench/.venvs when it is missing or broken; returns an error or None."""
    if impl.venv is None:
        return None
    check = [impl.python, "-c", f"import {impl.imports}"]
    if os.path.exists(impl.python) and subprocess.run(check, capture_output=True).returncode == 0:
        return None
    venv = ROOT / "bench" / ".venvs" / impl.venv
    print(f"creating {venv} ({' '.join(impl.packages)}) ...", file=sys.stderr)
    try:
        if not os.path.exists(impl.python):  # this interpreter: the local torch wheel is for its version
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([impl.python, "-m", "pip", "install", "-q", *impl.packages], check=True)
        subprocess.run(check, check=True, capture_output=True)
    except (subprocess.CalledProcessError, OSError) as e:
        return f"could not create {venv}: {e}"
    return None


def runner_env(bench: str) -> dict:
    env = {
        **os.environ,
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "KERAS_BACKEND": "tensorflow",
        "HF_HUB_OFFLINE": "1",
        "PYTHONUNBUFFERED": "1",
    }
    if bench == "tokenize":  # single-threaded, as the issue asks
        env.update(TOKENIZERS_PARALLELISM="false", RAYON_NUM_THREADS="1", OMP_NUM_THREADS="1")
    return env


def background_cpu(seconds: float = 1.0) -> float | None:
    """Fraction of all CPU time others used during `seconds` (from /proc/stat; None where unavailable)."""

    def sample():
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
        return sum(fields), fields[3] + fields[4]  # total, idle + iowait

    try:
        total0, idle0 = sample()
        time.sleep(seconds)
        total1, idle1 = sample()
    except OSError:
        return None
    return 1.0 - (idle1 - idle0) / max(1, total1 - total0)


def run_case(spec: dict, workdir: Path, timeout: float, venv_error: str | None) -> dict:
    """Runs one runner process; returns the case record (every requested mode has a result or an error)."""
    impl = IMPLEMENTATIONS[spec["impl"]]
    shape = shape_of(spec)
    tag = f"{spec['impl']}-{spec['bench']}-{spec['preset'] or 'all'}" + (f"-{shape}".replace(":", "-") if shape else "")
    spec_path, out_path, log_path = (workdir / f"{tag}.{ext}" for ext in ("spec.json", "out.json", "log"))
    common.write_json_atomic(str(spec_path), spec)
    record = {
        "impl": spec["impl"],
        "bench": spec["bench"],
        "preset": spec["preset"],
        **({k: spec[k] for k in ("seq", "precision", "batch", "predictions") if k in spec} if shape else {}),
        "background_cpu": background_cpu(),
        "modes": {},
    }
    failure, start = venv_error, time.perf_counter()
    python = sys.executable if common.on_gpu(spec) else impl.python  # --device gpu: one Python for all
    if failure is None:
        with open(log_path, "w") as log:
            proc = subprocess.Popen(
                [python, str(PEERS / f"{impl.name}.py"), str(spec_path), str(out_path)],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=runner_env(spec["bench"]),
                cwd=ROOT,
                start_new_session=True,
            )
            try:
                if proc.wait(timeout=timeout):
                    failure = f"exit code {proc.returncode}: {log_tail(log_path)}"
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)  # the runner and any compile workers it started
                proc.wait()
                failure = f"timeout after {timeout:.0f} s"
    record["wall_s"] = time.perf_counter() - start
    if out_path.exists():
        result = common.load_json(str(out_path))
        record.update({k: v for k, v in result.items() if k != "modes"})
        record["modes"] = result["modes"]
    for mode in spec["modes"]:
        record["modes"].setdefault(mode, {"error": failure or "no result"})
    return record


def log_tail(path: Path, lines: int = 6) -> str:
    text = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    return " | ".join(text[-lines:])[-1500:]


def write_shared_data(workdir: Path) -> str:
    """The real-text inputs all runners read (bench/peers/data.py, in the project's venv)."""
    path = workdir / "data.json"
    subprocess.run(
        [sys.executable, str(PEERS / "data.py"), str(path)],
        check=True,
        env=runner_env("data"),
        cwd=ROOT,
        capture_output=True,
    )
    return str(path)


# ------------------------------------------------------------------------------------------ results

# What the results file leaves to its raw file (common.write_results): every process's record, per-call timings
# included. The summary keeps each cell's per-round values and the bars.
RAW_KEYS = ("cases",)


def shape_of(record: dict) -> Shape | None:
    """The shape a record (or spec) ran at; None for the benchmarks without one (finetune, tokenize, serving).
    A record that names none ran at seq 128 in float32."""
    if record["bench"] not in SHAPED:
        return None
    return Shape(record.get("seq", SEQ), record.get("precision", "float32"))


def shape_fields(shape: Shape | None) -> dict:
    """A shape as JSON fields of an acceptance entry or a cell."""
    return {} if shape is None else {"seq": shape.seq, "precision": shape.precision}


def index(records: list[dict]) -> dict:
    """(bench, shape, preset, impl, mode) -> that mode's result dict.

    `round_values`: each round's value in the order the rounds ran, None where the round failed (so that ratios
    pair the rounds run in the same minutes). The cell's `value` is the median of the successful rounds (its
    other fields from the round closest to it); if every round failed the cell is the last error.
    """
    rounds = collections.defaultdict(list)
    for r in records:
        for mode, result in r["modes"].items():
            rounds[(r["bench"], shape_of(r), r["preset"], r["impl"], mode)].append(result)
    cells = {}
    for key, results in rounds.items():
        values = [None if "error" in x else x.get("value") for x in results]
        ok = [x for x, v in zip(results, values) if v is not None]
        if not ok:
            cells[key] = results[-1]
            continue
        median = statistics.median(v for v in values if v is not None)
        closest = min(ok, key=lambda x: abs(x["value"] - median))
        cells[key] = {**closest, "value": median, "round_values": values}
    return cells


def cell_list(results: dict) -> list[dict]:
    """Every cell with a headline value (or its error), round values included, as the results JSON keeps them."""
    return [
        {
            "bench": bench,
            **shape_fields(shape),
            "preset": preset,
            "impl": impl,
            "mode": mode,
            **{k: cell[k] for k in ("value", "round_values", "error") if k in cell},
        }
        for (bench, shape, preset, impl, mode), cell in results.items()
        if "value" in cell or "error" in cell
    ]


def value(results: dict, case: tuple, impl, mode) -> float | None:
    """The headline number of one cell of `case` = (bench, shape, preset), None if it failed or did not run."""
    cell = results.get((*case, impl, mode))
    return None if cell is None or "error" in cell else cell.get("value")


def label(impl: str, mode: str) -> str:
    return f"{IMPLEMENTATIONS[impl].label} {mode}"


def ours_default(results: dict, case: tuple) -> tuple[str | None, float | None]:
    """(mode, value) of ours in the mode the library uses by default, as our runner reports it
    (`library_default`); benchmarks without that notion (tokenize) have one ours mode: that one."""
    modes = MODES[case[0]]["ours"]
    default = next(
        (
            cell["library_default"]
            for mode in modes
            if "library_default" in (cell := results.get((*case, "ours", mode)) or {})
        ),
        None,
    )
    if default is None and len(modes) == 1:
        default = modes[0]
    return default, value(results, case, "ours", default) if default else None


def best_of(results: dict, case: tuple, peers) -> tuple[tuple | None, float | None]:
    """((impl, mode), value) of the fastest successful peer cell among `peers` (empty: all peers of the
    benchmark); (None, None) if none succeeded."""
    peers = peers or [(impl, mode) for impl, modes in MODES[case[0]].items() if impl != "ours" for mode in modes]
    scored = [(v, peer) for peer in peers if (v := value(results, case, *peer)) is not None]
    if not scored:
        return None, None
    v, peer = max(scored)
    return peer, v


def round_ratios(results: dict, case: tuple, ours_mode: str, peer: tuple) -> list:
    """ours' value / the peer's, round by round (ours and the peer ran in turn within each round); None where
    either failed."""
    ours = (results.get((*case, "ours", ours_mode)) or {}).get("round_values", [])
    theirs = (results.get((*case, *peer)) or {}).get("round_values", [])
    return [a / b if a is not None and b else None for a, b in zip(ours, theirs)]


def peaks(results: dict, precision: str, shape: Shape | None = None) -> dict:
    """mode ("tf.matmul", "torch.matmul") -> FLOP/s: the median of the matmul peak's rounds in `precision`; with
    `shape`, of the rounds timed right before that shape's base forward rounds (the same minutes) where any were."""
    cells = [(key, cell) for key, cell in results.items() if key[0] == "peak" and key[1].precision == precision]
    pooled = collections.defaultdict(list)
    for key, cell in [(key, cell) for key, cell in cells if key[1] == shape] or cells:
        pooled[key[4]] += [v for v in cell.get("round_values", ()) if v is not None]
    return {mode: statistics.median(v) for mode, v in pooled.items() if v}


def ratio_cell(ours: float | None, peer: float | None, need: float | None) -> tuple[str, float | None, bool | None]:
    """('1.23× ✓', ratio, passed); a missing side gives ('n/a', None, None)."""
    if ours is None or peer is None:
        return "n/a", None, None
    ratio = ours / peer
    if need is None:
        return f"{ratio:.2f}×", ratio, None
    passed = ratio >= need
    return f"{ratio:.2f}× {'✓' if passed else '✗'}", ratio, passed


def fmt(v: float | None) -> str:
    if v is None:
        return "error"
    return f"{v:,.0f}" if v >= 1000 else f"{v:.2f}" if v < 10 else f"{v:.1f}"


def markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def throughput_table(
    bench: str,
    shape: Shape | None,
    records: list[dict],
    results: dict,
    peak_flops: float | None,
    acceptance: list[dict],
    device: str = "cpu",
    bf16_native: bool = True,
) -> str:
    """One (benchmark, shape)'s table: rows = presets, columns = every (implementation, mode), ours (default),
    then per bar (`bars_for`) the ratio (✓/✗), preceded by the best peer where the bar has several; forward: the
    MFU against `peak_flops` (FLOP/s, the shape's precision). Appends the bars met or missed to `acceptance`."""
    presets = list(dict.fromkeys(r["preset"] for r in records if r["bench"] == bench and shape_of(r) == shape))
    columns = [(impl, mode) for impl, modes in MODES[bench].items() for mode in modes]
    bars = bars_for(bench, shape, device, bf16_native)
    header = ["preset" if presets != [None] else "corpus"]
    header += [label(i, m) for i, m in columns] + ["ours (default)"]
    for bar in bars:
        header += ([bar.name] if len(bar.peers) != 1 else []) + [f"ours/{bar.name}"]
    if bench == "forward":
        header += ["MFU ours (default)"]
    rows = []
    for preset in presets:
        case = (bench, shape, preset)
        row = [preset or "pydoc sentences"]
        row += [
            fmt(value(results, case, impl, mode)) if (*case, impl, mode) in results else "not run"
            for impl, mode in columns
        ]  # e.g. an interrupted run
        default_mode, ours = ours_default(results, case)
        row.append(f"{fmt(ours)} ({default_mode})" if default_mode else "error")
        for bar in bars:
            peer, theirs = best_of(results, case, bar.peers)
            need = bar.threshold(preset)
            cell, ratio, passed = ratio_cell(ours, theirs, need)
            if len(bar.peers) != 1:  # which peer was the best is worth a column
                row.append(f"{label(*peer)}: {fmt(theirs)}" if peer else "error")
            row.append(cell + (f" (≥{need})" if need else ""))
            if need is not None:
                acceptance.append(
                    {
                        "bench": bench,
                        **shape_fields(shape),
                        "preset": preset,
                        "against": bar.name,
                        "peer": label(*peer) if peer else None,
                        "ratio": ratio,
                        "need": need,
                        "passed": passed,
                        "round_ratios": round_ratios(results, case, default_mode, peer)
                        if peer and default_mode
                        else [],
                    }
                )
        if bench == "forward":
            need = MFU_NEED.get(preset) if shape == default_shape(device) else None
            row.append(mfu_cell(ours, case, peak_flops, acceptance, need))
        rows.append(row)
    return markdown(header, rows)


def mfu_cell(
    seq_per_s: float | None, case: tuple, peak_flops: float | None, acceptance: list[dict], need: float | None = None
) -> str:
    """ours' forward MFU at `case` = (bench, shape, preset): FLOPs at the shape's seq over `peak_flops`."""
    _, shape, preset = case
    if seq_per_s is None or not peak_flops:
        return "n/a"
    mfu = seq_per_s * common.forward_flops(preset, shape.seq) / peak_flops
    if need is None:
        return f"{mfu:.0%}"
    acceptance.append(
        {
            "bench": "forward",
            **shape_fields(shape),
            "preset": preset,
            "against": "matmul peak",
            "ratio": mfu,
            "need": need,
            "passed": mfu >= need,
        }
    )
    return f"{mfu:.0%} {'✓' if mfu >= need else '✗'} (≥{need:.0%})"


def cells_of(bench: str, shape: Shape | None, records: list[dict], results: dict) -> list[tuple[tuple, dict]]:
    """((bench, shape, preset, impl, mode), merged cell) of `bench` at `shape`, once each, in the order they ran."""
    keys = dict.fromkeys(
        (r["bench"], shape, r["preset"], r["impl"], mode)
        for r in records
        if r["bench"] == bench and shape_of(r) == shape
        for mode in r["modes"]
    )
    return [(key, results[key]) for key in keys]


def serving_table(records: list[dict], results: dict, acceptance: list[dict]) -> str:
    """Rows = (implementation, mode); p50/p99 ms and calls/s per load level; then ours' tokenisation overhead."""
    levels = None
    rows = []
    for (_, _, _, impl, mode), cell in cells_of("serving", None, records, results):
        if "error" in cell:
            rows.append((label(impl, mode), None, cell["error"]))
            continue
        if mode == "paired":  # the overhead measurement, below the table
            continue
        levels = levels or [k for k in cell if k.startswith("b") and "_c" in k]
        rows.append((label(impl, mode), cell, None))
    if levels is None:
        return "all serving cases failed"
    header = ["implementation"] + [f"{lvl} {q}" for lvl in levels for q in ("p50 ms", "p99 ms", "texts/s")]
    table = []
    for name, cell, error in rows:
        if error:
            table.append([name] + ["error"] * (len(header) - 1))
        else:
            table.append(
                [name]
                + [
                    f"{cell[lvl][k]:.{d}f}"
                    for lvl in levels
                    for k, d in (("p50_ms", 2), ("p99_ms", 2), ("texts_per_s", 1))
                ]
            )
    lines = [
        "b1_cN: one sentence per call, N concurrent callers; b32_c1: 32 sentences per call, one caller. "
        "Real Python-docs sentences, tiny classifier, in process.\n",
        markdown(header, table),
        "",
    ]
    preset = next(r["preset"] for r in records if r["bench"] == "serving")
    paired = results.get(("serving", None, preset, "ours", "paired")) or {}
    for lvl in (k for k in paired if k.startswith("b")):
        overhead = paired[lvl]["savedmodel"] / paired[lvl]["bare"] - 1
        passed = overhead <= SERVING_OVERHEAD_MAX
        acceptance.append(
            {
                "bench": "serving",
                "preset": preset,
                "against": f"bare classifier {lvl} p50, paired",
                "overhead": overhead,
                "max_overhead": SERVING_OVERHEAD_MAX,
                "passed": passed,
            }
        )
        lines.append(
            f"- in-graph tokenisation overhead at {preset}, {lvl} p50, paired calls (ours savedmodel "
            f"{paired[lvl]['savedmodel']:.2f} ms vs bare {paired[lvl]['bare']:.2f} ms, "
            f"{paired[lvl]['calls']} each): {overhead:+.0%} {'✓' if passed else '✗'} "
            f"(≤ +{SERVING_OVERHEAD_MAX:.0%})"
        )
    return "\n".join(lines)


def notes(bench: str, shape: Shape | None, records: list[dict], results: dict) -> list[str]:
    """Per-table facts worth printing under it, and every error."""
    out = []
    for (_, _, preset, impl, mode), cell in cells_of(bench, shape, records, results):
        name = label(impl, mode) + (f" ({preset})" if preset else "")
        if "error" in cell:
            out.append(f"error: {name}: {cell['error'][:300]}")
        elif bench == "finetune":
            out.append(f"{name}: mean padded length {cell['mean_padded_length']:.1f}, warm-up {cell['warmup_s']:.0f} s")
        elif bench == "tokenize":
            out.append(
                f"{name}: {cell['megabytes'] / statistics.median(cell['times_s']):.2f} MB/s, {cell['tokens']} tokens"
            )
    if bench == "tokenize":
        counts = {c["tokens"] for r in records if r["bench"] == bench for c in r["modes"].values() if "tokens" in c}
        if len(counts) > 1:
            out.append(f"warning: token counts differ between implementations ({sorted(counts)})")
    if bench == "pretrain":
        out.append("KerasHub has no NSP head: its step is MLM only (BertMaskedLM), a little less work.")
    return out


def heading(bench: str, shape: Shape | None) -> str:
    if bench == "serving":
        return "\n### serving\n"
    at = (
        ""
        if shape is None
        else f" at {shape.title}"
        + (f", {shape.predictions} masked predictions per sequence" if bench == "pretrain" else "")
    )
    return f"\n### {bench}{at} ({UNITS[bench]}; higher is better)\n"


def report(records: list[dict], machine: dict) -> tuple[str, list[dict]]:
    """The printed tables (markdown), one per (benchmark, shape), and the acceptance list."""
    results, acceptance = index(records), []
    device, n = machine.get("device", "cpu"), machine.get("peak_n", 2048)
    shapes = list(dict.fromkeys(shape_of(r) for r in records if r["bench"] in MODEL_BENCHMARKS)) or [
        default_shape(device)
    ]
    peak_gflops = machine.get("matmul_peak_gflops", {})

    def peak_text(precision):
        return ", ".join(f"{k} {fmt(v)} GFLOP/s" for k, v in peak_gflops.get(precision, {}).items())

    where = (
        f"1 GPU ({machine['gpu']})" if machine.get("gpu") else f"{machine['cpu_count']} CPU cores ({machine['cpu']})"
    )
    if len(shapes) == 1:
        precision = shapes[0].precision
        parts = [
            f"{where}, {precision}, batch {shapes[0].batch}, seq {shapes[0].seq}; matmul peak ({n}³ "
            f"{precision}): {peak_text(precision)}"
        ]
    else:
        parts = [
            f"{where}; forward and pretraining step at "
            + "; ".join(s.title for s in shapes)
            + f". Matmul peaks ({n}³): "
            + "; ".join(f"{p} {peak_text(p)}" for p in dict.fromkeys(s.precision for s in shapes))
        ]
    bf16_native = True
    if device == "cpu" and any(s.precision == "bfloat16" for s in shapes) and "bf16_instructions" in machine:
        flags = machine["bf16_instructions"]
        bf16_native = bool(flags)
        parts.append(
            f"bfloat16 on this CPU: native ({', '.join(flags)})."
            if flags
            else f"**This CPU has no bf16 instructions (neither {' nor '.join(BF16_FLAGS)} among /proc/cpuinfo's "
            "flags): its bfloat16 cells are emulated, reported without a bar.**"
        )
    onednn = {impl: v["onednn_enabled"] for impl, v in machine.get("versions", {}).items() if "onednn_enabled" in v}
    # TensorFlow turns oneDNN on by itself only with AVX-512: whether KerasHub gets it depends on the CPU.
    if onednn and not machine.get("gpu"):
        parts.append(
            "TensorFlow's oneDNN kernels: "
            + ", ".join(f"{IMPLEMENTATIONS[impl].label} {'on' if on else 'off'}" for impl, on in onednn.items())
        )
    rounds = max((len(cell.get("round_values", ())) for cell in results.values()), default=0)
    if rounds > 1:
        parts.append(
            f"Each cell: the median of {rounds} rounds, implementations run in turn within each "
            "benchmark, shape and preset."
        )
    busy = [r["background_cpu"] for r in records if r.get("background_cpu") is not None]
    if busy and max(busy) > 0.10:
        parts.append(
            f"**warning: other processes used up to {max(busy):.0%} of the CPUs just before a case; "
            "timings are not trustworthy.**"
        )
    for bench in BENCHMARKS:
        for shape in shapes if bench in MODEL_BENCHMARKS else [None]:
            if not any(r["bench"] == bench and shape_of(r) == shape for r in records):
                continue
            parts.append(heading(bench, shape))
            if bench == "serving":
                table = serving_table(records, results, acceptance)
            else:
                peak = max(peaks(results, shape.precision, shape).values(), default=None) if shape else None
                table = throughput_table(bench, shape, records, results, peak, acceptance, device, bf16_native)
            parts += [table, ""] + [f"- {line}" for line in notes(bench, shape, records, results)]
    passed = sum(1 for a in acceptance if a["passed"])
    parts.append(f"\nAcceptance: {passed}/{len(acceptance)} bars met.")
    return "\n".join(parts), acceptance


# ------------------------------------------------------------------------------------------ main


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--benchmarks", default=",".join(BENCHMARKS), help="comma-separated subset of " + ",".join(BENCHMARKS)
    )
    parser.add_argument("--presets", help="for forward and pretrain (default tiny,mini,small,base / tiny,mini,small)")
    parser.add_argument(
        "--shapes",
        help="forward and pretrain at each SEQ[:fp32|bf16], e.g. 128,384,512,128:bf16 "
        "(batch 32 up to seq 128, 8 beyond; default 128, with --device gpu 128:bf16)",
    )
    parser.add_argument(
        "--runs",
        type=int,
        help="timed runs per mode (default 5; base forward at most 3; fine-tuning: timed epochs, default 1)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run each (benchmark, shape, preset)'s "
        "implementations this many times in turn; cells are the medians (default 1)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke test: tiny only, 2 runs, short serving (at every --shapes shape)"
    )
    parser.add_argument(
        "--device",
        choices=("cpu", "gpu"),
        default="cpu",
        help="gpu: forward and pretrain in bfloat16 on a GPU, every implementation in this Python (default cpu)",
    )
    parser.add_argument("--out", help="results JSON (default bench/results/compare_peers[_quick|_gpu].json)")
    args = parser.parse_args(argv)
    if args.quick and args.runs is None:
        args.runs = 2
    if args.rounds < 1:
        parser.error(f"--rounds must be >= 1, got {args.rounds}")
    benchmarks = [b for b in args.benchmarks.split(",") if b]
    unknown = set(benchmarks) - set(BENCHMARKS)
    if unknown:
        parser.error(f"unknown benchmarks {sorted(unknown)}; choose from {','.join(BENCHMARKS)}")
    if args.device == "gpu":
        if args.benchmarks == parser.get_default("benchmarks"):
            benchmarks = list(MODEL_BENCHMARKS)
        elif set(benchmarks) - set(MODEL_BENCHMARKS):
            parser.error(
                f"--device gpu runs {','.join(MODEL_BENCHMARKS)} only (the others time CPU-side text "
                f"work), got {args.benchmarks}"
            )
    try:
        args.shapes = parse_shapes(args.shapes) if args.shapes else None
    except ValueError as e:
        parser.error(str(e))
    bad_presets = set((args.presets or "").split(",")) - set(common.PRESETS) - {""}
    if bad_presets:
        parser.error(f"unknown presets {sorted(bad_presets)}; choose from {','.join(common.PRESETS)}")
    suffix = "_quick" if args.quick else "_gpu" if args.device == "gpu" else ""
    out = args.out or str(ROOT / "bench" / "results" / f"compare_peers{suffix}.json")

    workdir = Path(tempfile.mkdtemp(prefix="compare_peers_"))
    # --device gpu: no venvs (every implementation runs in this Python); no shared text (model benchmarks only).
    venv_errors = {name: ensure_venv(impl) if args.device == "cpu" else None for name, impl in IMPLEMENTATIONS.items()}
    needs_text = set(benchmarks) - set(MODEL_BENCHMARKS)
    specs = plan(benchmarks, args, write_shared_data(workdir) if needs_text else None)
    shared = settings(args)
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    records = []
    for i, spec in enumerate(specs, 1):
        shape = shape_of(spec)
        print(
            f"[{i}/{len(specs)}] {spec['impl']} {spec['bench']} {spec['preset'] or ''} "
            f"{shape.title + ' ' if shape else ''}({', '.join(spec['modes'])}) ...",
            file=sys.stderr,
            flush=True,
        )
        records.append(run_case(spec, workdir, shared["timeout_s"], venv_errors[spec["impl"]]))
        print(f"    {records[-1]['wall_s']:.0f} s", file=sys.stderr, flush=True)
        common.write_results(
            out, {"started": started, "argv": sys.argv[1:], "complete": False, "cases": records}, raw_keys=RAW_KEYS
        )  # an interrupted run keeps what it measured

    machine = common.machine_info()
    results = index(records)
    machine["matmul_peak_gflops"] = {  # precision -> framework -> GFLOP/s, the median of all its rounds
        precision: {
            mode: (peaks(results, precision).get(mode) or 0) / 1e9 or None
            for modes in MODES["peak"].values()
            for mode in modes
        }
        for precision in dict.fromkeys(shape.precision for shape in shapes_of(args))
    }
    machine["bf16_instructions"] = bf16_instructions() if args.device == "cpu" else None
    machine["versions"] = {r["impl"]: r["versions"] for r in records if "versions" in r}
    machine.update({k: shared[k] for k in ("device", "precision", "peak_n")})
    machine["gpu"] = next((r["gpu"] for r in records if r.get("gpu")), None)
    text, acceptance = report(records, machine)
    print(text)
    common.write_results(
        out,
        {
            "started": started,
            "argv": sys.argv[1:],
            "complete": True,
            "settings": shared,
            "machine": machine,
            "acceptance": acceptance,
            "cells": cell_list(results),
            "cases": records,
            "report_markdown": text,
        },
        raw_keys=RAW_KEYS,
    )
    print(f"\nwrote {out}", file=sys.stderr)
    if any("error" in cell for r in records for cell in r["modes"].values()):
        print(f"runner logs kept in {workdir}", file=sys.stderr)
    else:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()

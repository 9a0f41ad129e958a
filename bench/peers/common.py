"""What every runner of `bench/compare_peers.py` shares: model shapes, synthetic batches, timing, the result file.

Stdlib only at import time (numpy is imported where a batch is made), so the orchestrator can import it from any
Python. A runner is started as `python bench/peers/<impl>.py SPEC.json OUT.json` in its own venv; SPEC says
which benchmark, preset and modes to run (see `bench/compare_peers.py`), OUT receives one entry per mode,
rewritten atomically after each mode so that a timeout keeps the modes already measured.
"""

from __future__ import annotations

import gzip
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback

# name -> (layers, hidden, heads); intermediate 4 * hidden, vocab 30522, 2 segments, 512 positions.
PRESETS = {
    "tiny": (2, 128, 2),
    "mini": (4, 256, 4),
    "small": (4, 512, 8),
    "base": (12, 768, 12),
    "large": (24, 1024, 16),  # bench/gpu's pretraining step and forward; not in compare_peers' defaults
}
VOCAB_SIZE = 30522
TYPE_VOCAB_SIZE = 2
MAX_POSITIONS = 512


def shape(preset: str) -> dict:
    """The preset's shape as keyword-friendly numbers."""
    layers, hidden, heads = PRESETS[preset]
    return {"layers": layers, "hidden": hidden, "heads": heads, "intermediate": 4 * hidden}


def encoder_flops(layers: int, hidden: int, intermediate: int, seq: int) -> float:
    """Matmul FLOPs of one sequence's encoder forward (2 per multiply-add), pooler included.

    Per layer 2·s·(4H² + 2HI) for the projections and the FFN plus 4·s²·H for attention scores and context;
    BERT-base at seq 128: 22.4 GFLOP.
    """
    h, i = hidden, intermediate
    return layers * (2 * seq * (4 * h * h + 2 * h * i) + 4 * seq * seq * h) + 2 * h * h


def forward_flops(preset: str, seq: int) -> float:
    """`encoder_flops` of one of the presets above."""
    s = shape(preset)
    return encoder_flops(s["layers"], s["hidden"], s["intermediate"], seq)


def cpuinfo(field: str) -> str | None:
    """The value of `field` (e.g. "model name", "flags") on /proc/cpuinfo's first processor; None if unreadable."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.split(":", 1)[0].strip() == field), None)
    except OSError:
        return None


def machine_info() -> dict:
    """The CPU, its core count and vector extensions, the platform and the git commit of the checkout (with
    "-dirty" for changes)."""
    cpu = cpuinfo("model name") or platform.processor() or ""
    flags = (cpuinfo("flags") or "").split()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()
    dirty = bool(
        subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True
        ).stdout.strip()
    )
    return {
        "cpu_count": os.cpu_count(),
        "cpu": cpu,
        "platform": platform.platform(),
        "vector_extensions": [name for name in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if name in flags],
        "git_commit": commit + ("-dirty" if dirty else ""),
    }


def synthetic_batch(batch: int, seq: int, predictions: int = 0, seed: int = 0) -> dict:
    """Identical numpy inputs for every implementation: random word ids, all tokens real, one segment.

    With `predictions` > 0 also MLM targets: `positions` (distinct, sorted, never [CLS]), `ids`, and `nsp`
    labels. int32 throughout; runners cast to what their framework wants.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    out = {
        "word_ids": rng.integers(1000, VOCAB_SIZE, (batch, seq)).astype(np.int32),
        "mask": np.ones((batch, seq), np.int32),
        "type_ids": np.zeros((batch, seq), np.int32),
    }
    if predictions:
        positions = np.sort(
            np.stack([rng.choice(np.arange(1, seq), predictions, replace=False) for _ in range(batch)]), axis=1
        ).astype(np.int32)
        out["positions"] = positions
        out["ids"] = np.take_along_axis(out["word_ids"], positions, axis=1)
        out["nsp"] = rng.integers(0, 2, (batch,)).astype(np.int32)
    return out


# ---------------------------------------------------------------------------------------------------- timing


def time_calls(fn, runs: int, warmup: int, min_seconds: float = 0.0) -> list[float]:
    """Seconds per call of `fn` (which must block until its result is ready): `runs` calls after `warmup`, and
    more until the timed calls add up to `min_seconds` (five 30 ms calls are 0.15 s: one slow spell of the
    shared host would decide their median).

    Model and matmul calls return their framework's own tensor, the same for every implementation: a torch CPU
    tensor is ready when the call returns, and so is a TensorFlow one (eager execution is synchronous unless a
    program turns it off). A `.numpy()` on the TensorFlow side only would time a copy the torch side does not
    make (0.3 ms on tiny's [32, 128, 128] output, 1.5% of its forward), and the matmul peak returns the product,
    not a reduce_sum over its 16 MB.
    """
    for i in range(warmup):
        start = time.perf_counter()
        fn()
        seconds = time.perf_counter() - start
        if i == 0 and seconds > 5:  # a compile: says where a time-boxed run's time went
            print(f"    first call {seconds:.1f} s", file=sys.stderr, flush=True)
    times = []
    while len(times) < runs or sum(times) < min_seconds:
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def time_spec(fn, spec: dict, sync=None) -> list[float]:
    """`time_calls` with the spec's `runs`, `warmup` and `min_seconds`.

    `sync`: on a GPU, the framework's wait for the device (work there is queued, and a call returns before it
    ran); each timed call is `fn()` then `sync()`. None on CPUs, where `fn` already blocks.
    """
    call = fn if sync is None else (lambda: (fn(), sync()))
    return time_calls(call, spec["runs"], spec["warmup"], spec.get("min_seconds", 0.0))


def on_gpu(spec: dict) -> bool:
    """Whether the case runs on a GPU (`compare_peers.py --device gpu`); runners then fail if they see none."""
    return spec.get("device", "cpu") == "gpu"


def tf_sync(spec: dict):
    """`time_spec`'s wait for the GPU in the TensorFlow runners (ours, KerasHub); None on CPUs. TensorFlow is
    imported only here, when called: this module stays stdlib-only at import."""
    if not on_gpu(spec):
        return None
    import tensorflow as tf

    return tf.test.experimental.sync_devices


def peak_size(spec: dict) -> int:
    """The matmul peak's n (n x n times n x n): 2048 on CPUs, larger on a GPU (`spec["peak_n"]`)."""
    return spec.get("peak_n", 2048)


def median_seconds(fn, runs: int, warmup: int = 1) -> float:
    """The median of `time_calls(fn, runs, warmup)`."""
    return statistics.median(time_calls(fn, runs, warmup))


def epoch_timer():
    """A Keras callback whose `times` collects each epoch's wall seconds (imports keras: Keras runners only)."""
    import keras

    class EpochTimer(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.times, self._start = [], None

        def on_epoch_begin(self, epoch, logs=None):
            self._start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            self.times.append(time.perf_counter() - self._start)

    return EpochTimer()


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100), linear interpolation (numpy's default), of a non-empty list."""
    ordered = sorted(values)
    k = (len(ordered) - 1) * q / 100
    low = int(k)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def closed_loop(make_call, requests: list, concurrency: int, seconds: float, min_calls: int = 5) -> dict:
    """Latency and throughput of `concurrency` threads each calling back-to-back for `seconds`.

    `make_call()` is invoked once per thread and returns that thread's `call(request)` (so a runner can give
    each thread its own non-thread-safe object, e.g. a Hugging Face tokenizer). Thread t sends requests
    t, t + concurrency, ... cyclically. Each thread makes at least `min_calls` calls.
    """
    latencies, errors, lock = [], [], threading.Lock()
    stop = time.perf_counter() + seconds

    def worker(index):
        call, local, i = make_call(), [], index
        while time.perf_counter() < stop or len(local) < min_calls:
            start = time.perf_counter()
            try:
                call(requests[i % len(requests)])
            except Exception as e:  # noqa: BLE001 - counted and reported
                errors.append(repr(e))
                break
            local.append(time.perf_counter() - start)
            i += concurrency
        with lock:
            latencies.extend(local)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(concurrency)]
    begin = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - begin
    if errors:
        raise RuntimeError(f"{len(errors)} failed calls, first: {errors[0]}")
    return {
        "p50_ms": percentile(latencies, 50) * 1e3,
        "p99_ms": percentile(latencies, 99) * 1e3,
        "calls_per_s": len(latencies) / elapsed,
        "calls": len(latencies),
    }


def requests_of(texts: list[str], size: int, prepare=None) -> list:
    """The serving requests: consecutive chunks of `size` texts (a short tail dropped), each `prepare`d once
    before any timing when given (the bare model's pre-packed inputs)."""
    prepare = prepare or (lambda chunk: chunk)
    return [prepare(texts[i : i + size]) for i in range(0, len(texts) - size + 1, size)]


def serving_latency(make_call, texts: list[str], spec: dict, prepare=None) -> dict:
    """The serving benchmark's measurements for one `make_call` (see `closed_loop`).

    `b1_c{N}`: one sentence per call, N concurrent callers; `b{B}_c1`: B sentences per call, one caller; each
    with p50/p99 latency, calls/s and texts/s. `value` (the headline) is the b1_c1 p50 in ms.
    A request is a list of texts, or `prepare(list of texts)` when given (done before any timing: the bare
    model's pre-packed inputs).
    """
    batch, seconds = spec["batch"], spec["serving_seconds"]
    singles, batches = requests_of(texts, 1, prepare), requests_of(texts, batch, prepare)
    warm = make_call()
    for request in singles[:20] + batches[:3]:
        warm(request)
    out = {f"b1_c{c}": closed_loop(make_call, singles, c, seconds) for c in spec["concurrency"]}
    out[f"b{batch}_c1"] = closed_loop(make_call, batches, 1, seconds)
    for level, stats in out.items():
        stats["texts_per_s"] = stats["calls_per_s"] * (batch if level.startswith(f"b{batch}_") else 1)
    return {**out, "value": out["b1_c1"]["p50_ms"]}


def paired_latency(calls: dict, texts: list[str], spec: dict) -> dict:
    """p50 latency of several ways to serve the same requests, measured call by call in alternation.

    One caller; each request goes through every entry of `calls` back to back, the order rotating from one
    request to the next, for `spec["serving_seconds"]` per level. Unlike two `serving_latency` runs a minute
    apart, a slow spell of shared cores hits every entry alike, so their ratio is what the code costs.

    Args:
        calls: name -> (call(request), prepare(list of texts) or None), as in `serving_latency`.
        texts: the sentences.
        spec: the runner spec ("batch", "serving_seconds").

    Returns:
        {"b1": {name: p50_ms, ...}, "b{batch}": {...}} with each level's "calls" per name.
    """
    batch, seconds, names = spec["batch"], spec["serving_seconds"], list(calls)
    out = {}
    for size in (1, batch):
        requests = {name: requests_of(texts, size, prepare) for name, (_, prepare) in calls.items()}
        for name, (call, _) in calls.items():
            for request in requests[name][:20]:
                call(request)
        latencies = {name: [] for name in names}
        stop, i = time.perf_counter() + seconds, 0
        while time.perf_counter() < stop or i < 5:
            for k in range(len(names)):
                name = names[(i + k) % len(names)]
                start = time.perf_counter()
                calls[name][0](requests[name][i % len(requests[name])])
                latencies[name].append(time.perf_counter() - start)
            i += 1
        out[f"b{size}"] = {**{name: percentile(v, 50) * 1e3 for name, v in latencies.items()}, "calls": i}
    return out


# ---------------------------------------------------------------------------------------------------- results


def write_json_atomic(path: str, obj) -> None:
    """Writes `obj` as JSON to `path` via a temporary file in the same directory and a rename."""
    _write_atomic(path, (json.dumps(obj, indent=2) + "\n").encode())


def _write_atomic(path: str, data: bytes) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def raw_path(path: str) -> str:
    """Where `write_results` keeps the whole record of the summary at `path`: `x.json` -> `x.raw.json.gz`."""
    return (path[: -len(".json")] if path.endswith(".json") else path) + ".raw.json.gz"


def without(obj, keys):
    """`obj` (nested dicts and lists) without the entries named `keys`, at any depth."""
    if isinstance(obj, dict):
        return {k: without(v, keys) for k, v in obj.items() if k not in keys}
    if isinstance(obj, list):
        return [without(x, keys) for x in obj]
    return obj


def _nesting(obj) -> int:
    """0 for a plain value, 1 for a list or dict of plain values, 2 when those hold such lists or dicts, ..."""
    values = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, list) else None
    return 0 if values is None else 1 + max(map(_nesting, values), default=0)


def readable_json(obj, depth: int = 0, width: int = 120) -> str:
    """JSON indented by 2 per level, with a list or dict on one line where it nests at most one level or fits in
    `width` characters: one line per table row, its per-round values beside their median."""
    pad, inner = "  " * depth, "  " * (depth + 1)
    line = json.dumps(obj, ensure_ascii=False)
    if _nesting(obj) <= 2 or len(pad) + len(line) <= width:
        return line
    if isinstance(obj, dict):
        items = [
            f"{inner}{json.dumps(k, ensure_ascii=False)}: {readable_json(v, depth + 1, width)}" for k, v in obj.items()
        ]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    return "[\n" + ",\n".join(inner + readable_json(x, depth + 1, width) for x in obj) + f"\n{pad}]"


def write_results(path: str, obj: dict, raw_keys=()) -> None:
    """Writes a benchmark's results: `path` holds `obj` without `raw_keys` (the per-call timings, the
    per-process records) as readable JSON, and `raw_path(path)` the whole of `obj`, gzipped, where `raw_keys`
    left anything out. Both atomically."""
    summary = without(obj, set(raw_keys))
    if summary != obj:
        _write_atomic(raw_path(path), gzip.compress(json.dumps(obj).encode(), mtime=0))
    _write_atomic(path, (readable_json(summary) + "\n").encode())


def load_results(path: str) -> dict:
    """The whole record `write_results` wrote for `path` (its raw file where there is one)."""
    if os.path.exists(raw_path(path)):
        with gzip.open(raw_path(path), "rt", encoding="utf-8") as f:
            return json.load(f)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def load_json(path: str):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def run(benchmarks: dict, versions, setup=None) -> None:
    """A runner's main: `argv = [SPEC.json, OUT.json]`; runs each requested mode, recording errors per mode.

    Args:
        benchmarks: name -> `fn(spec, mode) -> dict` of measurements (`value` the headline number).
        versions: `fn() -> dict` of library versions, recorded with the results.
        setup: optional `fn(spec)` called once before any mode (thread settings, ...).
    """
    spec, out_path = load_json(sys.argv[1]), sys.argv[2]
    result = {"modes": {}}
    if setup is not None:
        result.update(setup(spec) or {})
    result["versions"] = versions()
    write_json_atomic(out_path, result)
    for mode in spec["modes"]:
        start = time.perf_counter()
        try:
            result["modes"][mode] = benchmarks[spec["bench"]](spec, mode)
        except Exception as e:  # noqa: BLE001 - one failing mode must not hide the others
            traceback.print_exc()
            result["modes"][mode] = {"error": f"{type(e).__name__}: {e}"[:2000]}
        result["modes"][mode]["wall_s"] = time.perf_counter() - start
        print(f"    {spec['bench']} {spec.get('preset')} {mode}: {result['modes'][mode]}"[:300], file=sys.stderr)
        write_json_atomic(out_path, result)


def median_rate(items: float, times: list[float]) -> dict:
    """The headline `value` (items per second at the median time) and the raw times."""
    return {"value": items / statistics.median(times), "times_s": times}

"""The pure-Python parts of bench/compare_peers.py: planning, merging results, ratios and tables (no runs)."""

import argparse
import importlib.util
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cp():
    spec = importlib.util.spec_from_file_location("compare_peers", ROOT / "bench" / "compare_peers.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # dataclasses look their module up while the file executes
    spec.loader.exec_module(module)
    return module


def args(**kw):
    return argparse.Namespace(**{"presets": None, "runs": None, "rounds": 1, "quick": False, "device": "cpu", **kw})


def record(bench, preset, impl, **modes):
    return {"bench": bench, "preset": preset, "impl": impl, "background_cpu": 0.0, "modes": modes}


def ok(v, **extra):
    return {"value": v, "times_s": [1.0], **extra}


def machine():
    return {"cpu_count": 2, "cpu": "test", "matmul_peak_gflops": {"tf.matmul": 70.0, "torch.matmul": 60.0}}


def test_plan_runs_each_peak_round_right_before_a_base_forward_round_and_sizes_cases(cp):
    specs = cp.plan(["forward", "finetune"], args(rounds=2), "/data.json")
    order = [(s["bench"], s["preset"], s["impl"]) for s in specs]
    peak_round = [("peak", None, "ours"), ("peak", None, "hf")]
    base_round = [("forward", "base", impl) for impl in ("ours", "hf", "kerashub")]
    expected = (peak_round + base_round) * 2                                    # rounds=2
    start = order.index(base_round[0]) - len(peak_round)
    assert order[start:start + len(expected)] == expected
    assert sum(bench == "peak" for bench, _, _ in order) == 4
    assert [bench for bench, _, _ in order[:3]] == ["forward"] * 3                # tiny first: no peak before it
    without_base = cp.plan(["forward"], args(rounds=2, presets="tiny"), "/d")
    assert [(s["bench"], s["impl"]) for s in without_base[:4]] == [("peak", "ours"), ("peak", "hf")] * 2
    forward = [s for s in specs if s["bench"] == "forward"]
    assert {s["preset"] for s in forward} == {"tiny", "mini", "small", "base"}
    assert all(len({s["impl"] for s in forward if s["preset"] == p}) == 3 for p in ("tiny", "base"))
    assert {s["runs"] for s in forward if s["preset"] == "base"} == {3}
    assert {s["runs"] for s in forward if s["preset"] == "tiny"} == {5}
    assert {s["min_seconds"] for s in forward} == {3.0}                 # a tiny batch's 5 calls are ~0.15 s
    assert {s["min_seconds"] for s in specs if s["bench"] == "finetune"} == {0.0}
    assert {s["preset"] for s in specs if s["bench"] == "finetune"} == {"small"}
    assert all(s["data"] == "/data.json" and s["batch"] == 32 and s["seq"] == 128 for s in specs)


def test_plan_quick_is_tiny_only(cp):
    specs = cp.plan(list(cp.BENCHMARKS), args(quick=True, runs=2), "/d")
    assert {s["preset"] for s in specs} <= {"tiny", None}
    assert {s["runs"] for s in specs if s["bench"] == "forward"} == {2}


def test_plan_rounds_interleave_implementations_within_each_preset(cp):
    specs = cp.plan(["pretrain"], args(rounds=2, presets="tiny,mini"), "/d")
    order = [(s["preset"], s["impl"]) for s in specs if s["bench"] == "pretrain"]
    assert order == [(p, impl) for p in ("tiny", "mini") for _ in range(2) for impl in ("ours", "hf", "kerashub")]
    serving = [s["impl"] for s in cp.plan(["serving"], args(rounds=3), "/d") if s["bench"] == "serving"]
    assert sorted(serving) == ["hf", "kerashub", "ours"]                  # latency distributions: one round


def test_plan_gpu_runs_the_model_benchmarks_in_bf16_with_larger_peaks(cp):
    specs = cp.plan(["forward", "pretrain"], args(device="gpu"), None)
    assert {(s["device"], s["precision"], s["peak_n"]) for s in specs} == {("gpu", "bfloat16", 8192)}
    assert {s["min_seconds"] for s in specs} == {1.0}
    assert {s["preset"] for s in specs if s["bench"] == "forward"} == {"tiny", "mini", "small", "base"}
    cpu = cp.plan(["forward"], args(presets="tiny"), None)
    assert {(s["device"], s["precision"], s["peak_n"]) for s in cpu} == {("cpu", "float32", 2048)}


def test_gpu_device_refuses_the_text_benchmarks(cp, capsys):
    with pytest.raises(SystemExit):
        cp.main(["--device", "gpu", "--benchmarks", "forward,tokenize"])
    assert "--device gpu runs forward,pretrain only" in capsys.readouterr().err


def test_gpu_cases_run_every_implementation_in_this_python(cp, tmp_path, monkeypatch):
    started = []

    class Proc:
        pid, returncode = 0, 0

        def wait(self, timeout=None):
            return 0

    monkeypatch.setattr(cp.subprocess, "Popen", lambda argv, **kw: started.append(argv[0]) or Proc())
    monkeypatch.setattr(cp, "background_cpu", lambda: 0.0)
    for device in ("gpu", "cpu"):
        spec = {"impl": "hf", "bench": "forward", "preset": "tiny", "modes": ["eager"], "device": device}
        record = cp.run_case(spec, tmp_path, 10, None)
        assert record["modes"]["eager"] == {"error": "no result"}      # the fake runner wrote nothing
    assert started == [sys.executable, cp.IMPLEMENTATIONS["hf"].python]


def test_report_names_the_gpu_and_the_precision(cp):
    records = [record("forward", "tiny", "ours", graph=ok(5000.0, library_default="xla"), xla=ok(9000.0))]
    gpu = dict(machine(), gpu="NVIDIA H100 80GB HBM3", precision="bfloat16", peak_n=8192)
    assert cp.report(records, gpu)[0].startswith("1 GPU (NVIDIA H100 80GB HBM3), bfloat16, batch 32, seq 128; "
                                                 "matmul peak (8192³ bfloat16)")
    assert cp.report(records, machine())[0].startswith("2 CPU cores (test), float32, batch 32, seq 128; "
                                                        "matmul peak (2048³ float32)")


def test_rounds_merge_to_the_median_and_skip_failed_rounds(cp):
    records = [
        record("forward", "tiny", "ours", graph=ok(100.0, library_default="graph"), xla=ok(1.0)),
        record("forward", "tiny", "hf", eager=ok(50.0), compile={"error": "boom"}),
        record("forward", "tiny", "ours", graph=ok(80.0, library_default="graph"), xla={"error": "slow"}),
        record("forward", "tiny", "hf", eager=ok(70.0), compile={"error": "boom again"}),
        record("forward", "tiny", "ours", graph=ok(90.0, library_default="graph"), xla=ok(3.0)),
        record("forward", "tiny", "hf", eager=ok(60.0), compile={"error": "boom thrice"}),
    ]
    results = cp.index(records)
    graph = results[("forward", "tiny", "ours", "graph")]
    assert graph["value"] == 90.0 and graph["round_values"] == [100.0, 80.0, 90.0]
    assert graph["library_default"] == "graph"
    assert results[("forward", "tiny", "ours", "xla")]["value"] == 2.0         # the failed round left out
    assert results[("forward", "tiny", "hf", "compile")] == {"error": "boom thrice"}
    text, _ = cp.report(records, machine())
    assert "the median of 3 rounds" in text and "90.0 (graph)" in text and "1.50×" in text
    assert text.count("error: HF compile (tiny)") == 1


def test_forward_table_ratios_against_best_peer_and_mfu(cp):
    records = [
        record("forward", "tiny", "ours", graph=ok(110.0, library_default="graph"),
               xla=ok(90.0, library_default="graph")),
        record("forward", "tiny", "hf", eager=ok(100.0), compile={"error": "RuntimeError: no compiler"}),
        record("forward", "tiny", "kerashub", graph=ok(80.0), xla=ok(95.0)),
        record("forward", "base", "ours", graph=ok(2.0, library_default="xla"), xla=ok(3.0, library_default="xla")),
        record("forward", "base", "hf", eager=ok(2.9), compile=ok(2.8)),
        record("forward", "base", "kerashub", graph=ok(2.4), xla=ok(2.7)),
    ]
    acceptance = []
    table = cp.throughput_table("forward", records, cp.index(records), 70e9, acceptance)
    tiny, base = table.splitlines()[2:4]
    assert "| error |" in tiny                                  # HF compile failed, the row goes on
    assert "110.0 (graph)" in tiny and "HF eager: 100.0" in tiny and "1.10× ✓ (≥1.05)" in tiny
    assert "3.00 (xla)" in base and "1.03× ✓ (≥0.98)" in base
    mfu = 3.0 * cp.common.forward_flops("base", 128) / 70e9   # ~96%
    assert f"{mfu:.0%} ✓ (≥90%)" in base
    assert [a["passed"] for a in acceptance] == [True, True, True]


def test_pretrain_two_bars_and_missing_peer(cp):
    records = [
        record("pretrain", "tiny", "ours", graph=ok(50.0, library_default="graph"),
               xla=ok(60.0, library_default="graph")),
        record("pretrain", "tiny", "hf", eager=ok(44.0), compile=ok(48.0)),
        record("pretrain", "tiny", "kerashub", graph={"error": "timeout after 10 s"}, xla={"error": "timeout"}),
    ]
    acceptance = []
    row = cp.throughput_table("pretrain", records, cp.index(records), None, acceptance).splitlines()[2]
    assert "HF compile: 48.0" in row and "1.04× ✗ (≥1.1)" in row and "n/a (≥1.3)" in row
    assert "| error | error |" in row                                      # KerasHub ran and failed
    unrun = cp.throughput_table("pretrain", records[:2], cp.index(records[:2]), None, [])
    assert "| not run | not run |" in unrun.splitlines()[2]                # KerasHub never ran (interrupted)
    assert [(a["against"], a["passed"]) for a in acceptance] == [("HF", False), ("KerasHub graph", None)]


def test_report_serving_overhead_tokenize_notes_and_busy_warning(cp):
    level = {"p50_ms": 2.0, "p99_ms": 4.0, "calls_per_s": 400.0, "texts_per_s": 400.0, "calls": 10}
    served = {k: dict(level, p50_ms=2.2) for k in ("b1_c1", "b1_c8", "b32_c1")}
    bare = {k: dict(level) for k in ("b1_c1", "b1_c8", "b32_c1")}
    tok = dict(tokens=100, megabytes=0.5)
    records = [
        record("serving", "tiny", "ours", savedmodel=served, bare=bare,
               paired={"b1": {"savedmodel": 2.2, "bare": 2.0, "calls": 50},
                       "b32": {"savedmodel": 30.0, "bare": 20.0, "calls": 9}}),
        record("serving", "tiny", "kerashub", savedmodel={"error": "ValueError: cannot export"}),
        record("tokenize", None, "ours", default=ok(1000.0, **tok)),
        record("tokenize", None, "hf", fast=ok(100.0, **dict(tok, tokens=101))),
    ]
    records[0]["background_cpu"] = 0.5
    text, acceptance = cp.report(records, machine())
    assert "warning: other processes used up to 50%" in text
    assert ("overhead at tiny, b1 p50, paired calls (ours savedmodel 2.20 ms vs bare 2.00 ms, 50 each): +10% ✓"
            in text)
    assert "b32 p50, paired calls (ours savedmodel 30.00 ms vs bare 20.00 ms, 9 each): +50% ✗" in text
    assert "| ours paired |" not in text       # not a latency-distribution row
    assert "| KerasHub savedmodel | error |" in text
    assert "10.00× ✓ (≥5.0)" in text and "0.50 MB/s" in text
    assert "warning: token counts differ" in text
    assert {a["against"]: a["passed"] for a in acceptance} == {
        "bare classifier b1 p50, paired": True, "bare classifier b32 p50, paired": False, "HF fast": True}


def test_paired_latency_alternates_and_measures_each_way(cp):
    import time

    order = []

    def slow(request):
        order.append(("slow", request))
        time.sleep(0.002)

    def fast(request):
        order.append(("fast", request))

    texts = [f"s{i}" for i in range(8)]
    out = cp.common.paired_latency({"slow": (slow, None), "fast": (fast, lambda chunk: len(chunk))}, texts,
                                   {"batch": 4, "serving_seconds": 0.05})
    assert set(out) == {"b1", "b4"}
    assert out["b1"]["slow"] >= 2.0 > out["b1"]["fast"]
    assert ("fast", 1) in order and ("fast", 4) in order and ("slow", ["s0"]) in order   # prepared per way
    first = [name for name, _ in order[16:20]]   # after 8 + 8 warm-up calls: the order rotates per request
    assert sorted(first) == ["fast", "fast", "slow", "slow"] and first[0] != first[2]


def test_ratio_and_number_formatting(cp):
    assert cp.ratio_cell(None, 1.0, 2.0) == ("n/a", None, None)
    assert cp.ratio_cell(3.0, 1.0, None) == ("3.00×", 3.0, None)
    assert cp.ratio_cell(1.0, 1.0, 1.3)[0] == "1.00× ✗"
    assert [cp.fmt(v) for v in (None, 2.346, 45.67, 12345.6)] == ["error", "2.35", "45.7", "12,346"]


def test_percentile_matches_numpy_linear(cp):
    np = pytest.importorskip("numpy")
    values = [5.0, 1.0, 9.0, 3.0, 7.0, 2.0]
    for q in (0, 50, 99, 100):
        assert cp.common.percentile(values, q) == pytest.approx(np.percentile(values, q))


def test_time_calls_runs_until_min_seconds(cp, monkeypatch):
    clock = iter(range(1000))
    monkeypatch.setattr(cp.common.time, "perf_counter", lambda: next(clock) * 0.01)   # each call: 10 ms
    assert len(cp.common.time_calls(lambda: None, runs=5, warmup=1)) == 5
    assert len(cp.common.time_calls(lambda: None, runs=5, warmup=1, min_seconds=0.2)) == 20
    assert len(cp.common.time_spec(lambda: None, {"runs": 3, "warmup": 0, "min_seconds": 0.0})) == 3


def test_cpuinfo_reads_the_first_processors_field(cp, tmp_path, monkeypatch):
    text = "processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu avx512_bf16 amx_tile\n\nprocessor\t: 1\n"
    (tmp_path / "cpuinfo").write_text(text)
    real_open = open
    monkeypatch.setattr("builtins.open", lambda path, *a, **k: real_open(
        tmp_path / "cpuinfo" if path == "/proc/cpuinfo" else path, *a, **k))
    assert cp.common.cpuinfo("model name") == "Some CPU"
    assert cp.common.cpuinfo("processor") == "0"
    assert cp.common.cpuinfo("flags").split() == ["fpu", "avx512_bf16", "amx_tile"]
    assert cp.common.cpuinfo("no such field") is None
    assert cp.machine_info()["cpu"] == "Some CPU"

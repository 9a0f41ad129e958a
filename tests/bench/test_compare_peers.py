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
    sys.modules[spec.name] = module  # dataclasses look their module up while the file executes
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def no_runs(cp, monkeypatch):
    """For tests of main's argument checks: anything past them (venvs, runners) fails instead of starting."""

    def refuse(*a, **k):
        raise AssertionError("main went past its argument checks")

    for name in ("ensure_venv", "write_shared_data", "plan", "run_case"):
        monkeypatch.setattr(cp, name, refuse)


def args(**kw):
    return argparse.Namespace(
        **{"presets": None, "runs": None, "rounds": 1, "quick": False, "device": "cpu", "shapes": None, **kw}
    )


def record(bench, preset, impl, at=None, **modes):
    """A case record; `at` (a Shape) adds the seq and precision a runner spec would carry."""
    shape = {} if at is None else {"seq": at.seq, "precision": at.precision, "batch": at.batch}
    return {"bench": bench, "preset": preset, "impl": impl, **shape, "background_cpu": 0.0, "modes": modes}


def ok(v, **extra):
    return {"value": v, "times_s": [1.0], **extra}


def machine():
    return {"cpu_count": 2, "cpu": "test", "matmul_peak_gflops": {"float32": {"tf.matmul": 70.0, "torch.matmul": 60.0}}}


def test_plan_runs_each_peak_round_right_before_a_base_forward_round_and_sizes_cases(cp):
    specs = cp.plan(["forward", "finetune"], args(rounds=2), "/data.json")
    order = [(s["bench"], s["preset"], s["impl"]) for s in specs]
    peak_round = [("peak", None, "ours"), ("peak", None, "hf")]
    base_round = [("forward", "base", impl) for impl in ("ours", "hf", "kerashub")]
    expected = (peak_round + base_round) * 2  # rounds=2
    start = order.index(base_round[0]) - len(peak_round)
    assert order[start : start + len(expected)] == expected
    assert sum(bench == "peak" for bench, _, _ in order) == 4
    assert [bench for bench, _, _ in order[:3]] == ["forward"] * 3  # tiny first: no peak before it
    without_base = cp.plan(["forward"], args(rounds=2, presets="tiny"), "/d")
    assert [(s["bench"], s["impl"]) for s in without_base[:4]] == [("peak", "ours"), ("peak", "hf")] * 2
    forward = [s for s in specs if s["bench"] == "forward"]
    assert {s["preset"] for s in forward} == {"tiny", "mini", "small", "base"}
    assert all(len({s["impl"] for s in forward if s["preset"] == p}) == 3 for p in ("tiny", "base"))
    assert {s["runs"] for s in forward if s["preset"] == "base"} == {3}
    assert {s["runs"] for s in forward if s["preset"] == "tiny"} == {5}
    assert {s["min_seconds"] for s in forward} == {3.0}  # a tiny batch's 5 calls are ~0.15 s
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
    assert sorted(serving) == ["hf", "kerashub", "ours"]  # latency distributions: one round


def test_plan_gpu_runs_the_model_benchmarks_in_bf16_with_larger_peaks(cp):
    specs = cp.plan(["forward", "pretrain"], args(device="gpu"), None)
    assert {(s["device"], s["precision"], s["peak_n"]) for s in specs} == {("gpu", "bfloat16", 8192)}
    assert {s["min_seconds"] for s in specs} == {1.0}
    assert {s["preset"] for s in specs if s["bench"] == "forward"} == {"tiny", "mini", "small", "base"}
    cpu = cp.plan(["forward"], args(presets="tiny"), None)
    assert {(s["device"], s["precision"], s["peak_n"]) for s in cpu} == {("cpu", "float32", 2048)}


def test_gpu_device_refuses_the_text_benchmarks(cp, capsys, no_runs):
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
        assert record["modes"]["eager"] == {"error": "no result"}  # the fake runner wrote nothing
    assert started == [sys.executable, cp.IMPLEMENTATIONS["hf"].python]


def test_report_names_the_gpu_and_the_precision(cp):
    records = [record("forward", "tiny", "ours", graph=ok(5000.0, library_default="xla"), xla=ok(9000.0))]
    gpu_records = [dict(records[0], precision="bfloat16")]
    gpu = dict(machine(), gpu="NVIDIA H100 80GB HBM3", precision="bfloat16", peak_n=8192, device="gpu")
    assert cp.report(gpu_records, gpu)[0].startswith(
        "1 GPU (NVIDIA H100 80GB HBM3), bfloat16, batch 32, seq 128; matmul peak (8192³ bfloat16)"
    )
    assert cp.report(records, machine())[0].startswith(
        "2 CPU cores (test), float32, batch 32, seq 128; matmul peak (2048³ float32)"
    )


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
    at = cp.Shape(128, "float32")
    graph = results[("forward", at, "tiny", "ours", "graph")]
    assert graph["value"] == 90.0 and graph["round_values"] == [100.0, 80.0, 90.0]
    assert graph["library_default"] == "graph"
    xla = results[("forward", at, "tiny", "ours", "xla")]
    assert xla["value"] == 2.0 and xla["round_values"] == [1.0, None, 3.0]  # the failed round left out
    assert results[("forward", at, "tiny", "hf", "compile")] == {"error": "boom thrice"}
    text, _ = cp.report(records, machine())
    assert "the median of 3 rounds" in text and "90.0 (graph)" in text and "1.50×" in text
    assert text.count("error: HF compile (tiny)") == 1


def test_forward_table_ratios_against_best_peer_and_mfu(cp):
    records = [
        record(
            "forward", "tiny", "ours", graph=ok(110.0, library_default="graph"), xla=ok(90.0, library_default="graph")
        ),
        record("forward", "tiny", "hf", eager=ok(100.0), compile={"error": "RuntimeError: no compiler"}),
        record("forward", "tiny", "kerashub", graph=ok(80.0), xla=ok(95.0)),
        record("forward", "base", "ours", graph=ok(2.0, library_default="xla"), xla=ok(3.0, library_default="xla")),
        record("forward", "base", "hf", eager=ok(2.9), compile=ok(2.8)),
        record("forward", "base", "kerashub", graph=ok(2.4), xla=ok(2.7)),
    ]
    acceptance = []
    table = cp.throughput_table("forward", cp.Shape(), records, cp.index(records), 70e9, acceptance)
    tiny, base = table.splitlines()[2:4]
    assert "| error |" in tiny  # HF compile failed, the row goes on
    assert "110.0 (graph)" in tiny and "HF eager: 100.0" in tiny and "1.10× ✓ (≥1.05)" in tiny
    assert "3.00 (xla)" in base and "1.03× ✓ (≥0.98)" in base
    mfu = 3.0 * cp.common.forward_flops("base", 128) / 70e9  # ~96%
    assert f"{mfu:.0%} ✓ (≥90%)" in base
    assert [a["passed"] for a in acceptance] == [True, True, True]


def test_pretrain_two_bars_and_missing_peer(cp):
    records = [
        record(
            "pretrain", "tiny", "ours", graph=ok(50.0, library_default="graph"), xla=ok(60.0, library_default="graph")
        ),
        record("pretrain", "tiny", "hf", eager=ok(44.0), compile=ok(48.0)),
        record("pretrain", "tiny", "kerashub", graph={"error": "timeout after 10 s"}, xla={"error": "timeout"}),
    ]
    acceptance = []
    row = cp.throughput_table("pretrain", cp.Shape(), records, cp.index(records), None, acceptance).splitlines()[2]
    assert "HF compile: 48.0" in row and "1.04× ✗ (≥1.1)" in row and "n/a (≥1.3)" in row
    assert "| error | error |" in row  # KerasHub ran and failed
    unrun = cp.throughput_table("pretrain", cp.Shape(), records[:2], cp.index(records[:2]), None, [])
    assert "| not run | not run |" in unrun.splitlines()[2]  # KerasHub never ran (interrupted)
    assert [(a["against"], a["passed"]) for a in acceptance] == [("HF", False), ("KerasHub graph", None)]


def test_report_serving_overhead_tokenize_notes_and_busy_warning(cp):
    level = {"p50_ms": 2.0, "p99_ms": 4.0, "calls_per_s": 400.0, "texts_per_s": 400.0, "calls": 10}
    served = {k: dict(level, p50_ms=2.2) for k in ("b1_c1", "b1_c8", "b32_c1")}
    bare = {k: dict(level) for k in ("b1_c1", "b1_c8", "b32_c1")}
    tok = dict(tokens=100, megabytes=0.5)
    records = [
        record(
            "serving",
            "tiny",
            "ours",
            savedmodel=served,
            bare=bare,
            paired={
                "b1": {"savedmodel": 2.2, "bare": 2.0, "calls": 50},
                "b32": {"savedmodel": 30.0, "bare": 20.0, "calls": 9},
            },
        ),
        record("serving", "tiny", "kerashub", savedmodel={"error": "ValueError: cannot export"}),
        record("tokenize", None, "ours", default=ok(1000.0, **tok)),
        record("tokenize", None, "hf", fast=ok(100.0, **dict(tok, tokens=101))),
    ]
    records[0]["background_cpu"] = 0.5
    text, acceptance = cp.report(records, machine())
    assert "warning: other processes used up to 50%" in text
    assert "overhead at tiny, b1 p50, paired calls (ours savedmodel 2.20 ms vs bare 2.00 ms, 50 each): +10% ✓" in text
    assert "b32 p50, paired calls (ours savedmodel 30.00 ms vs bare 20.00 ms, 9 each): +50% ✗" in text
    assert "| ours paired |" not in text  # not a latency-distribution row
    assert "| KerasHub savedmodel | error |" in text
    assert "10.00× ✓ (≥5.0)" in text and "0.50 MB/s" in text
    assert "warning: token counts differ" in text
    assert {a["against"]: a["passed"] for a in acceptance} == {
        "bare classifier b1 p50, paired": True,
        "bare classifier b32 p50, paired": False,
        "HF fast": True,
    }


def test_shapes_parse_with_their_batch_and_masked_predictions(cp):
    shapes = cp.parse_shapes("128,384,512,128:bf16,512:fp32,256:bfloat16")
    assert [str(s) for s in shapes] == ["128", "384", "512", "128:bf16", "256:bf16"]  # 512:fp32 is 512 again
    assert [(s.seq, s.precision) for s in shapes[2:4]] == [(512, "float32"), (128, "bfloat16")]
    assert [s.batch for s in shapes] == [32, 8, 8, 32, 8]
    assert [s.predictions for s in shapes] == [20, 60, 80, 20, 40]  # BERT's 20 at 128 and 80 at 512
    assert cp.parse_shapes(",".join(map(str, shapes))) == shapes
    assert shapes[2].title == "seq 512 float32, batch 8"
    for bad in ("128:fp16", "8", "600", "long", "128,"):
        with pytest.raises(ValueError, match="bad shape"):
            cp.parse_shapes(bad)
    assert cp.shapes_of(args()) == [cp.Shape(128, "float32")]  # the default: today's shape only
    assert cp.shapes_of(args(device="gpu")) == [cp.Shape(128, "bfloat16")]


def test_main_rejects_a_bad_shape(cp, capsys, no_runs):
    with pytest.raises(SystemExit):
        cp.main(["--shapes", "128,512:fp16"])
    assert "bad shape '512:fp16'" in capsys.readouterr().err


def test_plan_runs_forward_and_pretrain_at_every_shape_with_peaks_in_its_precision(cp):
    shapes = cp.parse_shapes("128,512,128:bf16")
    specs = cp.plan(["forward", "pretrain"], args(rounds=2, shapes=shapes), None)
    at = {(s["bench"], s["seq"], s["precision"]): (s["batch"], s["predictions"]) for s in specs}
    assert at == {
        (bench, seq, precision): dims
        for bench in ("forward", "pretrain", "peak")
        for seq, precision, dims in ((128, "float32", (32, 20)), (512, "float32", (8, 80)), (128, "bfloat16", (32, 20)))
    }
    pretrain = [(s["seq"], s["precision"], s["preset"], s["impl"]) for s in specs if s["bench"] == "pretrain"]
    assert pretrain == [
        (shape.seq, shape.precision, preset, impl)
        for shape in shapes
        for preset in ("tiny", "mini", "small")
        for _ in range(2)
        for impl in ("ours", "hf", "kerashub")
    ]  # rounds interleave
    forward = [s for s in specs if s["bench"] == "forward"]
    assert all(
        {s["preset"] for s in forward if s["seq"] == shape.seq and s["precision"] == shape.precision}
        == {"tiny", "mini", "small", "base"}
        for shape in shapes
    )
    for shape in shapes:  # each base forward round at a shape follows a peak round in that shape's precision
        starts = [
            i
            for i, s in enumerate(specs)
            if (s["bench"], s["preset"], s["impl"], s["seq"], s["precision"])
            == ("forward", "base", "ours", shape.seq, shape.precision)
        ]
        assert len(starts) == 2
        assert all(
            [(s["bench"], s["impl"], s["seq"], s["precision"]) for s in specs[i - 2 : i]]
            == [("peak", impl, shape.seq, shape.precision) for impl in ("ours", "hf")]
            for i in starts
        )
    assert sum(s["bench"] == "peak" for s in specs) == 2 * 2 * 3 and specs[0]["bench"] == "forward"
    assert set(cp.settings(args(shapes=shapes))["shapes"]) == {"128", "512", "128:bf16"}
    default = cp.plan(["forward", "pretrain"], args(), None)  # no --shapes: as before
    assert {(s["seq"], s["precision"], s["batch"], s["predictions"]) for s in default} == {(128, "float32", 32, 20)}


def test_plan_runs_a_precision_without_a_base_forward_with_its_peaks_first(cp):
    shapes = cp.parse_shapes("512,384,128:bf16")
    specs = cp.plan(["pretrain", "tokenize"], args(rounds=2, shapes=shapes), "/d")
    assert [(s["bench"], s["impl"], s["seq"], s["precision"]) for s in specs[:8]] == [
        ("peak", impl, seq, precision)
        for seq, precision in ((512, "float32"), (128, "bfloat16"))
        for impl in ("ours", "hf")
    ] * 2
    assert all(s["bench"] != "peak" for s in specs[8:])
    tokenize = [s for s in specs if s["bench"] == "tokenize"]  # the text benchmarks: one shape
    assert len(tokenize) == 6 and {(s["seq"], s["batch"], s["precision"]) for s in tokenize} == {(128, 32, "float32")}


def test_index_keys_cells_by_shape_and_run_case_records_it(cp, tmp_path, monkeypatch):
    S = cp.Shape
    records = [
        record("forward", "tiny", "ours", S(128), graph=ok(100.0)),
        record("forward", "tiny", "ours", S(512), graph=ok(20.0)),
        record("forward", "tiny", "ours", S(128, "bfloat16"), graph=ok(150.0)),
        record("forward", "tiny", "ours", graph=ok(110.0)),  # names no shape: seq 128 float32
        record("tokenize", None, "ours", S(512), default=ok(5.0)),
    ]  # text benchmarks have none
    results = cp.index(records)
    assert results[("forward", S(128), "tiny", "ours", "graph")]["round_values"] == [100.0, 110.0]
    assert results[("forward", S(512), "tiny", "ours", "graph")]["value"] == 20.0
    assert results[("forward", S(128, "bfloat16"), "tiny", "ours", "graph")]["value"] == 150.0
    assert ("tokenize", None, None, "ours", "default") in results
    assert {
        "bench": "forward",
        "seq": 512,
        "precision": "float32",
        "preset": "tiny",
        "impl": "ours",
        "mode": "graph",
        "value": 20.0,
        "round_values": [20.0],
    } in cp.cell_list(results)

    class Proc:
        pid, returncode = 0, 0

        def wait(self, timeout=None):
            return 0

    monkeypatch.setattr(cp.subprocess, "Popen", lambda argv, **kw: Proc())
    monkeypatch.setattr(cp, "background_cpu", lambda: 0.0)
    spec = {
        "impl": "hf",
        "bench": "pretrain",
        "preset": "tiny",
        "modes": ["eager"],
        "seq": 512,
        "precision": "bfloat16",
        "batch": 8,
        "predictions": 80,
    }
    case = cp.run_case(spec, tmp_path, 10, None)
    assert (case["seq"], case["precision"], case["batch"], case["predictions"]) == (512, "bfloat16", 8, 80)
    assert (tmp_path / "hf-pretrain-tiny-512-bf16.spec.json").exists()  # one log per shape


def test_bars_per_shape(cp):
    S, suite = cp.Shape, sys.modules["suite"]
    for shape in (S(384), S(512)):
        for bench in ("forward", "pretrain"):
            [bar] = cp.bars_for(bench, shape, bf16_native=False)
            assert bar.peers == () and [bar.threshold(p) for p in ("tiny", "mini", "small", "base")] == [1.05] * 4
    assert [b.threshold("small") for b in cp.bars_for("pretrain", S(128, "bfloat16"))] == [1.05]
    assert [b.threshold("base") for b in cp.bars_for("forward", S(128, "bfloat16"))] == [1.05]
    assert [b.threshold("tiny") for b in cp.bars_for("pretrain", S(128, "bfloat16"), bf16_native=False)] == [None]
    assert [b.threshold("tiny") for b in cp.bars_for("forward", S(256))] == [None]  # no bar there
    assert [b.threshold("tiny") for b in cp.bars_for("forward", S(512, "bfloat16"))] == [None]
    for bench in ("forward", "pretrain", "finetune", "tokenize"):  # the seq 128 float32 bars stay as they were
        assert cp.bars_for(bench, S() if bench in cp.MODEL_BENCHMARKS else None, "cpu", False) == suite.BARS[bench]
    assert [b.threshold("base") for b in cp.bars_for("forward", S())] == [0.98]
    assert cp.bars_for("forward", S(128, "bfloat16"), "gpu") == suite.BARS["forward"]  # the GPU's own shape
    assert [b.threshold("tiny") for b in cp.bars_for("forward", S(512), "gpu")] == [None]


def test_bf16_instructions_from_the_cpu_flags(cp, monkeypatch):
    for flags, found in (
        ("fpu avx512f avx512_bf16 amx_bf16", ["avx512_bf16", "amx_bf16"]),
        ("fpu avx512f avx512_vnni", []),
        (None, []),
    ):
        monkeypatch.setattr(cp.common, "cpuinfo", lambda field, flags=flags: flags if field == "flags" else None)
        assert cp.bf16_instructions() == found


def shaped_run(cp):
    """Two rounds of peaks and base forwards at seq 128, 512 and 128 bf16, and tiny pretraining at 512."""
    S = cp.Shape
    peak = {S(128): (100e9, 80e9), S(512): (50e9, 40e9), S(128, "bfloat16"): (200e9, 400e9)}
    records = []
    for rnd in range(2):
        for at, (tf_peak, torch_peak) in peak.items():
            records += [
                record("peak", None, "ours", at, **{"tf.matmul": ok(tf_peak)}),
                record("peak", None, "hf", at, **{"torch.matmul": ok(torch_peak)}),
                record("forward", "base", "ours", at, graph=ok(10.0 + 2 * rnd, library_default="graph"), xla=ok(5.0)),
                record("forward", "base", "hf", at, eager=ok(9.0), compile=ok(9.5 + rnd)),
                record("forward", "base", "kerashub", at, graph=ok(8.0), xla=ok(8.5)),
            ]
        records += [
            record("pretrain", "tiny", "ours", S(512), graph=ok(50.0, library_default="graph"), xla=ok(4.0)),
            record("pretrain", "tiny", "hf", S(512), eager=ok(20.0), compile=ok(21.0)),
            record("pretrain", "tiny", "kerashub", S(512), graph=ok(30.0), xla=ok(48.0 + rnd)),
        ]
    return records


def test_report_has_a_table_per_shape_scored_at_its_seq_and_precision(cp):
    S, records = cp.Shape, shaped_run(cp)
    results = cp.index(records)
    assert cp.peaks(results, "float32", S(512)) == {"tf.matmul": 50e9, "torch.matmul": 40e9}  # the same minutes
    assert (
        cp.peaks(results, "float32")
        == cp.peaks(results, "float32", S(384))
        == {"tf.matmul": 75e9, "torch.matmul": 60e9}
    )
    native = dict(machine(), device="cpu", bf16_instructions=["amx_bf16"])
    text, acceptance = cp.report(records, native)
    assert text.startswith(
        "2 CPU cores (test); forward and pretraining step at seq 128 float32, batch 32; "
        "seq 512 float32, batch 8; seq 128 bfloat16, batch 32."
    )
    assert "bfloat16 on this CPU: native (amx_bf16)." in text
    sections = {part.split(" (")[0]: part for part in text.split("\n### ")[1:]}
    assert list(sections) == [
        "forward at seq 128 float32, batch 32",
        "forward at seq 512 float32, batch 8",
        "forward at seq 128 bfloat16, batch 32",
        "pretrain at seq 512 float32, batch 8, 80 masked predictions per sequence",
    ]
    flops = cp.common.forward_flops
    long_row = sections["forward at seq 512 float32, batch 8"].splitlines()[4]
    assert "11.0 (graph)" in long_row and "1.10× ✓ (≥1.05)" in long_row  # base: 1.05 at 512, not 0.98
    assert long_row.endswith(f"| {11.0 * flops('base', 512) / 50e9:.0%} |")  # its seq, its minutes' peak
    bf16_row = sections["forward at seq 128 bfloat16, batch 32"].splitlines()[4]
    assert bf16_row.endswith(f"| {11.0 * flops('base', 128) / 400e9:.0%} |")  # the bf16 peak
    pretrain_table = sections["pretrain at seq 512 float32, batch 8, 80 masked predictions per sequence"]
    assert "KerasHub xla: 48.5 | 1.03× ✗ (≥1.05)" in pretrain_table
    got = {(a["bench"], a.get("seq"), a.get("precision"), a["against"]): (a["need"], a["passed"]) for a in acceptance}
    assert got == {
        ("forward", 128, "float32", "best peer"): (0.98, True),
        ("forward", 128, "float32", "matmul peak"): (0.90, True),  # the MFU bar: seq 128 float32 only
        ("forward", 512, "float32", "best peer"): (1.05, True),
        ("forward", 128, "bfloat16", "best peer"): (1.05, True),
        ("pretrain", 512, "float32", "best peer"): (1.05, False),
    }
    long_forward = next(a for a in acceptance if (a["bench"], a["seq"]) == ("forward", 512))
    assert long_forward["peer"] == "HF compile"
    assert long_forward["round_ratios"] == pytest.approx([10.0 / 9.5, 12.0 / 10.5])  # round by round
    pretrain = next(a for a in acceptance if a["bench"] == "pretrain")
    assert pretrain["round_ratios"] == pytest.approx([50.0 / 48.0, 50.0 / 49.0])


def test_report_without_bf16_instructions_drops_the_bf16_bars(cp):
    emulated = dict(machine(), device="cpu", bf16_instructions=[])
    text, acceptance = cp.report(shaped_run(cp), emulated)
    assert "**This CPU has no bf16 instructions (neither avx512_bf16 nor amx_bf16" in text
    bf16 = text.split("### forward at seq 128 bfloat16")[1].split("###")[0]
    assert "| 1.10× |" in bf16 and "≥1.05" not in bf16  # the ratio, without a bar
    assert {a.get("precision") for a in acceptance} == {"float32"} and len(acceptance) == 4


def test_paired_latency_alternates_and_measures_each_way(cp):
    import time

    order = []

    def slow(request):
        order.append(("slow", request))
        time.sleep(0.002)

    def fast(request):
        order.append(("fast", request))

    texts = [f"s{i}" for i in range(8)]
    out = cp.common.paired_latency(
        {"slow": (slow, None), "fast": (fast, lambda chunk: len(chunk))}, texts, {"batch": 4, "serving_seconds": 0.05}
    )
    assert set(out) == {"b1", "b4"}
    assert out["b1"]["slow"] >= 2.0 > out["b1"]["fast"]
    assert ("fast", 1) in order and ("fast", 4) in order and ("slow", ["s0"]) in order  # prepared per way
    first = [name for name, _ in order[16:20]]  # after 8 + 8 warm-up calls: the order rotates per request
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
    monkeypatch.setattr(cp.common.time, "perf_counter", lambda: next(clock) * 0.01)  # each call: 10 ms
    assert len(cp.common.time_calls(lambda: None, runs=5, warmup=1)) == 5
    assert len(cp.common.time_calls(lambda: None, runs=5, warmup=1, min_seconds=0.2)) == 20
    assert len(cp.common.time_spec(lambda: None, {"runs": 3, "warmup": 0, "min_seconds": 0.0})) == 3


def test_cpuinfo_reads_the_first_processors_field(cp, tmp_path, monkeypatch):
    text = "processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu avx512_bf16 amx_tile\n\nprocessor\t: 1\n"
    (tmp_path / "cpuinfo").write_text(text)
    real_open = open
    monkeypatch.setattr(
        "builtins.open",
        lambda path, *a, **k: real_open(tmp_path / "cpuinfo" if path == "/proc/cpuinfo" else path, *a, **k),
    )
    assert cp.common.cpuinfo("model name") == "Some CPU"
    assert cp.common.cpuinfo("processor") == "0"
    assert cp.common.cpuinfo("flags").split() == ["fpu", "avx512_bf16", "amx_tile"]
    assert cp.common.cpuinfo("no such field") is None
    assert cp.common.machine_info()["cpu"] == "Some CPU"

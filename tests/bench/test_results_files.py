"""bench/results keeps summaries small enough to read; the raw records go gzipped beside them
(bench/peers/common.py's write_results), and what the repository holds is in that form."""

import gzip
import importlib.util
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
MAX_LINES = 1_000  # a summary one can read through
RAW_KEYS = ("cases", "times_s")  # what compare_peers and gpu/checks leave to the raw files


@pytest.fixture(scope="module")
def common():
    spec = importlib.util.spec_from_file_location("bench_common", ROOT / "bench" / "peers" / "common.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RECORD = {
    "started": "t",
    "acceptance": [{"ratio": 1.1, "round_ratios": [1.0, 1.2]}],
    "cases": [{"impl": "ours", "modes": {"graph": {"value": 2.0, "times_s": [0.5, 0.5]}}}],
}


def test_write_results_splits_the_summary_from_the_raw_record(common, tmp_path):
    path = str(tmp_path / "run.json")
    common.write_results(path, RECORD, raw_keys=("cases",))
    assert json.loads(pathlib.Path(path).read_text()) == {k: v for k, v in RECORD.items() if k != "cases"}
    with gzip.open(tmp_path / "run.raw.json.gz", "rt") as f:
        assert json.load(f) == RECORD
    assert common.load_results(path) == RECORD


def test_nested_raw_keys_and_no_raw_file_without_them(common, tmp_path):
    path = str(tmp_path / "run.json")
    common.write_results(path, RECORD, raw_keys=("times_s",))
    assert json.loads(pathlib.Path(path).read_text())["cases"][0]["modes"]["graph"] == {"value": 2.0}
    assert common.load_results(path) == RECORD
    small = str(tmp_path / "small.json")
    common.write_results(small, {"rows": [1, 2]})
    assert not pathlib.Path(common.raw_path(small)).exists() and common.load_results(small) == {"rows": [1, 2]}


def test_readable_json_puts_each_row_on_one_line(common):
    text = common.readable_json({"cells": [{"value": 1.5, "round_values": [1.0, 2.0]}] * 2, "ok": True}, width=40)
    assert text.splitlines() == [
        "{",
        '  "cells": [',
        '    {"value": 1.5, "round_values": [1.0, 2.0]},',
        '    {"value": 1.5, "round_values": [1.0, 2.0]}',
        "  ],",
        '  "ok": true',
        "}",
    ]


@pytest.mark.parametrize("path", sorted(RESULTS.glob("*.json")), ids=lambda p: p.name)
def test_the_committed_summaries_are_small_and_match_their_raw_files(common, path):
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_LINES, f"{path.name}: write it with common.write_results"
    summary = json.loads(text)
    raw = pathlib.Path(common.raw_path(str(path)))
    if raw.exists():
        assert common.without(common.load_results(str(path)), set(RAW_KEYS)) == common.without(summary, set(RAW_KEYS))

"""Several `bench/peers` cases in one process: `python bench/gpu/peer_cases.py IMPL CASES.json OUT.json`.

`bench/compare_peers.py` starts one process per (implementation, benchmark, preset); on a GPU each start
(TensorFlow or torch, then the device) is seconds that the time box of `bench/gpu/checks.py` cannot spare. This
imports the runner `bench/peers/IMPL.py` once, calls its `setup` with the first case, then its benchmark function
(`peak`, `forward`, `pretrain`) for each case in order, and rewrites OUT (atomically) after each, so a run stopped
at its time limit keeps the cases it finished. CASES is a list of runner specs (see `bench/compare_peers.py`),
each with one mode and a `key` naming it.
"""

from __future__ import annotations

import importlib.util
import sys
import time
import traceback
from pathlib import Path

PEERS = Path(__file__).resolve().parents[1] / "peers"
sys.path.insert(0, str(PEERS))

import common  # noqa: E402


def load_runner(impl: str):
    """The module bench/peers/`impl`.py (its `__main__` block does not run)."""
    spec = importlib.util.spec_from_file_location(f"peer_{impl}", PEERS / f"{impl}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> None:
    impl, cases_path, out_path = argv
    cases = common.load_json(cases_path)
    result = {"impl": impl, "cases": {}}
    runner = load_runner(impl)
    result.update(runner.setup(cases[0]) or {})
    result["versions"] = runner.versions()
    common.write_json_atomic(out_path, result)
    for spec in cases:
        start = time.perf_counter()
        try:
            fn = getattr(runner, spec["bench"])
            cell = fn(spec, spec["modes"][0])
        except Exception as e:  # noqa: BLE001 - one failing case must not hide the others
            traceback.print_exc()
            cell = {"error": f"{type(e).__name__}: {e}"[:2000]}
        cell["wall_s"] = time.perf_counter() - start
        result["cases"][spec["key"]] = cell
        print(f"    {impl} {spec['key']}: {str(cell)[:200]}", file=sys.stderr, flush=True)
        common.write_json_atomic(out_path, result)


if __name__ == "__main__":
    main(sys.argv[1:])

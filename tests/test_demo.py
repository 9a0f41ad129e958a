"""`make demo`'s fast path end to end (DEMO_FAST=1), and fresh run directories."""

import json
import os
import subprocess
import sys

import pytest

from keras_bert_lite.demo import new_run_dir

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_run_gets_a_fresh_directory(tmp_path):
    first, second = new_run_dir(str(tmp_path)), new_run_dir(str(tmp_path))   # same second: a suffix
    assert first != second and os.path.isdir(first) and os.path.isdir(second)
    assert os.listdir(first) == [] and os.path.basename(first).startswith("demo-")


@pytest.mark.slow
def test_fast_demo_runs_every_stage_and_prints_the_summary(tmp_path):
    env = dict(os.environ, DEMO_FAST="1", TF_CPP_MIN_LOG_LEVEL="2")
    out = subprocess.run([sys.executable, "-m", "keras_bert_lite.demo", "--runs_dir", str(tmp_path)], cwd=REPO,
                         capture_output=True, text=True, env=env, timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    for stage in range(1, 7):
        assert f"[{stage}/6]" in out.stdout
    (run_dir,) = [os.path.join(tmp_path, d) for d in os.listdir(tmp_path)]
    with open(os.path.join(run_dir, "summary.json"), encoding="utf-8") as f:
        summary = json.load(f)
    results = summary["results"]
    assert 1000 < results["vocab"]["tokens"] <= 2000
    assert results["pretrain"]["steps"] == [10, 40]
    assert os.path.exists(os.path.join(run_dir, "pretrain", "encoder.keras"))
    finetune = results["finetune"]
    assert 0.5 < finetune["majority_baseline"] < 0.7 and finetune["majority_class"] == "fresh"
    for name in ("tiny", "minilm"):
        assert 0.0 <= finetune[name]["accuracy"] <= 1.0
        assert os.path.exists(os.path.join(run_dir, f"reviews-{name}", "model.keras"))
    assert results["export"]["versions"] == ["1"]
    assert os.path.exists(os.path.join(run_dir, "exports", "reviews", "1", "saved_model.pb"))
    predictions = results["serve"]["predictions"]
    assert len(predictions) == 4 and {label for _, label in predictions} <= {"fresh", "rotten"}
    assert "Server stopped" in open(results["serve"]["server_log"], encoding="utf-8").read()
    # The summary names the artifacts and the commands to redo each step by hand.
    assert "Each step by hand" in out.stdout and "majority-class baseline" in out.stdout
    tools = [command.split()[0] for command in summary["commands"]]
    assert tools == ["kbl-vocab", "kbl-pretrain", "kbl-glue", "kbl-glue", "kbl-export", "kbl-serve", "kbl-client"]

"""`make demo`'s fast path end to end (DEMO_FAST=1): each stage shows what it claims; fresh run directories."""

import csv
import json
import os
import shlex
import subprocess
import sys

import pytest

from keras_bert_lite.demo import minilm_dir, new_run_dir
from keras_bert_lite.runners.demo import FAST, SENTENCES, TINY_IMDB
from keras_bert_lite.text import Vocab

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Pretrained longer minus scratch, fast demo: well under the gains measured over three seeds when the model was
# shipped (keras_bert_lite/assets/tiny_imdb/README.md).
MARGIN = 0.03


def test_every_run_gets_a_fresh_directory(tmp_path):
    first, second = new_run_dir(str(tmp_path)), new_run_dir(str(tmp_path))  # same second: a suffix
    assert first != second and os.path.isdir(first) and os.path.isdir(second)
    assert os.listdir(first) == [] and os.path.basename(first).startswith("demo-")


def test_the_readme_import_of_the_real_weights():
    assert os.path.exists(os.path.join(minilm_dir(), "model.safetensors"))


def _texts(path):
    with open(path, encoding="utf-8", newline="") as f:
        return [row["text"] for row in csv.DictReader(f)]


@pytest.fixture(scope="module")
def fast_demo(tmp_path_factory):
    """One DEMO_FAST=1 run: (stdout, run directory, summary.json)."""
    runs = tmp_path_factory.mktemp("runs")
    env = dict(os.environ, DEMO_FAST="1", TF_CPP_MIN_LOG_LEVEL="2")
    out = subprocess.run(
        [sys.executable, "-m", "keras_bert_lite.demo", "--runs_dir", str(runs)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (run_dir,) = [os.path.join(runs, d) for d in os.listdir(runs)]
    with open(os.path.join(run_dir, "summary.json"), encoding="utf-8") as f:
        return out.stdout, run_dir, json.load(f)


@pytest.mark.slow
def test_fast_demo_runs_every_stage_and_prints_the_summary(fast_demo):
    stdout, run_dir, summary = fast_demo
    for stage in range(1, 7):
        assert f"[{stage}/6]" in stdout
    assert "Each step by hand" in stdout and "majority-class baseline" in stdout
    tools = [command.split()[0] for command in summary["commands"]]
    assert tools == [
        "kbl-vocab",
        "kbl-pretrain",
        "kbl-glue",
        "kbl-glue",
        "kbl-glue",
        "kbl-glue",
        "kbl-export",
        "kbl-serve",
        "kbl-client",
    ]
    results = summary["results"]
    assert results["export"]["versions"] == ["1"]
    assert os.path.exists(os.path.join(run_dir, "exports", "reviews", "1", "saved_model.pb"))
    assert "Server stopped" in open(results["serve"]["server_log"], encoding="utf-8").read()


@pytest.mark.slow
def test_fast_demo_pretrains_on_in_domain_text_it_does_not_fine_tune_on(fast_demo):
    """The pretraining text and the vocabulary come from the reviews held out of train and dev, without labels."""
    _, run_dir, summary = fast_demo
    data = summary["results"]["data"]
    train, dev = _texts(data["train_file"]), _texts(data["dev_file"])
    assert (len(train), len(dev)) == (FAST.train_reviews, FAST.dev_reviews)
    assert data["unlabeled_reviews"] == data["unique_reviews"] - len(train) - len(dev) > 10_000
    with open(data["unlabeled_file"], encoding="utf-8") as f:
        lines = {line.strip() for line in f if line.strip()}
    # ~90% of the reviews are one sentence, i.e. one line of the corpus: none of train's or dev's is there.
    assert not lines & set(train + dev)
    assert not lines & {"fresh", "rotten"} and len(lines) > 10_000
    assert summary["commands"][0].startswith(f"kbl-vocab --input {data['unlabeled_file']} ")
    assert f"--input_files {data['unlabeled_file']} " in summary["commands"][1]
    vocab = Vocab.from_file(os.path.join(run_dir, "vocab.txt"))
    assert vocab.lower_case and 6000 < len(vocab) < 12_000
    assert {"movie", "comedy", "actors", "performances", "screenplay"} <= set(vocab.tokens)  # not in Python's docs


@pytest.mark.slow
def test_fast_demo_pretraining_learns(fast_demo):
    """Masked-LM accuracy rises above that of predicting frequent tokens (the first log), and the loss falls."""
    pretrain = fast_demo[2]["results"]["pretrain"]
    assert pretrain["steps"] == [FAST.pretrain_log_every, FAST.pretrain_steps]
    first, last = pretrain["masked_lm_accuracy"]
    assert last >= first + 0.03, pretrain
    assert pretrain["masked_lm_loss"][1] < pretrain["masked_lm_loss"][0] - 0.5, pretrain


@pytest.mark.slow
def test_fast_demo_minilm_is_clearly_above_the_baseline_and_serves_right(fast_demo):
    """MiniLM is clearly above the majority class (a classifier at chance stays within a few points of it), and the
    served model labels the four example sentences right."""
    stdout, _, summary = fast_demo
    finetune = summary["results"]["finetune"]
    baseline = finetune["majority_baseline"]
    assert finetune["majority_class"] == "fresh" and 0.55 < baseline < 0.6
    assert finetune["minilm"]["accuracy"] >= baseline + 0.1, finetune
    for name in ("scratch", "pretrained", "pretrained_longer"):
        assert os.path.exists(os.path.join(finetune[name]["model_dir"], "model.keras"))
        assert f"reviews-{name}/" in stdout
    assert "from pretraining" in stdout
    serve = summary["results"]["serve"]
    assert sorted(serve["predictions"]) == sorted([list(s) for s in SENTENCES]) and serve["right"] == 4


@pytest.mark.slow
def test_fast_demo_shows_the_value_of_pretraining(fast_demo):
    """Our own tiny BERT, pretrained longer by kbl-pretrain on in-domain text (shipped), fine-tunes clearly above
    the same model from scratch on the same reviews with the same settings."""
    stdout, _, summary = fast_demo
    finetune = summary["results"]["finetune"]
    assert finetune["pretrained_longer"]["accuracy"] >= finetune["scratch"]["accuracy"] + MARGIN, finetune
    assert f"--init {shlex.quote(TINY_IMDB)} " in summary["commands"][4]
    assert "reviews-pretrained_longer/" in stdout

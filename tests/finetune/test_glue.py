"""run_glue on every GLUE config (tfds mock data) and on the original TSV layout."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow_datasets as tfds

from keras_bert_lite.data import glue
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.runners.glue import parse_args, run
from tests.finetune.conftest import common_flags, read_tsv

EXPECTED = {  # task: (dev metrics, submission files, allowed predictions or None for floats)
    "cola": ({"matthews_corrcoef", "accuracy"}, ["CoLA.tsv"], {"0", "1"}),
    "sst2": ({"accuracy"}, ["SST-2.tsv"], {"0", "1"}),
    "mrpc": ({"f1", "accuracy"}, ["MRPC.tsv"], {"0", "1"}),
    "stsb": ({"pearson", "spearman"}, ["STS-B.tsv"], None),
    "qqp": ({"f1", "accuracy"}, ["QQP.tsv"], {"0", "1"}),
    "mnli": (
        {"accuracy_matched", "accuracy_mismatched"},
        ["MNLI-m.tsv", "MNLI-mm.tsv"],
        {"entailment", "neutral", "contradiction"},
    ),
    "qnli": ({"accuracy"}, ["QNLI.tsv"], {"entailment", "not_entailment"}),
    "rte": ({"accuracy"}, ["RTE.tsv"], {"entailment", "not_entailment"}),
    "wnli": ({"accuracy"}, ["WNLI.tsv"], {"0", "1"}),
}


@pytest.mark.parametrize("task", sorted(EXPECTED))
def test_glue_config_end_to_end(task, tiny_init, tmp_path):
    metrics, files, allowed = EXPECTED[task]
    with tfds.testing.mock_data(num_examples=12):
        summary = run(parse_args(["--task", task, *common_flags(tiny_init, tmp_path)]))
    assert set(summary["metrics"]) == metrics
    assert all(np.isfinite(v) for v in summary["metrics"].values())
    for name in files:
        rows = read_tsv(tmp_path / name)
        assert rows[0] == ["index", "prediction"] and len(rows) == 13
        assert all(r[0].isdigit() for r in rows[1:])
        if allowed is None:
            [float(r[1]) for r in rows[1:]]
        else:
            assert {r[1] for r in rows[1:]} <= allowed
    info = json.loads((tmp_path / "task.json").read_text())
    assert info["task_type"] == ("regression" if task == "stsb" else "classification")
    assert info["text_fields"] == (["text"] if task in ("cola", "sst2") else ["text", "text_b"])
    assert info["lower_case"] is True and info["seq_length"] == 32
    if task != "stsb":
        assert info["labels"] == list(tfds.builder(f"glue/{task}").info.features["label"].names)
    assert os.path.exists(tmp_path / "vocab.txt")
    model = keras.saving.load_model(tmp_path / "model.keras")
    assert getattr(model, "optimizer", None) is None  # no optimizer state in the export file
    on_disk = json.loads((tmp_path / "metrics.json").read_text())
    assert on_disk["metrics"] == summary["metrics"] and on_disk["main_metric"] in metrics


def _write(path, lines):
    path.write_text("".join("\t".join(row) + "\n" for row in lines))


def test_glue_tsv_files_cola_and_mnli(tiny_init, tmp_path):
    cola = tmp_path / "CoLA"
    cola.mkdir()
    rows = [["gj04", str(i % 2), "", f"the cat sat on mat number {i} ."] for i in range(10)]
    _write(cola / "train.tsv", rows)  # CoLA train/dev have no header line
    _write(cola / "dev.tsv", rows[:6])
    _write(cola / "test.tsv", [["index", "sentence"]] + [[str(i), f"a dog {i}"] for i in range(5)])
    summary = run(parse_args(["--task", "cola", "--data_dir", str(cola), *common_flags(tiny_init, tmp_path / "c")]))
    assert set(summary["metrics"]) == {"matthews_corrcoef", "accuracy"}
    assert read_tsv(tmp_path / "c" / "CoLA.tsv")[1:] == [
        [str(i), r[1]] for i, r in enumerate(read_tsv(tmp_path / "c" / "CoLA.tsv")[1:])
    ]
    dev = read_tsv(tmp_path / "c" / "dev_predictions.tsv")
    assert dev[0][:3] == ["id", "label", "prediction"] and len(dev) == 7

    mnli = tmp_path / "MNLI"
    mnli.mkdir()
    header = ["index", "sentence1", "sentence2", "gold_label"]
    labels = ["entailment", "neutral", "contradiction"]
    data = [header] + [[str(i), f'premise {i} "quoted', f"hypothesis {i}", labels[i % 3]] for i in range(9)]
    for name in ("train.tsv", "dev_matched.tsv", "dev_mismatched.tsv"):
        _write(mnli / name, data)
    for name in ("test_matched.tsv", "test_mismatched.tsv", "diagnostic.tsv"):
        _write(mnli / name, [r[:3] for r in data])
    out = tmp_path / "m"
    summary = run(parse_args(["--task", "mnli", "--data_dir", str(mnli), *common_flags(tiny_init, out)]))
    assert set(summary["metrics"]) == {"accuracy_matched", "accuracy_mismatched"}
    for name in ("MNLI-m.tsv", "MNLI-mm.tsv", "AX.tsv"):
        rows = read_tsv(out / name)
        assert rows[0] == ["index", "prediction"] and [r[0] for r in rows[1:]] == [str(i) for i in range(9)]
        assert {r[1] for r in rows[1:]} <= set(labels)
    # AX later, from the finished MNLI model_dir, gives the same file.
    first = (out / "AX.tsv").read_text()
    os.remove(out / "AX.tsv")
    run(parse_args(["--task", "ax", "--data_dir", str(mnli), "--init", str(out), "--model_dir", str(out)]))
    assert (out / "AX.tsv").read_text() == first


def test_glue_errors(tiny_init, tmp_path, capsys):
    with pytest.raises(SystemExit):
        parse_args(["--task", "cola", "--train_file", "x.csv", *common_flags(tiny_init, tmp_path)])
    assert "error: Give either --task (GLUE) or --train_file" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse: invalid choice (tests/test_flag_bounds.py)
        parse_args(["--task", "colaa", *common_flags(tiny_init, tmp_path)])
    with pytest.raises(SettingsError, match="must be the model_dir of a `--task mnli` run"):
        run(parse_args(["--task", "ax", *common_flags(tiny_init, tmp_path)]))


def test_submission_files_keep_the_test_files_own_ids():
    text = glue.submission_text(glue.TASKS["cola"], ["0", "x1", np.int64(7)], np.array([1, 0, 1]))
    assert text == "index\tprediction\n0\t1\nx1\t0\n7\t1\n"  # a non-numeric id failed after training

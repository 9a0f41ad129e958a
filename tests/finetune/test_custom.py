"""run_glue's custom-data path: TSV/CSV/JSONL files, labels, regression, seeds, the Python API, bad input."""

import csv
import json
import logging
import os

import numpy as np
import pytest

from keras_bert_lite.data.errors import DataError
from keras_bert_lite.runners.glue import GlueJob, parse_args, run
from tests.finetune.conftest import read_tsv, review_flags

WORDS = {"pos": ["good", "great", "fine"], "neg": ["bad", "awful", "poor"]}


def reviews(n, seed):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        label = ["neg", "pos"][i % 2]
        rows.append(
            {"review": f"the film was {rng.choice(WORDS[label])} , {rng.choice(['truly', 'quite'])} .", "stars": label}
        )
    return rows


def write_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return str(path)


def test_custom_csv_learns_and_writes_every_file(tiny_init, tmp_path, caplog):
    train = write_csv(tmp_path / "train.csv", reviews(192, 0))  # no ids: none are needed there
    dev = write_csv(tmp_path / "dev.csv", [dict(r, id=f"d{i}") for i, r in enumerate(reviews(24, 1))])
    ids = ["id\twith a tab", "id\nwith a line break", 'id "quoted"'] + [f"r{i}" for i in range(3, 10)]
    test = write_csv(tmp_path / "test.csv", [{"review": r["review"], "id": i} for r, i in zip(reviews(10, 2), ids)])
    out = tmp_path / "run"
    flags = review_flags(
        tiny_init, out, train, dev, test_file=test, seeds="1,2", epochs=4, learning_rate=1e-3, id_column="id"
    )
    with caplog.at_level(logging.INFO):
        summary = run(parse_args(flags))
    # Which class f1 is of: the labels' order decides it, and the order of sorted names is no user's choice.
    assert (
        "f1 is the F1 of the class 'pos', the second of the labels ['neg', 'pos'] (--labels pos,neg would make it "
        "'neg')"
    ) in caplog.text
    per_seed = summary["per_seed"]
    assert set(per_seed) == {"1", "2"} and summary["main_metric"] == "accuracy"
    for name in ("accuracy", "f1", "matthews_corrcoef"):
        values = [per_seed[s]["metrics"][name] for s in ("1", "2")]
        assert summary["metrics"][name] == pytest.approx(np.mean(values))
        assert summary["std"][name] == pytest.approx(np.std(values, ddof=1))
    best = summary["best_seed"]
    assert per_seed[str(best)]["metrics"]["accuracy"] == 1.0  # a keyword task: the tiny model learns it
    for name in ("model.keras", "task.json", "vocab.txt", "dev_predictions.tsv", "test_predictions.tsv"):
        assert (out / name).read_bytes() == (out / f"seed_{best}" / name).read_bytes()
    info = json.loads((out / "task.json").read_text())
    assert info == {
        "task_type": "classification",
        "lower_case": True,
        "seq_length": 32,
        "text_fields": ["text"],
        "labels": ["neg", "pos"],
    }
    with open(out / "test_predictions.tsv", encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t"))  # ids with a tab or a line break stay one field
    assert rows[0] == ["id", "prediction", "p_neg", "p_pos"] and [r[0] for r in rows[1:]] == ids
    assert [r[1] for r in rows[1:]] == [["neg", "pos"][i % 2] for i in range(10)]
    assert all(abs(float(r[2]) + float(r[3]) - 1) < 1e-5 for r in rows[1:])
    assert len(per_seed["1"]["epochs"]) == 4 and len(per_seed["1"]["train_seconds_per_epoch"]) == 4
    assert os.listdir(out / "seed_1" / "logs") and not (out / "logs").exists()


def test_custom_jsonl_pair_regression_with_the_python_api(tiny_init, tmp_path):
    rng = np.random.default_rng(0)
    lines = [
        json.dumps({"premise": f"a man plays {w}", "hypothesis": f"someone plays {w}", "score": float(s)})
        for w, s in zip(rng.choice(["guitar", "chess", "golf"], 40), rng.uniform(0, 5, 40))
    ]
    (tmp_path / "train.jsonl").write_text("\n".join(lines[:30]) + "\n")
    (tmp_path / "dev.jsonl").write_text("\n".join(lines[30:]) + "\n")
    job = GlueJob(
        model_dir=str(tmp_path / "run"),
        init=tiny_init,
        train_file=str(tmp_path / "train.jsonl"),
        dev_file=str(tmp_path / "dev.jsonl"),
        text_a="premise",
        text_b="hypothesis",
        label="score",
        task_type="regression",
        epochs=1,
        batch_size=8,
        seq_length=32,
        verbose=False,
    )
    summary = run(job)
    assert set(summary["metrics"]) == {"pearson", "spearman", "neg_mse"} and summary["metrics"]["neg_mse"] < 0
    info = json.loads((tmp_path / "run" / "task.json").read_text())
    assert info["task_type"] == "regression" and info["text_fields"] == ["text", "text_b"] and "labels" not in info
    rows = read_tsv(tmp_path / "run" / "dev_predictions.tsv")
    assert rows[0] == ["id", "label", "prediction"] and len(rows) == 11


def test_bad_rows_name_file_and_line(tmp_path, tiny_init):
    path = tmp_path / "train.tsv"
    path.write_text("text\tlabel\nfine film\tpos\nno tab here\nbad film\tneg\textra\nok film\tpos\n")
    from keras_bert_lite.data.sentences import read_sentence_file

    with pytest.raises(DataError, match=rf"{path}:3: 1 fields, but the header has 2 .* \(and 1 more malformed"):
        read_sentence_file(str(path), text_a="text", label="label")
    data = read_sentence_file(str(path), text_a="text", label="label", skip_bad_rows=True)
    assert data.text_a == ["fine film", "ok film"] and data.skipped == 2 and data.lines == [2, 5]

    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text('{"text": "a", "label": "x"}\n{"text": "b", \n["c"]\n{"label": "y"}\n')
    with pytest.raises(DataError, match=rf"{bad_json}:2: not valid JSON"):
        read_sentence_file(str(bad_json), text_a="text", label="label")
    data = read_sentence_file(str(bad_json), text_a="text", label="label", skip_bad_rows=True)
    assert data.text_a == ["a"] and data.skipped == 3  # bad JSON, a list, a row without "text"
    fields = tmp_path / "fields.jsonl"
    fields.write_text('{"text": "a", "label": "x"}\n\n\n{"label": "y"}\n')
    with pytest.raises(DataError, match=rf"{fields}:4: no field 'text' in this row; its fields are \['label'\]"):
        read_sentence_file(str(fields), text_a="text", label="label")


def test_unknown_label_and_missing_column_errors(tiny_init, tmp_path, capsys):
    train = write_csv(tmp_path / "train.csv", reviews(8, 0))
    dev_rows = reviews(4, 1)
    dev_rows[2]["stars"] = "neutral"
    dev = write_csv(tmp_path / "dev.csv", dev_rows)
    base = review_flags(tiny_init, tmp_path / "run", train, None)  # --dev_file given below
    with pytest.raises(DataError, match=r"dev.csv:4: unknown label 'neutral'; the known labels are \['neg', 'pos'\]"):
        run(parse_args(base + ["--dev_file", dev]))
    with pytest.raises(DataError, match=r"train.csv: no column 'sentence'; the columns are \['review', 'stars'\]"):
        run(parse_args(base + ["--dev_file", dev, "--text_b", "sentence"]))
    with pytest.raises(DataError, match=r"train.csv:2: unknown label 'neg'; the known labels are \['pos', 'x'\]"):
        run(parse_args(base + ["--dev_file", dev, "--labels", "pos,x"]))
    with pytest.raises(SystemExit):
        parse_args(base)
    assert "error: --dev_file is required with --train_file" in capsys.readouterr().err
    with pytest.raises(DataError, match=r"unknown file type '.xlsx'"):
        run(parse_args(base + ["--dev_file", str(tmp_path / "dev.xlsx")]))


def test_skip_bad_rows_counts_and_trains(tiny_init, tmp_path, caplog):
    rows = reviews(16, 0)
    lines = ["review\tstars"] + [f"{r['review']}\t{r['stars']}" for r in rows] + ["only one field"]
    (tmp_path / "train.tsv").write_text("\n".join(lines) + "\n")
    dev = write_csv(tmp_path / "dev.csv", reviews(8, 1))
    flags = review_flags(tiny_init, tmp_path / "run", str(tmp_path / "train.tsv"), dev)
    with pytest.raises(DataError, match=r"train.tsv:18: 1 fields"):
        run(parse_args(flags))
    with caplog.at_level(logging.WARNING):
        summary = run(parse_args(flags + ["--skip_bad_rows"]))
    assert "skipped 1 malformed rows" in caplog.text and "accuracy" in summary["metrics"]

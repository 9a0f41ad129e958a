"""kbl-glue --task_type multi_label: independent labels learnt (chance and a single-label model far below), the
run directory's files, a tuned threshold through task.json and several seeds, and the export's predictions equal
to the prediction file's.

The runs start from the shipped tiny BERT (L2 H128, pretrained on IMDB: keras_bert_lite/assets/tiny_imdb): from a
random tiny encoder, as other kbl-glue tests start, keywords anywhere in a text are learnt too slowly for a test.
"""

import csv
import json

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.runners import export as run_export
from keras_bert_lite.runners.demo import TINY_IMDB
from keras_bert_lite.runners.glue import parse_args, run
from keras_bert_lite.training.metrics import micro_f1
from keras_bert_lite.training.thresholds import THRESHOLD_GRID
from tests.finetune.conftest import common_flags, read_tsv

# Label k is present iff its keyword is in the text: independent functions of the text.
KEYWORDS = {"arts": "painting", "politics": "president", "science": "physics", "sports": "football"}
LABELS = sorted(KEYWORDS)
FILLER = ["the", "story", "was", "about", "a", "city", "and", "its", "people", "today", "many", "new"]


def examples(n, seed):
    """(text, label set) pairs: each keyword present with probability 1/2 (1/16 of the texts have none; two labels
    a text on average, so that one label per text cannot do well)."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        present = [label for label in LABELS if rng.random() < 0.5]
        words = list(rng.choice(FILLER, 6)) + [KEYWORDS[label] for label in present]
        rows.append((" ".join(rng.permutation(words)), present))
    return rows


def indicator(sets):
    return np.array([[label in s for label in LABELS] for s in sets], np.float32)


def write_csv(path, rows, label=True):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "text", "topics"] if label else ["id", "text"])
        writer.writerows([f"r{i}", text, "|".join(s)][: 3 if label else 2] for i, (text, s) in enumerate(rows))
    return str(path)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    directory = tmp_path_factory.mktemp("multi_label_data")
    train, dev = examples(320, 0), examples(64, 1)
    with open(directory / "dev.jsonl", "w", encoding="utf-8") as f:  # dev as JSON lists, train as text
        f.writelines(json.dumps({"id": f"d{i}", "text": t, "topics": s}) + "\n" for i, (t, s) in enumerate(dev))
    return {
        "train": write_csv(directory / "train.csv", train),
        "dev": str(directory / "dev.jsonl"),
        "test": write_csv(directory / "test.csv", examples(8, 2), label=False),
        "dev_rows": dev,
    }


def multi_label_flags(model_dir, data, *extra):
    return common_flags(
        TINY_IMDB,
        model_dir,
        *extra,
        train_file=data["train"],
        dev_file=data["dev"],
        label="topics",
        epochs=4,
        learning_rate=5e-4,
        task_type="multi_label",
        allow_no_labels=True,
        tune_threshold=True,
        test_file=data["test"],
        id_column="id",
    )


@pytest.fixture(scope="module")
def trained(data, tmp_path_factory):
    """A multi-label run, two seeds, the threshold tuned on dev."""
    out = tmp_path_factory.mktemp("multi_label") / "run"
    return out, run(parse_args(multi_label_flags(out, data, "--seeds", "1,2")))


@pytest.fixture(scope="module")
def untrained(data, tmp_path_factory):
    """One epoch at a learning rate that changes nothing: probabilities near 1/2, so that the tuned threshold is
    not the default one."""
    out = tmp_path_factory.mktemp("multi_label") / "untrained"
    return out, run(parse_args(multi_label_flags(out, data, "--epochs", "1", "--learning_rate", "1e-9")))


def test_independent_labels_are_learnt_far_above_chance_and_a_single_label_model(trained, data):
    out, summary = trained
    assert summary["task_type"] == "multi_label" and summary["main_metric"] == "micro_f1"
    best = summary["per_seed"][str(summary["best_seed"])]["metrics"]
    assert best["micro_f1"] >= 0.9, best
    assert {"micro_f1", "macro_f1", "exact_match", "threshold", *(f"f1_{n}" for n in LABELS)} == set(best)
    truth = indicator(s for _, s in data["dev_rows"])
    # Chance: each label drawn at random with its dev frequency p scores sum(p^2) / sum(p) in expectation.
    frequency = truth.mean(axis=0)
    chance = float((frequency**2).sum() / frequency.sum())
    all_on = micro_f1(truth, np.ones_like(truth))
    # A single-label model, however well trained: one label per text. Its best is one of the text's own labels
    # each time (no wrong label, the most right ones a single label allows), an upper bound on any such model.
    single = micro_f1(truth, indicator(s[:1] for _, s in data["dev_rows"]))
    print(
        f"\ndev micro F1: multi-label {best['micro_f1']:.3f}, chance {chance:.3f}, every label {all_on:.3f}, "
        f"best single-label model {single:.3f}"
    )
    assert max(chance, all_on, single) < 0.75


def test_the_run_directory(trained, data):
    out, summary = trained
    best = summary["per_seed"][str(summary["best_seed"])]["metrics"]
    info = json.loads((out / "task.json").read_text())
    assert info == {
        "task_type": "multi_label",
        "lower_case": True,
        "seq_length": 32,
        "text_fields": ["text"],
        "labels": LABELS,
        "threshold": best["threshold"],
    }
    assert best["threshold"] in THRESHOLD_GRID
    for name in ("task.json", "model.keras", "dev_predictions.tsv", "test_predictions.tsv"):  # the best seed's
        assert (out / name).read_bytes() == (out / f"seed_{summary['best_seed']}" / name).read_bytes()
    rows = read_tsv(out / "dev_predictions.tsv")
    assert rows[0] == ["id", "label", "prediction", *(f"p_{n}" for n in LABELS)]
    assert [r[0] for r in rows[1:]] == [f"d{i}" for i in range(64)]
    assert [r[1] for r in rows[1:]] == ["|".join(s) for _, s in data["dev_rows"]]
    for row in rows[1:]:  # the prediction: the labels whose probability exceeds the threshold
        assert row[2] == "|".join(n for n, p in zip(LABELS, row[3:]) if float(p) > info["threshold"])
    test_rows = read_tsv(out / "test_predictions.tsv")
    assert test_rows[0] == ["id", "prediction", *(f"p_{n}" for n in LABELS)] and len(test_rows) == 9


def test_the_tuned_threshold_is_the_best_epochs_and_a_finished_run_run_again_keeps_it(untrained, data):
    out, summary = untrained
    threshold = json.loads((out / "task.json").read_text())["threshold"]
    assert threshold == summary["metrics"]["threshold"] != 0.5
    before = {name: (out / name).read_bytes() for name in ("task.json", "dev_predictions.tsv")}
    run(parse_args(multi_label_flags(out, data, "--epochs", "1", "--learning_rate", "1e-9")))
    assert {name: (out / name).read_bytes() for name in before} == before


@pytest.mark.parametrize(
    "windows",
    [
        (),
        pytest.param(
            ("--seq_length", "8", "--long_documents", "windows", "--window_pooling", "max"), marks=pytest.mark.slow
        ),
    ],
    ids=["truncate", "windows"],
)
def test_the_export_predicts_the_prediction_file(untrained, data, tmp_path, capsys, windows):
    """With windows of 6 tokens, every dev text is read in 2-3 windows, each label's logit their maximum."""
    out, _ = untrained
    if windows:
        out = tmp_path / "windows"
        run(parse_args(multi_label_flags(out, data, "--epochs", "1", "--learning_rate", "1e-9", *windows)))
        assert json.loads((out / "task.json").read_text())["window_pooling"] == "max"
    run_export.main(["--model", str(out), "--model_base_path", str(tmp_path / "export")])  # audited: tf-serving
    assert "signatures serving_default, preprocess, encode, classify" in capsys.readouterr().out
    import tensorflow_text  # noqa: F401  (the tf-serving export's tokenizer ops)

    loaded = tf.saved_model.load(str(tmp_path / "export" / "1"))
    texts = [t for t, _ in data["dev_rows"]]
    served = {k: v.numpy() for k, v in loaded.signatures["serving_default"](text=tf.constant(texts)).items()}
    rows = read_tsv(out / "dev_predictions.tsv")[1:]
    np.testing.assert_allclose(served["probabilities"], [[float(p) for p in r[3:]] for r in rows], atol=1e-5)
    assert served["labels"].shape == served["label_ids"].shape == (64, 4)
    assert ["|".join(s.decode() for s in labels if s) for labels in served["labels"]] == [r[2] for r in rows]
    assert [[LABELS[i] for i in ids if i >= 0] for ids in served["label_ids"]] == [
        [n for n in r[2].split("|") if n] for r in rows
    ]
    classified = loaded.signatures["classify"](
        inputs=tf.constant(
            [
                tf.train.Example(
                    features=tf.train.Features(
                        feature={"text": tf.train.Feature(bytes_list=tf.train.BytesList(value=[t.encode()]))}
                    )
                ).SerializeToString()
                for t in texts[:4]
            ]
        )
    )
    np.testing.assert_allclose(classified["scores"].numpy(), served["probabilities"][:4], atol=1e-6)

"""Texts longer than --seq_length (issue 58): kbl-glue and kbl-ner with --long_documents windows read what
truncation cuts off, say what truncation cut, and their exports answer a long text as the run's prediction files
do. --seq_length 32 (windows of 30 tokens, every 15). The reviews start from the shipped tiny BERT (L2 H128,
pretrained on IMDB): from a random encoder the windowed run learnt the clue words on some machines and stayed
at chance on others within 3 epochs. The tagging runs start from a random tiny encoder (L2 H32)."""

import json
import logging

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the tf-serving export's tokenizer ops)

from keras_bert_lite.runners import export, glue, ner
from keras_bert_lite.runners.demo import TINY_IMDB
from tests.finetune.conftest import common_flags, read_tsv, review_flags
from tests.finetune.test_custom import write_csv

FILLER = (
    "the river flows through the old town past the market and the church many visitors come in summer to "
    "walk along its banks and eat at small cafes"
).split()
CLUES = {"pos": ["good", "great"], "neg": ["bad", "awful"]}
ENTITIES = {"LOC": ["paris", "london", "berlin", "rome"], "PER": ["john", "mary", "peter", "anna"]}
WINDOWS = ("--long_documents", "windows", "--doc_stride", "15")


def long_reviews(n, seed):
    """83-word reviews of filler whose label shows only in 3 clue words at words 45-74 (past 32 tokens)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        label = ["neg", "pos"][i % 2]
        words = [str(w) for w in rng.choice(FILLER, 80)]
        at = int(rng.integers(45, 72))
        words[at:at] = [str(w) for w in rng.choice(CLUES[label], 3)]
        rows.append({"review": " ".join(words), "stars": label})
    return rows


def long_conll(path, n, seed, first):
    """73-word sentences of filler (tag O) with 3 one-token entities (B-LOC, B-PER) at words `first` to 72."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(n):
        words = [(str(w), "O") for w in rng.choice(FILLER, 70)]
        for at in sorted(rng.integers(first, 70, 3), reverse=True):
            kind = str(rng.choice(list(ENTITIES)))
            words.insert(int(at), (str(rng.choice(ENTITIES[kind])), f"B-{kind}"))
        lines += [f"{w} NN {t}" for w, t in words] + [""]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def reviews(tmp_path_factory):
    """`run(*flags) -> (summary, run dir, log)`: kbl-glue on the long reviews, 3 epochs."""
    data = tmp_path_factory.mktemp("reviews")
    train, dev = write_csv(data / "train.csv", long_reviews(192, 0)), write_csv(data / "dev.csv", long_reviews(96, 1))

    def run(name, *flags):
        out = data / name
        handler = _Capture()
        logging.getLogger("keras_bert_lite").addHandler(handler)
        try:
            summary = glue.run(
                glue.parse_args(review_flags(TINY_IMDB, out, train, dev, "--learning_rate", "5e-4", *flags, epochs=3))
            )
        finally:
            logging.getLogger("keras_bert_lite").removeHandler(handler)
        return summary, out, handler.text

    return run


@pytest.fixture(scope="module")
def tagged(tmp_path_factory, tiny_init):
    """`run(*flags) -> (summary, run dir, dev file)`: kbl-ner on long sentences; the dev entities all sit past
    the first window (words 35 on)."""
    data = tmp_path_factory.mktemp("tagged")
    train, dev = long_conll(data / "train.txt", 64, 0, 0), long_conll(data / "dev.txt", 16, 1, 35)

    def run(name, *flags):
        out = data / name
        return (
            ner.run(
                ner.parse_args(
                    common_flags(
                        tiny_init,
                        out,
                        "--train_file",
                        train,
                        "--dev_file",
                        dev,
                        "--epochs",
                        "3",
                        "--learning_rate",
                        "1e-3",
                        *flags,
                    )
                )
            ),
            out,
            dev,
        )

    return run


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.text = ""

    def emit(self, record):
        self.text += record.getMessage() + "\n"


def _served(run_dir, tmp_path, **texts):
    """serving_default's outputs for `texts` of the run's export (kbl-export, target tf-serving: audited)."""
    path = export.run(export.parse_args(["--model", str(run_dir), "--model_base_path", str(tmp_path / "export")]))
    outputs = tf.saved_model.load(path).signatures["serving_default"](
        **{name: tf.constant(values) for name, values in texts.items()}
    )
    return {name: value.numpy() for name, value in outputs.items()}


@pytest.mark.slow
def test_windows_classify_by_words_that_truncation_cuts_off(reviews, tmp_path):
    truncated, _, log = reviews("truncate")
    assert (
        "dev.csv: 96 of 96 texts are longer than --seq_length 32 (with the special tokens) and were cut (6,531 "
        "tokens lost, up to 85 of one); --long_documents windows reads them whole."
    ) in log
    windowed, out, log = reviews("windows", *WINDOWS)
    assert "were cut" not in log
    print(
        f"dev accuracy: truncated {truncated['metrics']['accuracy']:.3f}, windows "
        f"{windowed['metrics']['accuracy']:.3f} (chance 0.5)"
    )
    assert truncated["metrics"]["accuracy"] <= 0.65 and windowed["metrics"]["accuracy"] >= 0.9
    assert json.loads((out / "task.json").read_text()) == {
        "task_type": "classification",
        "lower_case": True,
        "seq_length": 32,
        "labels": ["neg", "pos"],
        "text_fields": ["text"],
        "doc_stride": 15,
        "window_pooling": "mean",
    }
    # The export reads each long review in the same windows: the run's dev predictions, to the file's 6 digits.
    rows = read_tsv(out / "dev_predictions.tsv")[1:]
    served = _served(out, tmp_path, text=[row["review"] for row in long_reviews(96, 1)])
    assert [label.decode() for label in served["label"]] == [row[2] for row in rows]
    np.testing.assert_allclose(served["probabilities"], [[float(p) for p in row[3:]] for row in rows], atol=2e-6)


@pytest.mark.slow
def test_windows_tag_entities_past_the_first_window(tagged, tmp_path, capsys):
    truncated, _, _ = tagged("truncate")
    windowed, out, dev = tagged("windows", *WINDOWS, "--seeds", "0,1")
    assert truncated["metrics"]["f1"] == 0.0 and windowed["metrics"]["f1"] >= 0.9
    for spec in (out / "task.json", out / "seed_0" / "task.json", out / "seed_1" / "task.json"):
        assert json.loads(spec.read_text())["doc_stride"] == 15
    # The export tags each word as the run's dev_predictions.txt does.
    blocks = [
        [line.split(" ") for line in block.split("\n")]
        for block in (out / "dev_predictions.txt").read_text().strip().split("\n\n")
    ]
    served = _served(out, tmp_path, text=[" ".join(word for word, _, _ in block) for block in blocks])
    for block, words, labels in zip(blocks, served["words"], served["word_labels"]):
        assert [w.decode() for w in words] == [word for word, _, _ in block]
        assert [label.decode() for label in labels] == [predicted for _, _, predicted in block]
    capsys.readouterr()
    export.run(export.parse_args(["--model", str(out), "--model_base_path", str(tmp_path / "hf"), "--target", "hf"]))
    assert (
        "note: the run read long texts in windows (doc_stride 15); this export holds the model alone"
        in capsys.readouterr().out
    )
    print(  # last: capsys above takes what was printed before it
        f"dev entity F1: truncated {truncated['metrics']['f1']:.3f}, windows {windowed['metrics']['f1']:.3f} "
        "(mean of 2 seeds)"
    )


def test_multi_label_runs_read_windows_and_export_them(reviews, tmp_path):
    """Windows with --task_type multi_label (max pooling: a label any window finds), through the run directory and
    the export (untrained: one epoch; the multi-label learning tests are tests/finetune/test_multi_label.py's)."""
    _, out, _ = reviews(
        "multi_label", *WINDOWS, "--window_pooling", "max", "--task_type", "multi_label", "--epochs", "1"
    )
    info = json.loads((out / "task.json").read_text())
    assert (info["task_type"], info["doc_stride"], info["window_pooling"]) == ("multi_label", 15, "max")
    rows = read_tsv(out / "dev_predictions.tsv")[1:]
    served = _served(out, tmp_path, text=[row["review"] for row in long_reviews(96, 1)])
    np.testing.assert_allclose(served["probabilities"], [[float(p) for p in row[3:]] for row in rows], atol=2e-6)
    assert ["|".join(label.decode() for label in labels if label) for labels in served["labels"]] == [
        row[2] for row in rows
    ]

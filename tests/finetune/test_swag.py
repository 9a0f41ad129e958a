"""SWAG: CSV reading, [b, choices, seq] packing, end-to-end multiple choice."""

import csv
import json

import numpy as np
import pytest

from keras_bert_lite.data import swag
from keras_bert_lite.data.errors import DataError
from keras_bert_lite.runners.swag import parse_args, run
from keras_bert_lite.text import BertPacker
from tests.finetune.conftest import common_flags, read_tsv, text_pipeline

COLUMNS = [
    "video-id",
    "fold-ind",
    "startphrase",
    "sent1",
    "sent2",
    "gold-source",
    "ending0",
    "ending1",
    "ending2",
    "ending3",
    "label",
]


def swag_csv(path, n, labeled=True):
    rng = np.random.default_rng(n)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS if labeled else COLUMNS[:-1])
        for i in range(n):
            label = int(rng.integers(4))
            endings = ["walks away .", "sits down .", "eats a cake .", "opens the door ."]
            row = [f"v{i}", str(1000 + i), "", f"a person enters room {i} .", "the person", "gen", *endings]
            writer.writerow(row + [str(label)] if labeled else row)
    return str(path)


def test_read_and_pack(tmp_path, uncased_vocab_path):
    data = swag.read_swag_csv(swag_csv(tmp_path / "t.csv", 3))
    assert data.endings[0][1] == "the person sits down ." and data.ids == ["1000", "1001", "1002"]
    vocab, tokenizer = text_pipeline(uncased_vocab_path)
    contexts, endings = swag.tokenize_choices(tokenizer, data, 32)
    packer = swag.ChoicePacker(BertPacker(32, vocab, dynamic=True), 4)
    batch = packer(contexts, endings)
    assert batch["input_word_ids"].shape[:2] == (3, 4)
    single = BertPacker(32, vocab, dynamic=False)(contexts[1], endings[1])["input_word_ids"].numpy()
    length = batch["input_word_ids"].shape[-1]
    np.testing.assert_array_equal(batch["input_word_ids"][1].numpy(), single[:, :length])


def test_swag_errors(tmp_path):
    (tmp_path / "bad.csv").write_text(
        ",".join(COLUMNS) + "\n" + ",".join(["v", "1", "", "a", "b", "g", "w", "x", "y", "z", "7"]) + "\n"
    )
    with pytest.raises(DataError, match=r"bad.csv:2: label '7' is not a choice; the known labels are \[0, 1, 2, 3\]"):
        swag.read_swag_csv(str(tmp_path / "bad.csv"))
    (tmp_path / "cols.csv").write_text("sent1,sent2,label\na,b,0\n")
    with pytest.raises(
        DataError,
        match=r"no column 'ending0'; the columns are \['label', 'sent1', 'sent2'\]\. A "
        "SWAG file has the columns sent1, sent2, ending0",
    ):
        swag.read_swag_csv(str(tmp_path / "cols.csv"))
    row = {"sent1": "a", "sent2": "b", "ending0": "w", "ending1": "x", "ending2": "y", "ending3": "z", "label": 0}
    for field, value in (("ending0", None), ("sent1", 5)):
        (tmp_path / "bad.jsonl").write_text(json.dumps(row) + "\n" + json.dumps({**row, field: value}) + "\n")
        with pytest.raises(DataError, match=rf"bad.jsonl:2: field '{field}' is {json.dumps(value)}, not text; write "):
            swag.read_swag_csv(str(tmp_path / "bad.jsonl"))


PEOPLE = ["a man", "a woman", "the boy", "the girl", "an old man", "a child"]
PLACES = ["market", "park", "station", "garden", "beach", "school"]
WEATHER = [("it is raining", "opens an umbrella ."), ("the sun is shining", "puts on sunglasses .")]
OTHER_ENDINGS = ["eats a cake .", "sits down .", "reads a book .", "calls a friend .", "opens the door ."]


def weather_swag_csv(path, n, seed, labeled=True):
    """A learnable SWAG: the context says whether it rains or the sun shines, and the right ending is the one
    that fits (an umbrella, sunglasses); the wrong ones are the other weather's ending and two of five neutral
    ones. Chance is 1 in 4, and the endings alone get at most 1 in 2: the weather ending is always there twice,
    right as often as wrong. Only the context tells which."""
    rng = np.random.default_rng(seed)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS if labeled else COLUMNS[:-1])
        for i in range(n):
            label, weather = int(rng.integers(4)), int(rng.integers(2))
            wrong = [WEATHER[1 - weather][1]] + [str(e) for e in rng.choice(OTHER_ENDINGS, 2, replace=False)]
            rng.shuffle(wrong)
            endings = wrong[:label] + [WEATHER[weather][1]] + wrong[label:]
            context = f"{rng.choice(PEOPLE)} walks to the {rng.choice(PLACES)} and {WEATHER[weather][0]} ."
            row = [f"v{i}", str(1000 + i), "", context, "the person", "gen", *endings]
            writer.writerow(row + [str(label)] if labeled else row)
    return str(path)


def test_run_swag_end_to_end_learns(tiny_init, tmp_path):
    """The tiny model learns to read the weather from the context: dev accuracy >= 0.8 on 64 examples, where
    chance is 0.25 and the endings alone reach 0.5 (a model that ignores the context: 0.5 +- 0.06)."""
    out = tmp_path / "run"
    summary = run(
        parse_args(
            common_flags(
                tiny_init,
                out,
                "--train_file",
                weather_swag_csv(tmp_path / "train.csv", 384, seed=1),
                "--dev_file",
                weather_swag_csv(tmp_path / "dev.csv", 64, seed=2),
                "--test_file",
                weather_swag_csv(tmp_path / "test.csv", 5, seed=3, labeled=False),
                "--epochs",
                "4",
                "--batch_size",
                "16",
                "--learning_rate",
                "5e-4",
            )
        )
    )
    assert summary["metrics"]["accuracy"] >= 0.8, summary
    info = json.loads((out / "task.json").read_text())
    assert info["task_type"] == "multiple_choice" and info["num_choices"] == 4
    rows = read_tsv(out / "test_predictions.tsv")
    assert rows[0] == ["id", "prediction", "p_0", "p_1", "p_2", "p_3"] and len(rows) == 6
    dev = read_tsv(out / "dev_predictions.tsv")
    assert dev[0][:3] == ["id", "label", "prediction"]
    assert np.mean([row[1] == row[2] for row in dev[1:]]) == summary["metrics"]["accuracy"]

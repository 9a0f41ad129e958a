"""SQuAD: windows (doc_stride), answer positions, n-best extraction, v2 null threshold, end-to-end runs."""

import json

import numpy as np
import pytest
import tensorflow_datasets as tfds

from keras_bert_lite.data import squad
from keras_bert_lite.data.errors import DataError
from keras_bert_lite.runners.squad import parse_args, run
from tests.finetune.conftest import common_flags, text_pipeline

FILLER = (
    "The river flows through the old town , past the market and the church . Many visitors come in "
    "summer to walk along its banks and eat at the small cafés . "
)
FACTS = [
    ("The bridge was built in 1742 by Johann Müller .", "When was the bridge built?", "1742"),
    ("Its mayor is Anna Schmidt , elected twice .", "Who is the mayor?", "Anna Schmidt"),
    ("The museum holds 3,000 paintings .", "How many paintings does the museum hold?", "3,000"),
]


def squad_json(path, version_2=False, copies=2):
    paragraphs = []
    for k in range(copies):
        for i, (fact, question, answer) in enumerate(FACTS):
            context = FILLER * (i + 1) + fact + " " + FILLER
            qas = [
                {
                    "id": f"q{k}_{i}",
                    "question": question,
                    "answers": [{"text": answer, "answer_start": context.index(answer)}],
                }
            ]
            if version_2:
                qas.append(
                    {
                        "id": f"n{k}_{i}",
                        "question": "What is the colour of the moon?",
                        "answers": [],
                        "is_impossible": True,
                    }
                )
            paragraphs.append({"context": context, "qas": qas})
    path.write_text(
        json.dumps({"version": "2.0" if version_2 else "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]})
    )
    return str(path)


@pytest.fixture(scope="module")
def tokenizer(uncased_vocab_path):
    return text_pipeline(uncased_vocab_path)[1]


def test_windows_hold_the_answer_and_respect_seq_length(tmp_path, tokenizer):
    examples = squad.read_squad_json(squad_json(tmp_path / "train.json", copies=1))
    windows = squad.make_windows(examples, tokenizer, seq_length=48, doc_stride=16, max_query_length=8, training=True)
    q_len = windows.question_ids.row_lengths().numpy()
    c_len = windows.context_ids.row_lengths().numpy()
    assert (q_len + c_len + 3 <= 48).all() and (q_len <= 8).all()
    for e, example in enumerate(examples):
        rows = np.flatnonzero(windows.example == e)
        assert len(rows) > 1  # the context needs several windows
        answer_ids = tokenizer.tokenize([example.answers[0][0]]).to_list()[0]
        found = 0
        for w in rows:
            start, end = windows.start[w], windows.end[w]
            if start == 0:
                assert end == 0  # the answer is not in this window: [CLS]
                continue
            packed = np.concatenate([[0], windows.question_ids[w].numpy(), [0], windows.context_ids[w].numpy()])
            assert packed[start : end + 1].tolist() == answer_ids
            spans = windows.byte_spans[w]
            offset = windows.offset[w]
            text = example.context.encode()[spans[start - offset, 0] : spans[end - offset, 1]].decode()
            assert text == example.answers[0][0]
            found += 1
        assert found >= 1
        # Every context token is the "max context" of exactly one window.
        total = sum(windows.max_context[w].sum() for w in rows)
        assert total == len(tokenizer.tokenize([example.context]).to_list()[0])


def _oracle_logits(windows, examples, null_wins=()):
    """Logits that point at each example's gold answer (or at [CLS] for the qids in null_wins)."""
    starts, ends = [], []
    for w in range(len(windows)):
        example = examples[windows.example[w]]
        length = int(windows.offset[w] + len(windows.byte_spans[w]) + 1)
        s, t = np.zeros(length), np.zeros(length)
        if example.qid in null_wins or not example.answers:
            s[0] = t[0] = 10.0
        else:
            text, char_start = example.answers[0]
            begin = len(example.context[:char_start].encode())
            end = begin + len(text.encode())
            spans = windows.byte_spans[w]
            inside = np.flatnonzero((spans[:, 1] > begin) & (spans[:, 0] < end))
            if len(inside) and windows.max_context[w][inside[0]]:
                s[windows.offset[w] + inside[0]] = 8.0
                t[windows.offset[w] + inside[-1]] = 8.0
        starts.append(s)
        ends.append(t)
    return starts, ends


def test_extract_answers_v1_and_v2(tmp_path, tokenizer):
    examples = squad.read_squad_json(squad_json(tmp_path / "dev.json", version_2=True, copies=1))
    windows = squad.make_windows(examples, tokenizer, 48, 16, 8, training=False)
    starts, ends = _oracle_logits(windows, examples)
    predictions, nbest, null_odds = squad.extract_answers(examples, windows, starts, ends, version_2=True)
    for example in examples:
        assert predictions[example.qid] == (example.answers[0][0] if example.answers else "")
        assert abs(sum(c["probability"] for c in nbest[example.qid]) - 1) < 1e-6
    assert all(null_odds[e.qid] > 0 for e in examples if not e.answers)
    # A high threshold makes every question answerable; v1.1 mode never predicts "".
    lenient, _, _ = squad.extract_answers(
        examples, windows, starts, ends, version_2=True, null_score_diff_threshold=100.0
    )
    assert all(lenient[e.qid] for e in examples)
    v1, _, odds = squad.extract_answers(examples, windows, starts, ends, version_2=False)
    assert all(v1[e.qid] for e in examples) and odds == {}
    short, _, _ = squad.extract_answers(examples, windows, starts, ends, max_answer_length=1)
    assert short["q0_1"] != "Anna Schmidt"  # two tokens: longer than allowed


SENTENCES = [
    "The river flows through the old town .",
    "Many visitors come in summer .",
    "They walk along its banks and eat at the small cafés .",
    "The market opens early on Saturday .",
    "A narrow bridge leads to the church .",
    "The mayor lives near the station .",
    "Children play in the park after school .",
    "The museum is closed on Monday .",
]
COLOURS = ["red", "green", "blue", "yellow", "purple", "orange", "black", "white"]
ANIMALS = ["fox", "bear", "wolf", "horse", "eagle", "tiger", "mouse", "snake"]
NUMBERS = ["two", "three", "four", "five", "six", "seven", "eight", "nine"]


def password_squad_json(path, n, seed, version_2=False):
    """A learnable SQuAD: "What is the password?" over town filler with the sentence "The password is <colour>
    <animal> <number> ." somewhere; colours and numbers occur nowhere else, so the answer starts at the only colour
    and ends at the only number (three tokens: a model whose start logits were its end logits cannot score it).
    Contexts take 2-4 windows of 48 tokens. v2.0 adds as many unanswerable questions, on filler alone."""
    rng = np.random.default_rng(seed)

    def filler(k):
        return " ".join(str(s) for s in rng.choice(SENTENCES, k))

    paragraphs = []
    for i in range(n):
        answer = f"{rng.choice(COLOURS)} {rng.choice(ANIMALS)} {rng.choice(NUMBERS)}"
        before = filler(int(rng.integers(0, 6)))
        context = f"{before} The password is {answer} . {filler(int(rng.integers(1, 6)))}".strip()
        qa = {
            "id": f"q{i}",
            "question": "What is the password?",
            "answers": [{"text": answer, "answer_start": context.index(answer)}],
        }
        paragraphs.append({"context": context, "qas": [qa]})
        if version_2:
            paragraphs.append(
                {
                    "context": filler(int(rng.integers(3, 9))),
                    "qas": [{"id": f"n{i}", "question": "What is the password?", "answers": [], "is_impossible": True}],
                }
            )
    path.write_text(
        json.dumps({"version": "2.0" if version_2 else "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]})
    )
    return str(path)


@pytest.mark.parametrize("version", ["1.1", "2.0"])
def test_run_squad_end_to_end_learns(version, tiny_init, tmp_path):
    """The tiny model learns the password spans: exact match >= 80 on 48 dev questions (and on as many
    unanswerable ones for v2.0). Chance (a random span) is ~0; a model whose start logits are its end logits
    answers with one word of the three (exact match ~0, F1 ~50)."""
    v2 = version == "2.0"
    train = password_squad_json(tmp_path / "train.json", 160, seed=1, version_2=v2)
    dev = password_squad_json(tmp_path / "dev.json", 48, seed=2, version_2=v2)
    out = tmp_path / "run"
    summary = run(
        parse_args(
            common_flags(
                tiny_init,
                out,
                "--version",
                version,
                "--train_file",
                train,
                "--predict_file",
                dev,
                "--seq_length",
                "48",
                "--doc_stride",
                "16",
                "--max_query_length",
                "8",
                "--epochs",
                "3",
                "--batch_size",
                "16",
                "--learning_rate",
                "5e-4",
            )
        )
    )
    metrics = summary["metrics"]
    expected = {"exact_match", "f1"} | (
        {"has_answer_exact_match", "has_answer_f1", "no_answer_exact_match", "no_answer_f1"} if v2 else set()
    )
    assert set(metrics) == expected
    assert metrics["exact_match"] >= 80 and metrics["f1"] >= 85, metrics
    if v2:
        assert metrics["has_answer_exact_match"] >= 80 and metrics["no_answer_exact_match"] >= 80, metrics
    predictions = json.loads((out / "predictions.json").read_text())
    assert set(predictions) == {e.qid for e in squad.read_squad_json(dev)}
    assert (out / "null_odds.json").exists() == v2 and (out / "nbest_predictions.json").exists()
    info = json.loads((out / "task.json").read_text())
    assert info == {
        "task_type": "span",
        "lower_case": True,
        "seq_length": 48,
        "text_fields": ["text", "text_b"],
        "max_query_length": 8,
        "max_answer_length": 30,
    }


def test_squad_json_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {
                "data": [
                    {
                        "paragraphs": [
                            {
                                "context": "abc def",
                                "qas": [{"id": "1", "question": "?", "answers": [{"text": "def", "answer_start": 0}]}],
                            }
                        ]
                    }
                ]
            }
        )
    )
    with pytest.raises(DataError, match=r"data\[0\].paragraphs\[0\].qas\[0\]: answer 'def' is not at answer_start 0"):
        squad.read_squad_json(str(bad))
    bad.write_text("[1, 2]")
    with pytest.raises(DataError, match="not a SQuAD JSON file"):
        squad.read_squad_json(str(bad))


def test_tfds_squad_reader():
    with tfds.testing.mock_data(num_examples=3):
        examples = squad.load_tfds("2.0", "validation")
    assert len(examples) == 3 and all(isinstance(e.context, str) and isinstance(e.qid, str) for e in examples)

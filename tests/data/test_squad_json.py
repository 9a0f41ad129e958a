"""SQuAD JSON: each malformed entry named by its JSON path; skip_bad_rows skips it and keeps the rest."""

import json
import re

import pytest

from keras_bert_lite.data.errors import DataError
from keras_bert_lite.data.squad_json import read_squad_json

CONTEXT = "The bridge was built in 1742."
GOOD = {"id": "good", "question": "When?", "answers": [{"text": "1742", "answer_start": 24}]}


def write(path, paragraphs):
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}))
    return str(path)


@pytest.mark.parametrize(
    "bad, problem",
    [
        ({"question": "When?", "answers": []}, "missing field 'id'"),
        ({"id": "x", "answers": []}, "missing field 'question'"),
        ({"id": "x", "question": 7, "answers": []}, "field 'question' is 7, not text"),
        (
            {"id": "x", "question": "When?", "answers": [{"text": "1742"}]},
            "answer {'text': '1742'} is not {\"text\": <text>, \"answer_start\": <character offset>}",
        ),
        (
            {"id": "x", "question": "When?", "answers": [{"text": "1742", "answer_start": 3}]},
            "answer '1742' is not at answer_start 3",
        ),
        ({"id": "good", "question": "Again?", "answers": []}, "id 'good' is used twice"),
        ("not a question", "a JSON str, not an object"),
        ({"id": "x", "question": "When?", "answer": [{"text": "1742", "answer_start": 0}]}, "missing field 'answers'"),
        (
            {"id": "x", "question": "When?", "answers": [], "is_impossible": "false"},
            "field 'is_impossible' is 'false'; it must be JSON true or false",
        ),
    ],
)
def test_a_malformed_question_is_named_and_skippable(tmp_path, bad, problem):
    path = write(tmp_path / "train.json", [{"context": CONTEXT, "qas": [GOOD, bad]}])
    with pytest.raises(
        DataError,
        match=rf"^{path}: data\[0\].paragraphs\[0\].qas\[1\]: {re.escape(problem)}.*"
        "--skip_bad_rows",
    ):
        read_squad_json(path)
    assert [e.qid for e in read_squad_json(path, skip_bad_rows=True)] == ["good"]


def test_an_unanswerable_question_may_omit_its_answers(tmp_path):
    path = write(
        tmp_path / "train.json",
        [{"context": CONTEXT, "qas": [GOOD, {"id": "none", "question": "Who?", "is_impossible": True}]}],
    )
    assert [(e.qid, e.is_impossible, e.answers) for e in read_squad_json(path)][1] == ("none", True, [])


def test_a_malformed_paragraph_skips_its_questions(tmp_path):
    path = write(tmp_path / "train.json", [{"qas": [GOOD]}, {"context": CONTEXT, "qas": [GOOD]}])
    with pytest.raises(DataError, match=r"data\[0\].paragraphs\[0\]: missing field 'context'"):
        read_squad_json(path)
    assert len(read_squad_json(path, skip_bad_rows=True)) == 1


def test_not_json_names_line_and_column_and_nothing_left_is_an_error(tmp_path):
    path = tmp_path / "train.json"
    path.write_text('{"data": [\n  {"paragraphs": ]}')
    with pytest.raises(DataError, match=rf"^{path}:2:18: not a SQuAD JSON file \(not valid JSON"):
        read_squad_json(str(path))
    only_bad = write(tmp_path / "bad.json", [{"context": CONTEXT, "qas": [{"id": "x"}]}])
    with pytest.raises(DataError, match=rf"^{only_bad}: no questions found"):
        read_squad_json(only_bad, skip_bad_rows=True)


@pytest.mark.parametrize(
    "answers, problem",
    [
        ([{"text": "", "answer_start": 999}], "answers[0] has no text (''); give the answer as it is in the context"),
        ([{"text": "", "answer_start": -7}], "answers[0] has no text ('')"),
        ([{"text": "1742", "answer_start": 24}, {"text": " ", "answer_start": 3}], "answers[1] has no text (' ')"),
        (
            [{"text": "1742", "answer_start": -5}],  # context[-5:-1] is "1742": only the range check sees it
            "answer '1742' has answer_start -5, outside the 29-character context",
        ),
    ],
    ids=["empty-past-end", "empty-negative", "blank-second-answer", "negative-start"],
)
def test_an_answer_without_text_or_outside_the_context_is_named(tmp_path, answers, problem):
    bad = {"id": "x", "question": "When?", "answers": answers}
    path = write(tmp_path / "train.json", [{"context": CONTEXT, "qas": [GOOD, bad]}])
    with pytest.raises(
        DataError,
        match=rf"^{path}: data\[0\].paragraphs\[0\].qas\[1\]: {re.escape(problem)}.*"
        "--skip_bad_rows",
    ):
        read_squad_json(path)
    assert [e.qid for e in read_squad_json(path, skip_bad_rows=True)] == ["good"]
    # An unanswerable SQuAD 2.0 question keeps its empty answer list.
    v2 = write(
        tmp_path / "v2.json",
        [{"context": CONTEXT, "qas": [{"id": "none", "question": "Who?", "answers": [], "is_impossible": True}]}],
    )
    assert [(e.is_impossible, e.answers) for e in read_squad_json(v2)] == [(True, [])]


@pytest.mark.parametrize("unanswerable", [{"is_impossible": True, "answers": []}, {"answers": []}])
def test_a_v1_1_read_refuses_an_unanswerable_question(tmp_path, unanswerable):
    """A SQuAD 2.0 file in a v1.1 run (--version left at 1.1) is refused before training: its unanswerable
    questions trained towards [CLS] and the v1.1 scoring of the dev set crashed after the last epoch."""
    path = write(
        tmp_path / "train-v2.0.json",
        [{"context": CONTEXT, "qas": [GOOD, {"id": "none", "question": "Who?", **unanswerable}]}],
    )
    with pytest.raises(DataError, match=r"qas\[1\]: an unanswerable question .* pass --version 2\.0"):
        read_squad_json(path, version_2=False)
    assert [e.qid for e in read_squad_json(path, version_2=False, skip_bad_rows=True)] == ["good"]
    assert [e.qid for e in read_squad_json(path)] == ["good", "none"]

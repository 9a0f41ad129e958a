"""SQuAD examples and the official JSON files (`{"data": [{"paragraphs": [{"context", "qas": [...]}]}]}`).

Each malformed entry is named by its JSON path (`data[0].paragraphs[3].qas[1]`; the official files are one
line, so a line number would say nothing): a missing or non-text field, an answer with empty or blank text (an
unanswerable SQuAD 2.0 question has `"answers": []`), an `answer_start` outside the context, an answer that is not
at its `answer_start`, an id used twice, bytes that are not UTF-8, an unanswerable question in a v1.1 run.
`skip_bad_rows` (`--skip_bad_rows`) skips such a question, or every question of such a paragraph or article, and
logs how many; a file that is not JSON, or has no "data" list, is always an error.
"""

from __future__ import annotations

import dataclasses
import json

from keras_bert_lite.data.errors import DataError, report_bad_rows
from keras_bert_lite.data.text_files import read_text, undecodable

_LAYOUT = (
    'expected {"data": [{"paragraphs": [{"context": ..., "qas": [{"id", "question", "answers": '
    '[{"text", "answer_start"}]}]}]}]}'
)
_SKIP = "fix it, or pass --skip_bad_rows to skip such questions"


@dataclasses.dataclass
class SquadExample:
    qid: str
    question: str
    context: str
    answers: list  # [(text, char_start)], empty for unanswerable (v2)
    is_impossible: bool = False


def read_squad_json(path: str, *, version_2: bool = True, skip_bad_rows: bool = False) -> list[SquadExample]:
    """Examples of an official SQuAD v1.1 or v2.0 JSON file.

    Args:
        path: the file.
        version_2: whether unanswerable questions (SQuAD 2.0) are allowed; a v1.1 run refuses them as
            malformed entries (a v1.1 run cannot predict or score "no answer").
        skip_bad_rows: skip malformed entries, logging how many, instead of raising.

    Raises:
        DataError: the file is not JSON or has no "data" list; a malformed entry, named by its JSON path
            (unless skip_bad_rows); no questions at all.
    """
    try:
        data = json.loads(read_text(path))["data"]
    except json.JSONDecodeError as error:
        raise DataError(
            f"{path}:{error.lineno}:{error.colno}: not a SQuAD JSON file (not valid JSON: {error.msg}); {_LAYOUT}."
        ) from None
    except (KeyError, TypeError, IndexError):
        data = None
    if not isinstance(data, list):
        raise DataError(f'{path}: not a SQuAD JSON file (no "data" list at the top); {_LAYOUT}.')
    examples, bad, seen = [], [], {}
    for a, article in enumerate(data):
        paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
        if not isinstance(paragraphs, list):
            bad.append(f'{path}: data[{a}]: no "paragraphs" list; {_SKIP}')
            continue
        for p, paragraph in enumerate(paragraphs):
            where = f"data[{a}].paragraphs[{p}]"
            context = paragraph.get("context") if isinstance(paragraph, dict) else None
            qas = paragraph.get("qas", []) if isinstance(paragraph, dict) else None
            problem = _text_problem(context, "context", path) or ("" if isinstance(qas, list) else 'no "qas" list')
            if problem:
                bad.append(f"{path}: {where}: {problem}; {_SKIP}")
                continue
            for q, qa in enumerate(qas):
                try:
                    example = _example(qa, context, path, version_2)
                    if example.qid in seen:
                        raise ValueError(
                            f"id {example.qid!r} is used twice (also by {seen[example.qid]}); ids must "
                            "be unique (predictions.json is keyed by id)"
                        )
                except ValueError as error:
                    bad.append(f"{path}: {where}.qas[{q}]: {error}; {_SKIP}")
                    continue
                seen[example.qid] = f"{where}.qas[{q}]"
                examples.append(example)
    report_bad_rows(path, bad, skip_bad_rows, "malformed entries")
    if not examples:
        raise DataError(f"{path}: no questions found; {_LAYOUT}.")
    return examples


def _text_problem(value, name: str, path: str) -> str:
    if not isinstance(value, str):
        return f"missing field {name!r}" if value is None else f"field {name!r} is {value!r}, not text"
    return undecodable(value, path) or ""


def _example(qa, context: str, path: str, version_2: bool) -> SquadExample:
    """One question as an example. Raises ValueError naming what is wrong."""
    if not isinstance(qa, dict):
        raise ValueError(f'a JSON {type(qa).__name__}, not an object {{"id", "question", "answers"}}')
    qid = qa.get("id")
    if isinstance(qid, int) and not isinstance(qid, bool):
        qid = str(qid)
    problem = _text_problem(qid, "id", path) or _text_problem(qa.get("question"), "question", path)
    if problem:
        raise ValueError(problem)
    impossible = qa.get("is_impossible", False)
    if not isinstance(impossible, bool):
        raise ValueError(f"field 'is_impossible' is {impossible!r}; it must be JSON true or false")
    if "answers" not in qa and not impossible:
        raise ValueError(
            'missing field \'answers\' (a list of {"text", "answer_start"}; an unanswerable SQuAD 2.0 '
            'question has "answers": [] and "is_impossible": true)'
        )
    answers = qa.get("answers", [])
    if not isinstance(answers, list):
        raise ValueError(f"field 'answers' is {answers!r}, not a list")
    pairs = []
    for k, answer in enumerate(answers):
        text = answer.get("text") if isinstance(answer, dict) else None
        start = answer.get("answer_start") if isinstance(answer, dict) else None
        if _text_problem(text, "text", path) or not isinstance(start, int) or isinstance(start, bool):
            raise ValueError(f'answer {answer!r} is not {{"text": <text>, "answer_start": <character offset>}}')
        if not text.strip():
            raise ValueError(
                f"answers[{k}] has no text ({text!r}); give the answer as it is in the context, or mark "
                'an unanswerable SQuAD 2.0 question with "answers": [] and "is_impossible": true'
            )
        if not 0 <= start < len(context):
            raise ValueError(
                f"answer {text!r} has answer_start {start}, outside the {len(context)}-character context; "
                "answer_start is the offset of the answer's first character in the context"
            )
        if context[start : start + len(text)] != text:
            raise ValueError(f"answer {text!r} is not at answer_start {start} of the context")
        pairs.append((text, start))
    if not version_2 and (impossible or not pairs):
        why = "is_impossible is true" if impossible else "'answers' is empty"
        raise ValueError(
            f"an unanswerable question ({why}), which SQuAD v1.1 does not have; for SQuAD 2.0 data pass "
            "--version 2.0, else give the question its answer"
        )
    return SquadExample(qid, qa["question"], context, pairs, impossible)

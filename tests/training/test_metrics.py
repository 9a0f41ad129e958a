"""The paper's metrics against scikit-learn's (golden values), scipy, the official SQuAD v2.0 evaluation and
seqeval's definitions."""

import collections
import json
import pathlib
import re
import string

import numpy as np
import pytest
import scipy.stats

from keras_bert_lite.training import metrics as M

# scikit-learn's values on fixed labels and predictions (tests/golden/make_metrics_goldens.py).
SKLEARN = json.loads((pathlib.Path(__file__).parents[1] / "golden" / "metrics_goldens.json").read_text())
FUNCTIONS = {
    "accuracy": M.accuracy,
    "matthews_corrcoef": M.matthews_corrcoef,
    "macro_f1": M.macro_f1,
    "binary_f1": M.binary_f1,
}


@pytest.mark.parametrize("case", range(len(SKLEARN["cases"])))
def test_classification_metrics_match_sklearn(case):
    """Seeds 0-4: 2 and 3 classes (accuracy, MCC, macro F1), binary F1; then undefined cases, 0 as sklearn."""
    labels, predictions, want = (SKLEARN["cases"][case][k] for k in ("labels", "predictions", "scores"))
    y, p = np.array(labels), np.array(predictions)
    assert {name: FUNCTIONS[name](y, p) for name in want} == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("case", range(len(SKLEARN["multi_label_cases"])))
def test_multi_label_metrics_match_sklearn(case):
    """Seeds 0-4: 4 labels of different frequencies; then a label never true nor predicted (F1 0, in the macro
    mean, as sklearn), nothing predicted, everything right."""
    labels, predictions, want = (SKLEARN["multi_label_cases"][case][k] for k in ("labels", "predictions", "scores"))
    y, p = np.array(labels), np.array(predictions)
    names = [f"l{i}" for i in range(y.shape[1])]
    scores = M.multi_label_scores(y, p, names)
    assert [scores[f"f1_{name}"] for name in names] == pytest.approx(want["label_f1"], abs=1e-12)
    assert M.label_f1(y, p) == pytest.approx(want["label_f1"], abs=1e-12)
    for name in ("micro_f1", "macro_f1", "exact_match"):
        assert scores[name] == pytest.approx(want[name], abs=1e-12), name


@pytest.mark.parametrize("seed", range(5))
def test_correlations_match_scipy(seed):
    rng = np.random.default_rng(seed)
    y = np.round(rng.uniform(0, 5, 300), 1)  # many ties, as STS-B's 0.2 steps
    p = y + rng.normal(0, 1, 300)
    p[:50] = np.round(p[:50])  # ties in the predictions too
    assert M.pearson(y, p) == pytest.approx(scipy.stats.pearsonr(y, p)[0], abs=1e-12)
    assert M.spearman(y, p) == pytest.approx(scipy.stats.spearmanr(y, p)[0], abs=1e-12)


# ---- The official SQuAD v2.0 evaluation script (evaluate-v2.0.py), its functions copied verbatim.
def _official_normalize_answer(s):
    def remove_articles(text):
        regex = re.compile(r"\b(a|an|the)\b", re.UNICODE)
        return re.sub(regex, " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def _official_get_tokens(s):
    if not s:
        return []
    return _official_normalize_answer(s).split()


def _official_compute_exact(a_gold, a_pred):
    return int(_official_normalize_answer(a_gold) == _official_normalize_answer(a_pred))


def _official_compute_f1(a_gold, a_pred):
    gold_toks = _official_get_tokens(a_gold)
    pred_toks = _official_get_tokens(a_pred)
    common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    num_same = sum(common.values())
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        return int(gold_toks == pred_toks)
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_toks)
    recall = 1.0 * num_same / len(gold_toks)
    return (2 * precision * recall) / (precision + recall)


def _official_scores(answers, predictions):
    exact, f1 = {}, {}
    for qid, golds in answers.items():
        golds = [a for a in golds if _official_normalize_answer(a)] or [""]
        exact[qid] = max(_official_compute_exact(a, predictions[qid]) for a in golds)
        f1[qid] = max(_official_compute_f1(a, predictions[qid]) for a in golds)
    return 100.0 * sum(exact.values()) / len(exact), 100.0 * sum(f1.values()) / len(f1)


def test_squad_scores_match_the_official_script():
    answers = {
        "1": ["the Eiffel Tower", "Eiffel Tower"],
        "2": ["1889"],
        "3": [],
        "4": ["Paris, France"],
        "5": ["a blue whale"],
        "6": [],
        "7": ["Gustave Eiffel's company"],
    }
    predictions = {
        "1": "Eiffel tower!",
        "2": "in 1889",
        "3": "",
        "4": "France",
        "5": "",
        "6": "Lyon",
        "7": "Eiffel's company",
    }
    exact, f1 = _official_scores(answers, predictions)
    ours = M.squad_scores(predictions, answers)
    assert ours["exact_match"] == pytest.approx(exact) and ours["f1"] == pytest.approx(f1)
    assert 0 < exact < f1 < 100
    assert ours["no_answer_exact_match"] == pytest.approx(50.0)  # "3" right, "6" wrong
    for prediction, gold in [("The  Cat.", "cat"), ("a an the", ""), ("x y z", "y z w"), ("", "")]:
        assert M.squad_f1(prediction, gold) == pytest.approx(_official_compute_f1(gold, prediction))
        assert M.squad_exact_match(prediction, gold) == _official_compute_exact(gold, prediction)


def test_squad_v1_has_no_subset_scores_and_missing_predictions_count_as_wrong():
    scores = M.squad_scores({"a": "x"}, {"a": ["x"], "b": ["y"]}, version_2=False)
    assert scores == {"exact_match": 50.0, "f1": 50.0}


def test_a_gold_answer_that_normalises_to_nothing_scores_as_each_official_script():
    # evaluate-v1.1.py: f1_score is 0 without common tokens, also when both sides are empty; no subsets.
    # evaluate-v2.0.py: such a gold answer is dropped, leaving "" (1 against an empty prediction); the question
    # still has answers (bool(qa["answers"])), so it is no unanswerable one.
    answers, predictions = {"a": ["The"], "b": ["Paris"]}, {"a": "the", "b": "Paris"}
    assert M.squad_scores(predictions, answers, version_2=False) == {"exact_match": 100.0, "f1": 50.0}
    assert M.squad_scores(predictions, answers, version_2=True) == {"exact_match": 100.0, "f1": 100.0}
    v2 = M.squad_scores({**predictions, "c": ""}, {**answers, "c": []}, version_2=True)
    assert v2["has_answer_f1"] == 100.0 and v2["no_answer_exact_match"] == 100.0


# ---- seqeval's default-mode entity extraction (seqeval/metrics/sequence_labeling.py, get_entities), vendored.
def _seqeval_get_entities(seq):
    prev_tag, prev_type, begin_offset, chunks = "O", "", 0, []
    for i, chunk in enumerate(seq + ["O"]):
        tag, type_ = chunk[0], chunk[1:].split("-", maxsplit=1)[-1] or "_"
        if _end_of_chunk(prev_tag, tag, prev_type, type_):
            chunks.append((prev_type, begin_offset, i - 1))
        if _start_of_chunk(prev_tag, tag, prev_type, type_):
            begin_offset = i
        prev_tag, prev_type = tag, type_
    return chunks


def _end_of_chunk(prev_tag, tag, prev_type, type_):
    return (
        (prev_tag == "E")
        or (prev_tag == "S")
        or (prev_tag == "B" and tag in "BSO")
        or (prev_tag == "I" and tag in "BSO")
        or (prev_tag != "O" and prev_type != type_)
    )


def _start_of_chunk(prev_tag, tag, prev_type, type_):
    return (
        (tag == "B")
        or (tag == "S")
        or (prev_tag == "E" and tag in "EI")
        or (prev_tag == "S" and tag in "EI")
        or (prev_tag == "O" and tag in "EI")
        or (tag != "O" and prev_type != type_)
    )


def _seqeval_f1(true, pred):
    true_set = {(s, *e) for s, seq in enumerate(true) for e in _seqeval_get_entities(seq)}
    pred_set = {(s, *e) for s, seq in enumerate(pred) for e in _seqeval_get_entities(seq)}
    correct = len(true_set & pred_set)
    p = correct / len(pred_set) if pred_set else 0.0
    r = correct / len(true_set) if true_set else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


@pytest.mark.parametrize("scheme", ["IOB1", "IOB2", "IOBES"])
def test_entity_f1_matches_seqeval(scheme):
    rng = np.random.default_rng({"IOB1": 0, "IOB2": 1, "IOBES": 2}[scheme])
    prefixes = {"IOB1": "IB", "IOB2": "IB", "IOBES": "IBES"}[scheme]
    types = ["PER", "LOC", "ORG"]

    def sentence(n):
        return [rng.choice(["O", "O"] + [f"{p}-{t}" for p in prefixes for t in types]) for _ in range(n)]

    true = [sentence(int(rng.integers(1, 15))) for _ in range(60)]
    pred = [[t if rng.random() < 0.7 else s for t, s in zip(seq, sentence(len(seq)))] for seq in true]
    for s_true, s_pred in zip(true, pred):
        assert M.entity_spans(s_true) == set(_seqeval_get_entities(s_true))
        assert M.entity_spans(s_pred) == set(_seqeval_get_entities(s_pred))
    ours = M.entity_f1(true, pred)
    p, r, f = _seqeval_f1(true, pred)
    assert (ours["precision"], ours["recall"], ours["f1"]) == pytest.approx((p, r, f))
    assert 0 < f < 1


def test_bilou_entities_are_the_iobes_entities_of_the_same_tags():
    """BILOU's U- and L- are IOBES's S- and E-: the same spans, per sentence and in the F1 (seqeval's default mode,
    the oracle above, knows only the IOBES names)."""
    rng = np.random.default_rng(3)
    iobes = {"B": "B", "I": "I", "L": "E", "U": "S"}

    def sentence(n):
        return [rng.choice(["O", "O"] + [f"{p}-{t}" for p in "BILU" for t in ("PER", "LOC")]) for _ in range(n)]

    true = [sentence(int(rng.integers(1, 15))) for _ in range(60)]
    pred = [[t if rng.random() < 0.7 else s for t, s in zip(seq, sentence(len(seq)))] for seq in true]
    renamed = [[tag if tag == "O" else iobes[tag[0]] + tag[1:] for tag in seq] for seq in true + pred]
    for seq, as_iobes in zip(true + pred, renamed):
        assert M.entity_spans(seq) == set(_seqeval_get_entities(as_iobes))
    assert M.entity_spans(["U-PER", "B-LOC", "I-LOC", "L-LOC", "O", "U-LOC"]) == {
        ("PER", 0, 0),
        ("LOC", 1, 3),
        ("LOC", 5, 5),
    }
    ours = M.entity_f1(true, pred)
    assert (ours["precision"], ours["recall"], ours["f1"]) == pytest.approx(
        _seqeval_f1(renamed[: len(true)], renamed[len(true) :])
    )


def test_entity_f1_conll_example():
    true = [["B-PER", "I-PER", "O", "B-LOC"], ["I-ORG", "I-ORG", "O"]]  # IOB1: I- may start an entity
    pred = [["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG", "I-ORG", "O"]]
    scores = M.entity_f1(true, pred)
    assert scores["precision"] == scores["recall"] == scores["f1"] == pytest.approx(2 / 3)
    assert scores["f1_PER"] == 1.0 and scores["f1_LOC"] == 0.0
    with pytest.raises(ValueError, match="sentence 0 has 1 true tags, 2 predicted"):
        M.entity_f1([["O"]], [["O", "O"]])

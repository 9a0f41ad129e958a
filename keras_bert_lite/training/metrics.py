"""The paper's dev metrics as plain NumPy/Python functions (cross-checked against sklearn, scipy, the official
SQuAD evaluation script and seqeval in tests/training/test_metrics.py).

    accuracy, binary_f1, macro_f1, matthews_corrcoef    (classification; labels/predictions int [n])
    label_f1, micro_f1, exact_match, multi_label_scores (multi-label; labels/predictions 0/1 [n, labels])
    pearson, spearman                                  (regression; float [n])
    squad_exact_match, squad_f1, squad_scores          (SQuAD v1.1/v2.0, official normalisation)
    entity_spans, entity_f1                            (NER: entity-level precision/recall/F1 like seqeval)
    tag_accuracy                                       (word tagging without entity spans, e.g. part of speech)
"""

from __future__ import annotations

import collections
import re
import string

import numpy as np


# --------------------------------------------------------------------------- classification
def accuracy(labels, predictions) -> float:
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    return float(np.mean(labels == predictions)) if labels.size else 0.0


def _precision_recall_f1(true_positives: float, predicted: float, actual: float) -> tuple[float, float, float]:
    precision = true_positives / predicted if predicted else 0.0
    recall = true_positives / actual if actual else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def binary_f1(labels, predictions, positive: int = 1) -> float:
    """F1 of the positive class (MRPC, QQP): sklearn's `f1_score(average="binary")`, 0 when undefined."""
    labels, predictions = np.asarray(labels) == positive, np.asarray(predictions) == positive
    return _precision_recall_f1(float(np.sum(labels & predictions)), float(np.sum(predictions)), float(np.sum(labels)))[
        2
    ]


def macro_f1(labels, predictions) -> float:
    """Unweighted mean of per-class F1 over the classes present in labels or predictions."""
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    classes = np.union1d(labels, predictions)
    return float(np.mean([binary_f1(labels, predictions, c) for c in classes])) if classes.size else 0.0


def matthews_corrcoef(labels, predictions) -> float:
    """Matthews correlation (CoLA), multiclass form (Gorodkin's R_K), 0 when undefined, as sklearn."""
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    classes, codes = np.unique(np.concatenate([labels, predictions]), return_inverse=True)
    k, n = len(classes), len(labels)
    confusion = np.zeros((k, k), np.float64)
    np.add.at(confusion, (codes[:n], codes[n:]), 1)
    t, p = confusion.sum(axis=1), confusion.sum(axis=0)  # true and predicted counts per class
    c, s = np.trace(confusion), confusion.sum()
    denominator = np.sqrt((s * s - p @ p) * (s * s - t @ t))
    return float((c * s - t @ p) / denominator) if denominator else 0.0


# --------------------------------------------------------------------------- multi-label
def _label_counts(labels, predictions) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per label: true positives, predicted and actual counts, float64 `[labels]`, of 0/1 `[n, labels]` arrays."""
    y, p = np.asarray(labels).astype(bool), np.asarray(predictions).astype(bool)
    return (y & p).sum(axis=0, dtype=np.float64), p.sum(axis=0, dtype=np.float64), y.sum(axis=0, dtype=np.float64)


def label_f1(labels, predictions) -> np.ndarray:
    """F1 of each label, float64 `[labels]`, of 0/1 `[n, labels]` arrays: sklearn's `f1_score(average=None)`, 0
    for a label neither true nor predicted anywhere."""
    return np.array([_precision_recall_f1(*counts)[2] for counts in zip(*_label_counts(labels, predictions))])


def micro_f1(labels, predictions) -> float:
    """F1 of all (example, label) decisions pooled, of 0/1 `[n, labels]` arrays: sklearn's
    `f1_score(average="micro")`."""
    return _precision_recall_f1(*(float(c.sum()) for c in _label_counts(labels, predictions)))[2]


def exact_match(labels, predictions) -> float:
    """The share of examples whose predicted label set is exactly the true one (sklearn's `accuracy_score` of
    0/1 `[n, labels]` arrays: subset accuracy)."""
    y, p = np.asarray(labels).astype(bool), np.asarray(predictions).astype(bool)
    return float(np.mean(np.all(y == p, axis=1))) if len(y) else 0.0


def multi_label_scores(labels, predictions, names) -> dict[str, float]:
    """`micro_f1`, `macro_f1` (the unweighted mean of `label_f1` over every label, as sklearn's
    `average="macro"`), `exact_match` and `f1_<name>` per label, of 0/1 `[n, labels]` arrays; `names`: the
    labels' names in column order."""
    per_label = label_f1(labels, predictions)
    scores = {
        "micro_f1": micro_f1(labels, predictions),
        "macro_f1": float(np.mean(per_label)) if len(names) else 0.0,
        "exact_match": exact_match(labels, predictions),
    }
    scores.update({f"f1_{name}": float(f1) for name, f1 in zip(names, per_label)})
    return scores


# --------------------------------------------------------------------------- regression
def pearson(labels, predictions) -> float:
    x, y = np.asarray(labels, np.float64), np.asarray(predictions, np.float64)
    x, y = x - x.mean(), y - y.mean()
    denominator = np.sqrt((x @ x) * (y @ y))
    return float(x @ y / denominator) if denominator else 0.0


def _ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties given their average rank (scipy.stats.rankdata(method="average"))."""
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    ends = np.r_[starts[1:], len(values)]
    average = (starts + ends + 1) / 2.0  # mean of 1-based ranks starts+1 .. ends
    ranks = np.empty(len(values))
    ranks[order] = np.repeat(average, ends - starts)
    return ranks


def spearman(labels, predictions) -> float:
    """Spearman rank correlation (STS-B): Pearson of the average ranks."""
    return pearson(_ranks(np.asarray(labels, np.float64)), _ranks(np.asarray(predictions, np.float64)))


# --------------------------------------------------------------------------- SQuAD (official v1.1/v2.0 script)
def normalize_answer(text: str) -> str:
    """Lower-case, drop punctuation, the articles a/an/the and extra whitespace (the official normalisation)."""
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def squad_exact_match(prediction: str, truth: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(truth))


def squad_f1(prediction: str, truth: str, version_2: bool = True) -> float:
    """Token-overlap F1 of the normalised strings. An answer that normalises to nothing (v2's no-answer "")
    scores 1 only against another such one in v2.0's script, 0 in v1.1's."""
    predicted, true = normalize_answer(prediction).split(), normalize_answer(truth).split()
    if not predicted or not true:
        return float(predicted == true and version_2)
    common = sum((collections.Counter(predicted) & collections.Counter(true)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(true)
    return 2 * precision * recall / (precision + recall)


def squad_scores(
    predictions: dict[str, str], answers: dict[str, list[str]], version_2: bool = True
) -> dict[str, float]:
    """Exact match and F1 in percent, each the max over an example's gold answers, averaged over examples, as
    the official script of the version computes them.

    Args:
        predictions: question id -> predicted text ("" = no answer, SQuAD v2).
        answers: question id -> gold answer texts (empty list = unanswerable, SQuAD v2).
        version_2: score as evaluate-v2.0.py (gold answers that normalise to nothing dropped; a question
            without gold answers is unanswerable), else as evaluate-v1.1.py.

    Returns:
        {"exact_match", "f1"}, and for v2 data with unanswerable questions also "has_answer_f1",
        "no_answer_f1", ... per subset (as the official v2.0 script, in percent). Missing predictions count as
        wrong.
    """
    exact, f1 = {}, {}
    for qid, truths in answers.items():
        if version_2:
            truths = [t for t in truths if normalize_answer(t)] or [""]
        prediction = predictions.get(qid)
        if prediction is None:
            exact[qid] = f1[qid] = 0.0
            continue
        exact[qid] = max(squad_exact_match(prediction, t) for t in truths)
        f1[qid] = max(squad_f1(prediction, t, version_2) for t in truths)
    scores = {"exact_match": 100.0 * _mean(exact.values()), "f1": 100.0 * _mean(f1.values())}
    has_answer = [q for q, t in answers.items() if t]
    if version_2 and len(has_answer) < len(answers):  # report both subsets as the official script does
        no_answer = [q for q in answers if q not in set(has_answer)]
        for name, subset in (("has_answer", has_answer), ("no_answer", no_answer)):
            scores[f"{name}_exact_match"] = 100.0 * _mean(exact[q] for q in subset)
            scores[f"{name}_f1"] = 100.0 * _mean(f1[q] for q in subset)
    return scores


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


# --------------------------------------------------------------------------- NER (entity level)
_BILOU_AS_IOBES = {"U": "S", "L": "E"}


def entity_spans(tags: list[str]) -> set[tuple[str, int, int]]:
    """Entities (type, first, last word index) in a tag sequence, as seqeval's default (conlleval) mode.

    Accepts IOB1 (CoNLL-2003 as released), IOB2, IOBES and BILOU tags: an entity starts at B-/S-, at I-/E- after
    O or after another type, and ends before a tag that starts a new entity, O, or after E-/S-. BILOU's U- (unit)
    and L- (last) are IOBES's S- and E- under other names (seqeval's default mode knows only the latter).
    """
    spans, start, kind = set(), None, None
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, _, tag_type = tag.partition("-") if tag not in ("O", "") else ("O", "", "")
        prefix = _BILOU_AS_IOBES.get(prefix, prefix)
        ends = start is not None and (prefix in ("O", "B", "S") or tag_type != kind)
        if ends:
            spans.add((kind, start, i - 1))
            start = kind = None
        if prefix in ("B", "S") or (prefix in ("I", "E") and start is None):
            start, kind = i, tag_type
        if prefix in ("E", "S") and start is not None:
            spans.add((kind, start, i))
            start = kind = None
    return spans


def entity_f1(true_tags: list[list[str]], predicted_tags: list[list[str]]) -> dict[str, float]:
    """Micro-averaged entity-level precision, recall and F1 (an entity counts only if type and span match).

    Args:
        true_tags, predicted_tags: per sentence, one tag per word.

    Returns:
        {"precision", "recall", "f1"} in [0, 1], plus "f1_<TYPE>" per entity type.
    """
    if len(true_tags) != len(predicted_tags):
        raise ValueError(f"entity_f1: {len(true_tags)} true sentences but {len(predicted_tags)} predicted.")
    counts = collections.defaultdict(lambda: [0, 0, 0])  # type -> [correct, predicted, true]
    for sentence, (truth, predicted) in enumerate(zip(true_tags, predicted_tags)):
        if len(truth) != len(predicted):
            raise ValueError(f"entity_f1: sentence {sentence} has {len(truth)} true tags, {len(predicted)} predicted.")
        true_spans, predicted_spans = entity_spans(truth), entity_spans(predicted)
        for kind, *_ in true_spans:
            counts[kind][2] += 1
        for span in predicted_spans:
            counts[span[0]][1] += 1
            counts[span[0]][0] += span in true_spans
    total = np.sum(list(counts.values()), axis=0) if counts else np.zeros(3)
    precision, recall, f1 = _precision_recall_f1(*map(float, total))
    scores = {"precision": precision, "recall": recall, "f1": f1}
    scores.update({f"f1_{kind}": _precision_recall_f1(*map(float, c))[2] for kind, c in sorted(counts.items())})
    return scores


def tag_accuracy(true_tags: list[list[str]], predicted_tags: list[list[str]]) -> dict[str, float]:
    """Word-level accuracy: the share of words (of all sentences) whose predicted tag is the true one.

    Args:
        true_tags, predicted_tags: per sentence, one tag per word.

    Returns:
        {"accuracy"} in [0, 1] (0 without words).
    """
    if len(true_tags) != len(predicted_tags):
        raise ValueError(f"tag_accuracy: {len(true_tags)} true sentences but {len(predicted_tags)} predicted.")
    for sentence, (truth, predicted) in enumerate(zip(true_tags, predicted_tags)):
        if len(truth) != len(predicted):
            raise ValueError(
                f"tag_accuracy: sentence {sentence} has {len(truth)} true tags, {len(predicted)} predicted."
            )
    return {"accuracy": accuracy([t for tags in true_tags for t in tags], [p for tags in predicted_tags for p in tags])}

"""Writes tests/golden/metrics_goldens.json: scikit-learn's classification metrics on fixed label/prediction sets.

tests/training/test_metrics.py holds `keras_bert_lite.training.metrics` to these values. scikit-learn is no
dependency of the library or its tests: installed, it also costs every process that imports TensorFlow about a
second (TensorFlow loads Keras' scikit-learn wrappers, which import it), and the suite starts many.

Cases: for seeds 0-4, 200 labels of 2 and of 3 classes with predictions right 70% of the time (accuracy, Matthews
correlation, macro F1) and 100 binary labels against random predictions (binary F1); plus degenerate sets where a
metric is undefined (sklearn's 0). Multi-label cases (`multi_label_cases`): for seeds 0-4, 120 examples of 4
labels of different frequencies with each decision flipped 20% of the time (per-label, micro and macro F1, subset
accuracy), and degenerate sets (a label neither true nor predicted, nothing predicted, everything right). Labels
and predictions are stored with the values, so NumPy's random streams do not matter.

Reference environment: `make goldens` runs it in bench/.venvs/goldens; by hand, in any Python 3.11 venv:
    pip install scikit-learn==1.9.1 numpy
    python tests/golden/make_metrics_goldens.py
"""

import json
import pathlib
import sys

import numpy as np
import sklearn
import sklearn.metrics

OUTPUT = pathlib.Path(__file__).resolve().parent / "metrics_goldens.json"


def scores(y, p, binary=False):
    y, p = np.asarray(y), np.asarray(p)
    if binary:
        return {
            "binary_f1": sklearn.metrics.f1_score(y, p, zero_division=0),
            "matthews_corrcoef": sklearn.metrics.matthews_corrcoef(y, p),
        }
    return {
        "accuracy": sklearn.metrics.accuracy_score(y, p),
        "matthews_corrcoef": sklearn.metrics.matthews_corrcoef(y, p),
        "macro_f1": sklearn.metrics.f1_score(y, p, average="macro"),
    }


def multi_label_scores(y, p):
    y, p = np.asarray(y), np.asarray(p)
    return {
        "label_f1": sklearn.metrics.f1_score(y, p, average=None, zero_division=0).tolist(),
        "micro_f1": sklearn.metrics.f1_score(y, p, average="micro", zero_division=0),
        "macro_f1": sklearn.metrics.f1_score(y, p, average="macro", zero_division=0),
        "exact_match": sklearn.metrics.accuracy_score(y, p),
    }


def multi_label_cases():
    cases = []
    for seed in range(5):
        rng = np.random.default_rng(100 + seed)
        y = (rng.random((120, 4)) < [0.5, 0.3, 0.1, 0.02]).astype(int)
        p = np.where(rng.random((120, 4)) < 0.2, 1 - y, y)
        cases.append({"labels": y.tolist(), "predictions": p.tolist(), "scores": multi_label_scores(y, p)})
    # The third label is never true nor predicted (its F1 0, in the macro mean); nothing predicted; all right.
    for y, p in (
        ([[1, 0, 0], [0, 1, 0], [1, 1, 0]], [[1, 1, 0], [0, 0, 0], [1, 0, 0]]),
        ([[1, 0], [0, 1]], [[0, 0], [0, 0]]),
        ([[1, 0], [1, 1]], [[1, 0], [1, 1]]),
    ):
        cases.append({"labels": y, "predictions": p, "scores": multi_label_scores(y, p)})
    return cases


def main():
    cases = []
    for seed in range(5):
        rng = np.random.default_rng(seed)
        for classes in (2, 3):
            y = rng.integers(0, classes, 200)
            p = np.where(rng.random(200) < 0.7, y, rng.integers(0, classes, 200))
            cases.append({"labels": y.tolist(), "predictions": p.tolist(), "scores": scores(y, p)})
        y, p = rng.integers(0, 2, 100), rng.integers(0, 2, 100)
        cases.append({"labels": y.tolist(), "predictions": p.tolist(), "scores": scores(y, p, binary=True)})
    # A constant prediction: MCC is undefined (sklearn's 0); in the first set the positive class is never
    # predicted (F1 undefined, 0), in the second every label and prediction is positive (F1 1).
    for y, p in (([0, 1, 0, 1], [0, 0, 0, 0]), ([1, 1, 1], [1, 1, 1])):
        cases.append({"labels": y, "predictions": p, "scores": scores(y, p, binary=True)})
    OUTPUT.write_text(
        json.dumps(
            {
                "scikit_learn": sklearn.__version__,
                "numpy": np.__version__,
                "python": sys.version.split()[0],
                "cases": cases,
                "multi_label_cases": multi_label_cases(),
            },
            indent=None,
        )
        + "\n"
    )
    print(f"wrote {OUTPUT}: {len(cases)} cases (scikit-learn {sklearn.__version__})")


if __name__ == "__main__":
    main()

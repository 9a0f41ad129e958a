"""Multi-label decisions: probability above the threshold, compared as logits; the dev-tuned threshold."""

import numpy as np
import pytest

from keras_bert_lite.training.metrics import micro_f1
from keras_bert_lite.training.thresholds import THRESHOLD_GRID, above_threshold, threshold_logit, tuned_threshold


@pytest.mark.parametrize("threshold", [0.05, 0.3, 0.5, 0.9])
def test_a_label_is_predicted_when_its_probability_exceeds_the_threshold(threshold):
    logits = np.random.default_rng(0).normal(0, 3, (200, 5)).astype(np.float32)
    probabilities = 1 / (1 + np.exp(-logits.astype(np.float64)))
    np.testing.assert_array_equal(above_threshold(logits, threshold), probabilities > threshold)
    assert 1 / (1 + np.exp(-threshold_logit(threshold))) == pytest.approx(threshold, abs=1e-15)


def test_the_tuned_threshold_is_the_grids_best_for_micro_f1():
    rng = np.random.default_rng(1)
    targets = (rng.random((300, 4)) < 0.3).astype(np.float32)
    # Positives around probability 0.3, negatives around 0.1: 0.5 predicts almost nothing.
    logits = np.where(targets == 1, threshold_logit(0.3), threshold_logit(0.1)) + rng.normal(0, 0.4, (300, 4))
    best = tuned_threshold(targets, logits)
    scores = {t: micro_f1(targets, above_threshold(logits, t)) for t in THRESHOLD_GRID}
    assert best in THRESHOLD_GRID and scores[best] == max(scores.values()) > scores[0.5] + 0.5
    assert 0.1 < best < 0.3


def test_of_equally_good_thresholds_the_one_nearest_the_default():
    targets = np.array([[1, 0], [0, 1]], np.float32)
    logits = np.array([[9.0, -9.0], [-9.0, 9.0]])  # every threshold of the grid is right
    assert tuned_threshold(targets, logits) == 0.5
    assert tuned_threshold(targets, logits, default=0.33) == 0.35
    assert THRESHOLD_GRID[0] == 0.05 and THRESHOLD_GRID[-1] == 0.95 and len(THRESHOLD_GRID) == 19

"""Multi-label decisions: a label is predicted when its probability (sigmoid of its logit) exceeds a threshold.

The comparison is made on the logit, against the threshold's logit (`threshold_logit`), here and in the exported
signature: no two sigmoid implementations have to agree at the boundary.

    predicted = above_threshold(logits, 0.5)                  # bool [n, labels]
    threshold = tuned_threshold(dev_targets, dev_logits)      # the grid's best for dev micro F1
"""

from __future__ import annotations

import math

import numpy as np

from keras_bert_lite.training.metrics import micro_f1

# 0.05, 0.10, ..., 0.95: coarse enough not to fit dev's noise, fine enough for skewed label frequencies.
THRESHOLD_GRID = tuple(round(0.05 * k, 2) for k in range(1, 20))


def threshold_logit(threshold: float) -> float:
    """The logit whose sigmoid is `threshold` (in (0, 1)): log(t / (1 - t))."""
    return math.log(threshold / (1.0 - threshold))


def above_threshold(logits: np.ndarray, threshold: float) -> np.ndarray:
    """bool `[n, labels]`: which labels are predicted, from logits `[n, labels]`."""
    return np.asarray(logits) > threshold_logit(threshold)


def tuned_threshold(targets: np.ndarray, logits: np.ndarray, default: float = 0.5) -> float:
    """The threshold of `THRESHOLD_GRID` with the best micro F1 of `logits` `[n, labels]` against 0/1 `targets`;
    of equally good ones, the one nearest `default`."""
    scores = {t: micro_f1(targets, above_threshold(logits, t)) for t in THRESHOLD_GRID}
    return max(THRESHOLD_GRID, key=lambda t: (scores[t], -abs(t - default)))

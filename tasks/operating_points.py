"""The answer decision's arithmetic, next to the models it belongs to (the configuration only
loads and validates them): the gate's probability, where it answers and refuses, and how a
threshold is read off a dev risk-coverage curve (``training/fit_decision.py``).

Usage::

    logistic_probability(settings.evidence.answerability, gate_features)   # 0.97
    answer_at, refuse_below = operating_points(settings.evidence)

>>> from config.settings import OperatingPoint
>>> curve = [OperatingPoint(threshold=t, precision=p, coverage=0.5)
...          for t, p in ((0.1, 0.8), (0.3, 0.96), (0.5, 0.94), (0.7, 1.0))]
>>> threshold_for(curve, 0.95), threshold_for(curve, 0.9)
(0.7, 0.3)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from config.settings import (
    AnswerabilityModel,
    EvidenceSettings,
    LinearModel,
    OperatingPoint,
    QuoteModel,
)
from tasks.decision_features import FeatureRecord, value


def linear_terms(model: LinearModel, features: FeatureRecord) -> dict[str, float]:
    """Each feature's term, ``weight * (feature - mean) / scale`` (its share of the logit).

    >>> from tasks.decision_features import CandidateFeatures
    >>> model = LinearModel(features=["title"], mean=[0.5], scale=[0.5], weights=[2.0])
    >>> linear_terms(model, CandidateFeatures(title=1.0))
    {'title': 2.0}
    """
    return {
        name: w * (value(features, name) - m) / s
        for name, m, s, w in zip(model.features, model.mean, model.scale, model.weights, strict=True)
    }


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def logistic_probability(model: AnswerabilityModel | QuoteModel, features: FeatureRecord) -> float:
    """``sigmoid(bias + sum(weight * (feature - mean) / scale))``: the probability that the
    passages answer, from a reading's features (or that a unit is what to quote)."""
    return sigmoid(model.bias + sum(linear_terms(model, features).values()))


def threshold_for(curve: Sequence[OperatingPoint], precision: float) -> float:
    """The lowest threshold from which every point of the curve has ``precision``; the
    strictest point when none reaches it."""
    chosen = curve[-1].threshold
    for point in reversed(curve):
        if point.precision < precision:
            break
        chosen = point.threshold
    return chosen


def operating_points(evidence: EvidenceSettings) -> tuple[float, float]:
    """(answer at or above, refuse below) of the gate."""
    return evidence.answerability.answer_at, evidence.answerability.refuse_below

"""The answer decision's arithmetic, next to the models it belongs to (the configuration only
loads and validates them): the logistic gate's probability, and where each gate answers and
refuses.

Usage::

    logistic_probability(settings.evidence.answerability, reading.features)   # 0.97
    answer_at, refuse_below = operating_points(settings.evidence)

>>> from config.settings import AnswerabilityGate, OperatingPoint
>>> curve = [OperatingPoint(threshold=t, precision=p, coverage=0.5)
...          for t, p in ((0.1, 0.8), (0.3, 0.96), (0.5, 0.94), (0.7, 1.0))]
>>> threshold_for(curve, 0.95), threshold_for(curve, 0.9)
(0.7, 0.3)
>>> learned_points(AnswerabilityGate(curve=curve, undecided_band=0.1), 0.9)
(0.3, 0.19999999999999998)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from config.settings import AnswerabilityGate, AnswerabilityModel, EvidenceSettings, OperatingPoint


def logistic_probability(model: AnswerabilityModel, features: Mapping[str, float]) -> float:
    """``sigmoid(bias + sum(weight * (feature - mean) / scale))``: the probability that the
    passages answer, from a reading's features."""
    z = model.bias + sum(
        w * (features[name] - m) / s
        for name, m, s, w in zip(model.features, model.mean, model.scale, model.weights, strict=True)
    )
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def threshold_for(curve: Sequence[OperatingPoint], precision: float) -> float:
    """The lowest threshold from which every point of the curve has ``precision``; the
    strictest point when none reaches it."""
    chosen = curve[-1].threshold
    for point in reversed(curve):
        if point.precision < precision:
            break
        chosen = point.threshold
    return chosen


def learned_points(gate: AnswerabilityGate, precision: float) -> tuple[float, float]:
    """(answer at or above, refuse below) of the learned gate for ``precision``: explicit
    ``answer_at`` / ``refuse_below`` are kept, the rest comes from its dev curve."""
    answer_at = gate.answer_at if gate.answer_at is not None else threshold_for(gate.curve, precision)
    refuse_below = (
        gate.refuse_below if gate.refuse_below is not None else max(0.0, answer_at - gate.undecided_band)
    )
    return answer_at, min(refuse_below, answer_at)


def operating_points(evidence: EvidenceSettings) -> tuple[float, float]:
    """(answer at or above, refuse below) of the gate in use."""
    if evidence.gate == "learned":
        return learned_points(evidence.learned, evidence.target_precision)
    return evidence.answerability.answer_at, evidence.answerability.refuse_below

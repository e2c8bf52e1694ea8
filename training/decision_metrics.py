"""What a settled decision is worth, held out: rates, bootstrap intervals, risk-coverage
curves and operating points (``training/fit_decision.py``).

A decided row is a dict with ``answerable``, ``probability``, ``page`` (the chosen page,
"" for none), ``right`` (answerable and the chosen page answers), ``group`` (what is held
out together) and ``opener``.

Usage::

    rates(decided, 0.6)            # {"answered_right": 0.81, "refused": 0.9, "precision": 0.91, ...}
    with_interval(decided, 0.6)    # the same, each "0.810 [0.78, 0.84]" over groups resampled
    curve = risk_coverage(decided)
    answer_at, refuse_below, how = operating_point(decided, curve, 0.9)

>>> rows = [{"answerable": True, "probability": 0.9, "page": "a", "right": True, "group": "g"},
...         {"answerable": False, "probability": 0.7, "page": "b", "right": False, "group": "h"}]
>>> rates(rows, 0.8)["precision"], rates(rows, 0.5)["precision"]
(1.0, 0.5)
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np

from config.settings import OperatingPoint
from tasks.operating_points import threshold_for

SEED = 13
BOOTSTRAP = 1000
CURVE_POINTS = 101
UNDECIDED_DROP = 0.1  # refuse_below: where the held-out precision is this much lower
# a wrong answer costs a support team as much as this many hand-offs to a person (below
# answer_at the customer is still offered the page and a person)
WRONG_COST = 2.0
Decided = dict[str, Any]


def answered(decided: Sequence[Decided], answer_at: float) -> list[Decided]:
    return [r for r in decided if r["page"] and r["probability"] >= answer_at]


def rates(decided: Sequence[Decided], answer_at: float) -> dict[str, float]:
    """Answered right (of the answerable), refused (of the unanswerable), precision, wrong
    answers."""
    answerable = [r for r in decided if r["answerable"]]
    refusable = [r for r in decided if not r["answerable"]]
    given = answered(decided, answer_at)
    right = [r for r in given if r["right"]]
    return {
        "answered_right": len(right) / len(answerable) if answerable else 0.0,
        "refused": sum(not (r["page"] and r["probability"] >= answer_at) for r in refusable)
        / len(refusable)
        if refusable
        else 0.0,
        "precision": len(right) / len(given) if given else 1.0,
        "wrong_answers": float(len(given) - len(right)),
    }


def with_interval(decided: Sequence[Decided], answer_at: float) -> dict[str, str]:
    """Each rate with its 95 % bootstrap interval, resampling the held-out groups."""
    by_group: dict[str, list[Decided]] = {}
    for row in decided:
        by_group.setdefault(row["group"], []).append(row)
    names = sorted(by_group)
    rng = random.Random(SEED)
    samples: dict[str, list[float]] = {}
    for _ in range(BOOTSTRAP):
        drawn = [r for _ in names for r in by_group[rng.choice(names)]]
        for key, value in rates(drawn, answer_at).items():
            samples.setdefault(key, []).append(value)
    point = rates(decided, answer_at)
    return {
        key: (
            f"{point[key]:.0f}"
            if key == "wrong_answers"
            else f"{point[key]:.3f} [{np.percentile(samples[key], 2.5):.3f}, "
            f"{np.percentile(samples[key], 97.5):.3f}]"
        )
        for key in point
    }


def risk_coverage(decided: Sequence[Decided], points: int = CURVE_POINTS) -> list[dict[str, float]]:
    """Per threshold: the precision of the answers and their coverage (answerable rows
    answered from a right page)."""
    answerable = sum(r["answerable"] for r in decided)
    curve = []
    for step in range(points):
        threshold = round(step / (points - 1), 4)
        given = answered(decided, threshold)
        right = sum(r["right"] for r in given)
        curve.append(
            {
                "threshold": threshold,
                "precision": round(right / len(given), 4) if given else 1.0,
                "coverage": round(right / answerable, 4) if answerable else 0.0,
                "answered": len(given),
            }
        )
    return curve


def curve_threshold(curve: Sequence[dict[str, float]], precision: float) -> float:
    """The lowest threshold from which every point of the curve reaches ``precision``."""
    points = [OperatingPoint(**{k: p[k] for k in ("threshold", "precision", "coverage")}) for p in curve]
    return threshold_for(points, precision)


def net_right(decided: Sequence[Decided], answer_at: float, wrong_cost: float = WRONG_COST) -> float:
    """Right answers less ``wrong_cost`` per wrong answer at ``answer_at``."""
    given = answered(decided, answer_at)
    right = sum(r["right"] for r in given)
    return right - wrong_cost * (len(given) - right)


def cheapest_threshold(decided: Sequence[Decided], wrong_cost: float) -> float:
    """The threshold with the most right answers less ``wrong_cost`` per wrong answer."""
    thresholds = [round(i / (CURVE_POINTS - 1), 4) for i in range(CURVE_POINTS)]
    return max(thresholds, key=lambda t: (net_right(decided, t, wrong_cost), t))


def operating_point(
    decided: Sequence[Decided], curve: Sequence[dict[str, float]], target: float
) -> tuple[float, float, str]:
    """(answer_at, refuse_below, how they were chosen) from held-out rows: ``answer_at`` the
    lowest threshold from which the curve keeps ``target`` precision, ``refuse_below`` the
    same for ``target - UNDECIDED_DROP``; where the curve never reaches the target, the
    threshold with the most right answers less ``WRONG_COST`` per wrong one."""
    answer_at = curve_threshold(curve, target)
    if answer_at < 1.0 and curve[-1]["precision"] >= target:
        lower = curve_threshold(curve, target - UNDECIDED_DROP)
        return (
            answer_at,
            min(answer_at, lower),
            f"the held-out curve keeps precision {target} from {answer_at} "
            f"and {target - UNDECIDED_DROP:.2f} from {lower}",
        )
    answer_at = cheapest_threshold(decided, WRONG_COST)
    refuse_below = min(answer_at, cheapest_threshold(decided, 1.0))
    how = (
        f"the held-out curve never keeps precision {target}; answer_at: most right answers less "
        f"{WRONG_COST:g} per wrong answer, refuse_below: less 1 per wrong answer"
    )
    return answer_at, refuse_below, how

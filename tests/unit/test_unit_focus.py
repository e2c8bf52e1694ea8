"""The reader scores every unit of a passage with one product: the per-unit rows must give
exactly the MaxSim of each unit, and of each window of adjacent units."""

from __future__ import annotations

import numpy as np
import pytest

from tasks.answerability import closest_tokens
from tasks.evidence import EvidenceScorer


def unit_vectors(rng: np.random.Generator, rows: int) -> np.ndarray:
    vectors = rng.normal(size=(rows, 16)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.mark.parametrize("seed", range(5))
def test_rows_give_each_unit_and_each_window_its_maxsim(seed):
    rng = np.random.default_rng(seed)
    query = unit_vectors(rng, 7)
    units = [unit_vectors(rng, int(n)) for n in rng.integers(1, 30, size=9)]
    closest = closest_tokens(query, units)
    assert closest.shape == (9, 7)
    for index, unit in enumerate(units):
        assert closest[index].mean() == pytest.approx(EvidenceScorer.maxsim(query, unit), abs=1e-5)
    for start in range(len(units) - 1):
        window = np.concatenate(units[start : start + 2])
        assert closest[start : start + 2].max(axis=0).mean() == pytest.approx(
            EvidenceScorer.maxsim(query, window), abs=1e-5
        )


def test_an_empty_query_or_unit_scores_zero():
    rng = np.random.default_rng(0)
    units = [unit_vectors(rng, 3), np.zeros((0, 16), dtype=np.float32)]
    assert closest_tokens(np.zeros((0, 16), dtype=np.float32), units).shape == (2, 0)
    closest = closest_tokens(unit_vectors(rng, 4), units)
    assert closest.shape == (2, 4) and not closest[1].any()
    assert closest_tokens(unit_vectors(rng, 4), []).shape == (0, 4)

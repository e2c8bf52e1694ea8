"""SQuAD 2.0 dev (``../shared/datasets/squad-v2.0/dev-v2.0.json``) as training data for the
answerability model and as a held-out answer pack: its articles, and the fixed-seed draw of
the articles held out (``HELD_OUT_ARTICLES``), shared by the training
(``training/answerability_data.py``) and the measurement (``bench/answers.py``,
``bench/squad_pack.py``) so neither ever sees the other's articles.

Usage::

    articles = load_squad()
    held = held_out_titles(articles, seed=13)
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from evaluation.reporting import DATASETS

SQUAD = DATASETS / "squad-v2.0" / "dev-v2.0.json"
HELD_OUT_ARTICLES = 7


def load_squad(path: Path = SQUAD) -> list[dict[str, Any]]:
    """The articles of a SQuAD 2.0 file."""
    return list(json.loads(path.read_text(encoding="utf-8"))["data"])


def held_out_indices(count: int, rng: random.Random) -> set[int]:
    """The indices of the held-out articles among ``count``, drawn from ``rng``."""
    order = list(range(count))
    rng.shuffle(order)
    return set(order[:HELD_OUT_ARTICLES])


def held_out_titles(articles: list[dict[str, Any]], seed: int) -> list[str]:
    """The titles of the held-out articles (the draw ``squad_pairs`` makes with ``seed``)."""
    return sorted(articles[i]["title"] for i in held_out_indices(len(articles), random.Random(seed)))

"""Training pairs for the answerability model: (question, passage window) -> answers or not.

SQuAD 2.0 dev (``../shared/datasets/squad-v2.0/dev-v2.0.json``): every paragraph is cut into the
windows the product reads at turn time (``tasks.answerability_model.windows``: two adjacent
units under the passage's heading, here the article title). For each question:

* answerable: the window that holds a gold answer is positive, and one negative: another window
  of the same paragraph or, as often, a window of another paragraph of the same article (a
  related page is not an answer);
* unanswerable: the window that holds the *plausible* answer (written to fool word overlap) is
  a hard negative.

A share of questions is wrapped the way customers write (a greeting before, "can you help me
with that?" after, no capital or question mark): the wrapper must not change the label.

Articles are split by a fixed seed into training and held-out articles (``HELD_OUT_ARTICLES``).

Usage::

    pairs = squad_pairs(load_squad(SQUAD), seed=13)
    train, held_out = pairs["train"], pairs["held_out"]    # lists of Pair
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from tasks.answerability_model import windows
from tasks.passage_text import split_units

SQUAD = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "squad-v2.0" / "dev-v2.0.json"
HELD_OUT_ARTICLES = 7
WRAP_SHARE = 0.3
OPENERS = ("Hi, good morning. ", "Hello. ", "Hi there, I have a question. ", "Good afternoon! ",
           "I need some help. ", "Hi. I'm trying to find something out about {topic}. ",
           "I'm looking into {topic}. ")
CLOSERS = (" Can you help me with that?", " Thanks!", " Thank you.", " Could you help?",
           " I'd appreciate any help.", "")


@dataclass(frozen=True)
class Pair:
    question: str
    window: str
    label: int
    group: str          # the question's id: held-out figures are per question
    kind: str           # gold | same_paragraph | other_paragraph | plausible | unanswerable


def load_squad(path: Path = SQUAD) -> list[dict]:
    """The articles of a SQuAD 2.0 file."""
    return json.loads(path.read_text(encoding="utf-8"))["data"]


def wrap(question: str, topic: str, rng: random.Random) -> str:
    """The question as a customer might write it, around the same ask."""
    opener = rng.choice(OPENERS).format(topic=topic)
    text = question[0].lower() + question[1:] if rng.random() < 0.3 else question
    if rng.random() < 0.3:
        text = text.rstrip("?")
    return f"{opener}{text}{rng.choice(CLOSERS)}".strip()


@dataclass(frozen=True)
class Span:
    """A window of a paragraph and the characters of the paragraph it covers."""

    text: str
    start: int
    end: int


def paragraph_windows(context: str, title: str) -> list[Span]:
    """The product's windows of a paragraph (``tasks.answerability_model.windows``), located."""
    units = split_units(context)
    bounds, position = [], 0
    for unit in units:
        found = context.find(unit.text[:20], position)
        start = found if found >= 0 else position
        position = start + len(unit.text)
        bounds.append((start, position))
    return [Span(w.text, bounds[w.first][0], bounds[w.last - 1][1])
            for w in windows(units, title)]


def _holding(spans: list[Span], starts: list[int]) -> list[int]:
    return [i for i, w in enumerate(spans) if any(w.start <= s < w.end for s in starts)]


def _article_pairs(article: dict, rng: random.Random) -> list[Pair]:
    topic = article["title"].replace("_", " ")
    paragraphs = [(p, paragraph_windows(p["context"], topic)) for p in article["paragraphs"]]
    pairs: list[Pair] = []
    for index, (paragraph, spans) in enumerate(paragraphs):
        if not spans:
            continue
        others = [s for j, (_, s) in enumerate(paragraphs) if j != index and s]
        for qa in paragraph["qas"]:
            question = qa["question"].strip()
            if rng.random() < WRAP_SHARE:
                question = wrap(question, topic, rng)
            answers = qa["plausible_answers"] if qa.get("is_impossible") else qa["answers"]
            holding = _holding(spans, [a["answer_start"] for a in answers])
            rest = [i for i in range(len(spans)) if i not in holding]
            chosen: list[tuple[Span, str, int]] = []
            if qa.get("is_impossible"):
                hard = holding[:1] or rng.sample(range(len(spans)), 1)
                chosen.append((spans[hard[0]], "plausible" if holding else "unanswerable", 0))
            elif holding:
                chosen.append((spans[holding[0]], "gold", 1))
                negatives = [(spans[i], "same_paragraph") for i in rest]
                if others:
                    negatives.append((rng.choice(rng.choice(others)), "other_paragraph"))
                if negatives:
                    span, kind = negatives[0] if not rest else rng.choice(
                        [rng.choice(negatives[:-1] or negatives), negatives[-1]])
                    chosen.append((span, kind, 0))
            pairs += [Pair(question, span.text, label, qa["id"], kind)
                      for span, kind, label in chosen]
    return pairs


def squad_pairs(articles: list[dict], seed: int) -> dict[str, list[Pair]]:
    """Pairs of the training articles and of the held-out articles."""
    rng = random.Random(seed)
    order = list(range(len(articles)))
    rng.shuffle(order)
    held = set(order[:HELD_OUT_ARTICLES])
    split: dict[str, list[Pair]] = {"train": [], "held_out": []}
    for index, article in enumerate(articles):
        split["held_out" if index in held else "train"] += _article_pairs(article, rng)
    return split


def held_out_titles(articles: list[dict], seed: int) -> list[str]:
    """The titles of the held-out articles (the same draw as ``squad_pairs``)."""
    order = list(range(len(articles)))
    random.Random(seed).shuffle(order)
    return sorted(articles[i]["title"] for i in order[:HELD_OUT_ARTICLES])

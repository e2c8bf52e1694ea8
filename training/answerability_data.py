"""Training pairs for the answerability model: (question, passage window) -> answers or not.

SQuAD 2.0 dev (``../shared/datasets/squad-v2.0/dev-v2.0.json``): every paragraph is cut into the
windows the product reads at turn time (``tasks.answerability_model.windows``: two adjacent
units under the passage's heading, here the article title). For each question:

* answerable: the window that holds a gold answer is positive; the window of the same
  paragraph and the window of another paragraph of the article that share most words with the
  question are hard negatives (a related page is not an answer);
* unanswerable: the window that holds the *plausible* answer (written to fool word overlap) is
  a hard negative, and so are the two closest other windows.

A share of questions is wrapped the way customers write (a greeting before, "can you help me
with that?" after, no capital or question mark): the wrapper must not change the label.

Articles are split by a fixed seed into training and held-out articles
(``evaluation.squad.HELD_OUT_ARTICLES``).

Usage::

    pairs = squad_pairs(load_squad(), seed=13)       # evaluation.squad.load_squad
    train, held_out = pairs["train"], pairs["held_out"]    # lists of Pair
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from evaluation.squad import held_out_indices
from storage.text import ALNUM
from tasks.answerability_model import windows
from tasks.passage_text import split_units

WRAP_SHARE = 0.3
OPENERS = (
    "Hi, good morning. ",
    "Hello. ",
    "Hi there, I have a question. ",
    "Good afternoon! ",
    "I need some help. ",
    "Hi. I'm trying to find something out about {topic}. ",
    "I'm looking into {topic}. ",
)
CLOSERS = (
    " Can you help me with that?",
    " Thanks!",
    " Thank you.",
    " Could you help?",
    " I'd appreciate any help.",
    "",
)


@dataclass(frozen=True)
class Pair:
    question: str
    window: str
    label: int
    group: str  # the question's id: held-out figures are per question
    kind: str  # gold | same_paragraph | other_paragraph | plausible | unanswerable


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
    return [Span(w.text, bounds[w.first][0], bounds[w.last - 1][1]) for w in windows(units, title)]


def _holding(spans: list[Span], starts: list[int]) -> list[int]:
    return [i for i, w in enumerate(spans) if any(w.start <= s < w.end for s in starts)]


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in ALNUM.findall(text.lower()) if len(w) > 2)


def _hardest(question: str, spans: list[Span]) -> Span | None:
    """The window that shares most words with the question: the hardest negative."""
    asked = _words(question)
    return max(spans, key=lambda s: len(asked & _words(s.text)), default=None)


def _article_pairs(article: dict[str, Any], rng: random.Random) -> list[Pair]:
    """Per question: the gold window (or SQuAD's plausible-answer window, negative), the
    hardest other window of its paragraph and the hardest window of another paragraph of
    the article (both negative)."""
    topic = article["title"].replace("_", " ")
    paragraphs = [(p, paragraph_windows(p["context"], topic)) for p in article["paragraphs"]]
    pairs: list[Pair] = []
    for index, (paragraph, spans) in enumerate(paragraphs):
        if not spans:
            continue
        others = [w for j, (_, s) in enumerate(paragraphs) if j != index for w in s]
        for qa in paragraph["qas"]:
            asked = qa["question"].strip()
            question = wrap(asked, topic, rng) if rng.random() < WRAP_SHARE else asked
            impossible = bool(qa.get("is_impossible"))
            answers = qa["plausible_answers"] if impossible else qa["answers"]
            holding = _holding(spans, [a["answer_start"] for a in answers])
            chosen: list[tuple[Span, str, int]] = []
            if holding:
                chosen.append(
                    (spans[holding[0]], "plausible" if impossible else "gold", 0 if impossible else 1)
                )
            elif not impossible:
                continue
            rest = [s for i, s in enumerate(spans) if i not in holding]
            same = _hardest(asked, rest)
            if same is not None:
                chosen.append((same, "same_paragraph" if holding else "unanswerable", 0))
            other = _hardest(asked, rng.sample(others, min(len(others), 40)))
            if other is not None:
                chosen.append((other, "other_paragraph", 0))
            pairs += [Pair(question, span.text, label, qa["id"], kind) for span, kind, label in chosen]
    return pairs


def squad_pairs(articles: list[dict[str, Any]], seed: int) -> dict[str, list[Pair]]:
    """Pairs of the training articles and of the held-out articles
    (``evaluation.squad.held_out_titles`` names the same held-out draw)."""
    rng = random.Random(seed)
    held = held_out_indices(len(articles), rng)
    split: dict[str, list[Pair]] = {"train": [], "held_out": []}
    for index, article in enumerate(articles):
        split["held_out" if index in held else "train"] += _article_pairs(article, rng)
    return split

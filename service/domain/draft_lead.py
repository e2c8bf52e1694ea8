"""A drafted article leads with the sentence that answers its question: people's replies
often give the steps first and the answer after ("To claim it, open Billing... Yes: students
get 50% off for 12 months."), and a customer quoted the article's first sentences would read
the steps without the answer. Which sentence answers is the answerability model's reading
(``EvidenceScorer.answerable``, the judgement every answer goes through), not a rule.

Usage::

    paragraphs, sources = leading_with_answer(
        "Do you offer a student discount?", paragraphs, sources, runtime.scorer.answerable)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

Answerable = Callable[[str, Sequence[str]], list[float]]  # ``EvidenceScorer.answerable``
S = TypeVar("S")  # what a sentence's source is (a draft's: the conversation it quotes)


def leading_with_answer(
    question: str,
    paragraphs: Sequence[Sequence[str]],
    sources: Sequence[S],
    answerable: Answerable,
) -> tuple[list[list[str]], list[S]]:
    """``paragraphs`` (each a list of sentences) with the sentence most likely to answer
    ``question`` moved to the front as a paragraph of its own, and ``sources`` (one per
    sentence, in order) moved with it; unchanged when the first sentence already answers best.

    >>> leading_with_answer("Student discount?", [["Open Billing.", "Upload your card."],
    ...                     ["Yes: 50% off."]], [{"s": 1}, {"s": 2}, {"s": 3}],
    ...                     lambda q, texts: [0.1, 0.2, 0.9])
    ([['Yes: 50% off.'], ['Open Billing.', 'Upload your card.']], [{'s': 3}, {'s': 1}, {'s': 2}])
    """
    placed = [(p, s) for p, said in enumerate(paragraphs) for s in range(len(said))]
    kept = [list(p) for p in paragraphs]
    if len(placed) < 2:
        return kept, list(sources)
    scores = answerable(question, [paragraphs[p][s] for p, s in placed])
    best = max(range(len(placed)), key=lambda i: scores[i])
    if best == 0 or scores[best] <= scores[0]:
        return kept, list(sources)
    p, s = placed[best]
    leading = kept[p].pop(s)
    order = [best, *(i for i in range(len(placed)) if i != best)]
    return [[leading], *(said for said in kept if said)], [sources[i] for i in order]

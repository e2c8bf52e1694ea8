"""What a conversation is about: the page the question it turns on
(``tasks.question_behind``: the question that led to a hand-off, not a "yes" or an earlier
question) was answered from; else the page nearest that question, named the way the
knowledge-gap report names its groups, searched under the slots it was asked under (the pages
that customer could reach). A page only suggested ("this article may help") names nothing. A
question far from every page in reach (its cosine to the nearest page's passage under
``TOPIC_FLOOR``, or that passage read as answering it under ``TOPIC_ANSWERS_FLOOR``) is about
none of them, never a wrong one ("Do you offer a student discount?" is not about Refunds,
"Where do I upload my student card?" not about Payment methods): it counts under the report's
"other" (``service.domain.breakdowns.OTHER``).

Usage::

    nearest = nearest_page(runtime.retriever, {"access_level": "customer", "tenant": "acme"})
    nearest("Do you ship to Antarctica?")          # ("billing/payment-methods.md", ...) or None
    name = topic_namer(runtime.retriever, encoders.dense.encode, "acme", answerable=scorer.answerable)
    name("How do I export our data?", {"access_level": "customer"})    # "data/export.md"
    name("Do you ship to Antarctica?", {"access_level": "customer"})   # "" (no page near)
    conversation_topic(turns, pages_of, name)      # the page a stored conversation is about
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from storage.retrieval.request import RetrievalRequest
from tasks.gap_report import Nearest
from tasks.question_behind import PagesOf, question_behind

if TYPE_CHECKING:
    from storage.kb.embeddings import DenseEncoding
    from storage.memory import StoredTurn
    from storage.retrieval.protocol import Retriever

TopicNamer = Callable[[str, Mapping[str, object]], str]
Encode = Callable[[Sequence[str]], Sequence["DenseEncoding"]]  # ``encoders.dense.encode``
# the MiniLM cosine of a question and the passage of the page it would be named after, under
# which it is about no page: the highest floor (0.02 steps) that keeps every question a page
# answers named (59 of 59 in examples/answer-sets; the lowest is 0.327) while 36 of the 48
# questions on subjects the knowledge base lacks (examples/gaps/paraphrase-groups.jsonl) fall
# under it; chosen by training/topic_floor.py
TOPIC_FLOOR = 0.32
# the answerability model's probability that that passage answers the question, under which
# the page is no topic either: near in words is not about it ("Where do I upload my student
# card?" reads 0.37 to Payment methods, which answers it at 0.02). The highest floor (0.01
# steps) that keeps every question a page answers named (the lowest is 0.042) sends 39 of the
# 48 uncovered questions to "other" (36 with the cosine floor alone); chosen by
# training/topic_floor.py
TOPIC_ANSWERS_FLOOR = 0.04
Answerable = Callable[[str, Sequence[str]], list[float]]  # ``EvidenceScorer.answerable``


def nearest_page(retriever: Retriever, slots: Mapping[str, object]) -> Callable[[str], Nearest | None]:
    """``text`` -> the best passage's page under ``slots`` (source id, title, score and its
    stored fields), or None."""

    def nearest(text: str) -> Nearest | None:
        found = retriever.search_queries(
            RetrievalRequest([text], slots, top_k=1, threshold=0.0, strict=False)
        )
        if not found.results:
            return None
        best = found.results[0]
        return Nearest(
            best.metadata["source_id"], best.metadata.get("title", ""), best.score, best.metadata
        )

    return nearest


def similarity(encode: Encode, question: str, passage: str) -> float:
    """The cosine of the two texts' dense vectors (``encode``: ``encoders.dense.encode``)."""
    return similarities(encode, question, [passage])[0]


def similarities(encode: Encode, question: str, passages: Sequence[str]) -> list[float]:
    """The cosine of ``question`` to each of ``passages``, all encoded in one batch."""
    vectors = np.stack([np.asarray(e.dense, dtype=np.float32) for e in encode([question, *passages])])
    norms = np.linalg.norm(vectors, axis=1)
    return [float(v) for v in vectors[1:] @ vectors[0] / (norms[1:] * norms[0] + 1e-9)]


def topic_namer(
    retriever: Retriever,
    encode: Encode,
    tenant: str,
    floor: float = TOPIC_FLOOR,
    answerable: Answerable | None = None,
    answers_floor: float = TOPIC_ANSWERS_FLOOR,
) -> TopicNamer:
    """(question, the asker's slots) -> the nearest page's id in ``tenant``; "" when there is
    none, when the question's similarity to its passage is under ``floor``, or (with
    ``answerable``, ``EvidenceScorer.answerable``) when the model reads that passage as
    answering it with a probability under ``answers_floor`` (a search whose results carry no
    passage text, ``hit_text``, is not floored)."""

    def name(question: str, slots: Mapping[str, object]) -> str:
        scoped = {**slots, "tenant": tenant} if tenant else dict(slots)
        found = nearest_page(retriever, scoped)(question)
        if found is None:
            return ""
        passage = str(found.fields.get("hit_text") or "")
        if passage and similarity(encode, question, passage) < floor:
            return ""
        if passage and answerable is not None and answerable(question, [passage])[0] < answers_floor:
            return ""
        return found.source_id

    return name


def conversation_topic(turns: Sequence[StoredTurn], pages_of: PagesOf, name: TopicNamer) -> str:
    """The page a conversation is about: the one the question it turns on was answered from,
    else ``name(question, the slots it was asked under)`` (:func:`topic_namer`); "" when the
    customer asked the pages nothing.

    >>> turns = [{"user": "Refund?", "kind": "question", "verdict": "answered",
    ...           "citations": ["billing/refunds.md"]}, {"user": "", "verdict": "handoff"}]
    >>> conversation_topic(turns, lambda text: text, lambda q, slots: "other.md")
    'billing/refunds.md'
    """
    behind = question_behind(turns, pages_of)
    if behind is None:
        return ""
    turn = turns[behind.position]
    cited = turn.get("citations") or []
    if turn.get("verdict") == "answered" and cited:
        return str(cited[0])
    slots = turn.get("slots")
    return name(behind.question, slots if isinstance(slots, dict) else {})

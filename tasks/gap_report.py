"""The knowledge-gap report: what customers asked that the knowledge base could not answer
(refused turns, hand-offs, answers rated "not helpful"), grouped by meaning, largest group
first, each with its size, three example questions and the nearest existing article. What a
support lead reads every Monday to decide which article to write next.

Questions carry the MiniLM vector their turn was stored with (a question recorded before
vectors were read back is encoded once per call), and are grouped by agglomerative
clustering (scikit-learn, average linkage over cosine distance, cut at ``distance``, chosen
on labelled paraphrase groups by ``training/gap_distance.py``). At most ``MAX_CLUSTERED`` of
the most recent questions are clustered: the cost of a call stays flat however many are
recorded.

Usage::

    gaps = gap_questions(turns, feedback, intent.asks_for_person)  # turns of memory.gap_turns(...)
    faq = Nearest("faq.md", "FAQ", 0.4, {"access": "public"})
    report = cluster_gaps(gaps, encoders.dense.encode, nearest=lambda text: faq)
    report.clusters[0].size, report.clusters[0].examples
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from storage.memory import WAITING_FOR_AGENT, StoredTurn
from tasks.judging import asks_the_pages
from tasks.message_kind import asked_something

GapKind = Literal["refused", "suggested", "handoff", "not_helpful"]
# cosine distance under which two questions ask the same thing: the best adjusted Rand index
# (0.774; 0.547 at the earlier 0.45) on examples/gaps/paraphrase-groups.jsonl
DISTANCE = 0.55
EXAMPLES = 3
MAX_CLUSTERED = 2000  # the most recent gap questions clustered per report
REOPEN_AFTER = 2  # an addressed gap reopens when this many of its questions fail after
MAX_SINCE_S = 36500 * 86400  # "since" reaches back 100 years at most


class GapQuestion(BaseModel):
    text: str
    kind: GapKind
    session_id: str
    turn_index: int
    ts: float = 0.0
    slots: dict[str, Any] = Field(default_factory=dict, exclude=True)  # what the asker could read
    model_config = ConfigDict(arbitrary_types_allowed=True)
    vector: Any = Field(default=None, exclude=True, repr=False)  # as stored


class NearestArticle(BaseModel):
    source_id: str
    title: str
    score: float
    # its stored fields (access, tiers...): whether the askers could read it
    fields: dict[str, Any] = Field(default_factory=dict, exclude=True)


class Nearest(NamedTuple):
    """The best passage a search finds for a gap's central question."""

    source_id: str
    title: str
    score: float
    fields: Mapping[str, Any]


class Addressed(BaseModel):
    """The published article that answers a gap: its id, title and when it went live."""

    source_id: str
    title: str
    published_at: float


GapStatus = Literal["open", "addressed", "reopened"]


class GapCluster(BaseModel):
    """A group of failed questions. ``status``: ``addressed`` once the article nearest to it
    is a published article of the tenant and fewer than ``REOPEN_AFTER`` of its questions
    failed since it went live; ``reopened`` when that many did (the article did not close it)."""

    size: int
    kinds: dict[str, int]
    examples: list[str]
    nearest_article: NearestArticle | None = None
    last_asked: float = 0.0
    status: GapStatus = "open"
    addressed_by: Addressed | None = None
    failed_since: int = 0  # of its questions, those asked after the article went live
    # the nearest article's fields that hide it from every asker (its access, its tiers):
    # the answer exists, above what these customers may read
    above_askers: list[str] = Field(default_factory=list)
    # the nearest article answers it and every asker could read it: nothing is missing from
    # the knowledge base (a message written to a person, a hand-off or a refusal the
    # assistant got wrong); no article to write
    answered_in_reach: bool = False
    asked_at: list[float] = Field(default_factory=list, exclude=True, repr=False)
    asker_slots: list[dict[str, Any]] = Field(default_factory=list, exclude=True, repr=False)


GAP_KINDS: dict[str, GapKind] = {"idk": "refused", "suggest": "suggested", "handoff": "handoff"}


class FailedTurn(BaseModel):
    """A turn that ended in an error (an outage or a bug): no knowledge gap, but counted."""

    session_id: str
    turn_index: int
    kind: str
    step: str
    ts: float = 0.0


class GapReport(BaseModel):
    questions: int
    clustered: int = 0  # the most recent ``MAX_CLUSTERED`` of them
    clusters: list[GapCluster] = Field(default_factory=list)
    errors: int = 0  # turns that failed (``failed``: the most recent ``EXAMPLES * 5``)
    failed: list[FailedTurn] = Field(default_factory=list)


def failed_turns(turns: Sequence[StoredTurn]) -> list[FailedTurn]:
    """The turns stored as ``error``, oldest first, with the failure each was stored with.

    >>> [t.step for t in failed_turns([{"session_id": "s", "turn_index": 0, "status": "error",
    ...   "failure": {"kind": "bug", "step": "evidence_gate"}}, {"status": "done"}])]
    ['evidence_gate']
    """
    failed = [
        FailedTurn(
            session_id=t["session_id"],
            turn_index=t["turn_index"],
            kind=t.get("failure", {}).get("kind", ""),
            step=t.get("failure", {}).get("step", ""),
            ts=t.get("ts", 0.0),
        )
        for t in turns
        if t.get("status") == "error"
    ]
    return sorted(failed, key=lambda f: f.ts)


def gap_questions(
    turns: Sequence[StoredTurn],
    feedback: Sequence[Mapping[str, Any]],
    asks_for_person: Callable[[str], bool],
) -> list[GapQuestion]:
    """The customer messages of refused or handed-off turns, and of turns rated "down" (each
    message once, its first reason kept); a message that asks the pages nothing (only for a
    person, read by ``asks_for_person``, courtesy, or a yes / no to the assistant's offer of
    a person) is no knowledge gap."""
    by_turn = {(t["session_id"], t["turn_index"]): t for t in turns if t.get("user")}
    found: dict[tuple[str, int], GapQuestion] = {}
    asks: dict[str, bool] = {}  # the same question comes back again and again
    for turn in by_turn.values():
        kind = GAP_KINDS.get(turn.get("verdict", ""))
        if turn.get("status") == WAITING_FOR_AGENT:
            kind = "handoff"
        if kind and not asked_something(turn):  # courtesy, a yes / no to the offer
            continue
        if kind and turn["user"] not in asks:
            asks[turn["user"]] = asks_the_pages(turn["user"], asks_for_person)
        if kind and asks[turn["user"]]:
            found[(turn["session_id"], turn["turn_index"])] = GapQuestion(
                text=turn["user"],
                kind=kind,
                session_id=turn["session_id"],
                turn_index=turn["turn_index"],
                ts=turn.get("ts", 0.0),
                slots=turn.get("slots") or {},
                vector=turn.get("vector"),
            )
    for rating in feedback:
        key = (rating["session_id"], rating["turn_index"])
        if rating.get("rating") == "down" and key in by_turn and key not in found:
            turn = by_turn[key]
            if not asked_something(turn):  # "not helpful" on "thanks"
                continue
            found[key] = GapQuestion(
                text=turn["user"],
                kind="not_helpful",
                session_id=key[0],
                turn_index=key[1],
                ts=turn.get("ts", 0.0),
                slots=turn.get("slots") or {},
                vector=turn.get("vector"),
            )
    return sorted(found.values(), key=lambda q: q.ts)


def cluster_gaps(
    questions: Sequence[GapQuestion],
    encode: Callable[[list[str]], list[Any]],
    nearest: Callable[[str], Nearest | None] | None = None,
    distance: float = DISTANCE,
    top: int = 20,
    max_clustered: int = MAX_CLUSTERED,
) -> GapReport:
    """Group the ``max_clustered`` most recent of ``questions`` (oldest first) by meaning; the
    ``top`` largest groups, each with the article ``nearest(text)`` finds for its most
    central question."""
    total = len(questions)
    questions = list(questions)[-max_clustered:]
    if not questions:
        return GapReport(questions=0)
    vectors = question_vectors(questions, encode)
    labels = _labels(vectors, distance)
    clusters = []
    for label in sorted(set(labels), key=lambda c: -int(np.sum(labels == c))):
        members = np.flatnonzero(labels == label)
        centre = vectors[members].mean(axis=0)
        central = [questions[i] for i in members[np.argsort(-(vectors[members] @ centre))]]
        kinds: dict[str, int] = {}
        for question in central:
            kinds[question.kind] = kinds.get(question.kind, 0) + 1
        found = nearest(central[0].text) if nearest else None
        clusters.append(
            GapCluster(
                size=len(members),
                kinds=kinds,
                examples=list(dict.fromkeys(q.text for q in central))[:EXAMPLES],
                nearest_article=NearestArticle(
                    source_id=found.source_id,
                    title=found.title,
                    score=round(found.score, 3),
                    fields=found.fields,
                )
                if found
                else None,
                last_asked=max(q.ts for q in central),
                asked_at=[q.ts for q in central],
                asker_slots=[q.slots for q in central],
            )
        )
        if len(clusters) == top:
            break
    return GapReport(questions=total, clustered=len(questions), clusters=clusters)


def question_vectors(
    questions: Sequence[GapQuestion], encode: Callable[[list[str]], list[Any]]
) -> np.ndarray:
    """Unit vectors of ``questions``: the stored ones, the rest encoded in one batch."""
    missing = [q.text for q in questions if q.vector is None]
    encoded = iter(encode(missing)) if missing else iter(())
    vectors = np.array(
        [
            np.asarray(q.vector if q.vector is not None else next(encoded).dense, dtype=np.float32)
            for q in questions
        ]
    )
    return vectors / (np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-9)


def _labels(vectors: np.ndarray, distance: float) -> np.ndarray:
    if len(vectors) == 1:
        return np.zeros(1, dtype=int)
    from sklearn.cluster import AgglomerativeClustering

    model = AgglomerativeClustering(
        n_clusters=None, distance_threshold=distance, metric="precomputed", linkage="average"
    )
    # unit vectors: cosine distance is one matrix product (scipy's pdist is ~30x slower)
    distances = np.clip(1.0 - vectors @ vectors.T, 0.0, 2.0)
    np.fill_diagonal(distances, 0.0)
    return model.fit_predict(distances)


def mark_addressed(
    report: GapReport, published: Mapping[str, Addressed], reopen_after: int = REOPEN_AFTER
) -> GapReport:
    """Each cluster whose nearest article is one of ``published`` (by source id): addressed,
    or reopened when ``reopen_after`` of its questions failed after the article went live.

    >>> live = {"a/mars": Addressed(source_id="a/mars", title="Mars", published_at=10.0)}
    >>> gap = GapCluster(size=2, kinds={}, examples=["Mars?"], asked_at=[5.0, 11.0],
    ...                  nearest_article=NearestArticle(source_id="a/mars", title="Mars", score=0.9))
    >>> [c.status for c in mark_addressed(GapReport(questions=2, clusters=[gap]), live).clusters]
    ['addressed']
    """
    for cluster in report.clusters:
        article = published.get(cluster.nearest_article.source_id) if cluster.nearest_article else None
        if article is None:
            continue
        cluster.failed_since = sum(ts > article.published_at for ts in cluster.asked_at)
        cluster.addressed_by = article
        cluster.answered_in_reach = False  # by the article written for it: addressed says so
        cluster.status = "reopened" if cluster.failed_since >= reopen_after else "addressed"
    return report


def open_first(report: GapReport) -> GapReport:
    """The clusters that still need an article first (open, reopened), then those an article
    addressed or the knowledge base already answers; each part in its order.

    >>> done = GapCluster(size=3, kinds={}, examples=["a"], status="addressed")
    >>> [c.size for c in open_first(GapReport(questions=4, clusters=[
    ...     done, GapCluster(size=1, kinds={}, examples=["b"])])).clusters]
    [1, 3]
    """
    report.clusters.sort(key=lambda c: c.status == "addressed" or c.answered_in_reach)
    return report


def parse_since(text: str | None, now: float) -> float:
    """``7d``, ``24h``, ``30m``, an ISO date or time (UTC when it names no zone), or empty
    (everything) -> epoch seconds.

    >>> parse_since("2d", now=200_000.0)
    27200.0
    >>> parse_since("9" * 400 + "d", now=0.0)
    Traceback (most recent call last):
    ValueError: since '9999999999999999999999999999999999999999': at most 36500 days back
    """
    import datetime as dt

    if not text:
        return 0.0
    units = {"d": 86400, "h": 3600, "m": 60}
    amount, unit = text[:-1], text[-1:]
    if unit in units and amount.isascii() and amount.isdigit():
        if len(amount) > 9 or int(amount) * units[unit] > MAX_SINCE_S:
            raise ValueError(f"since {text[:40]!r}: at most {MAX_SINCE_S // 86400} days back")
        return now - int(amount) * units[unit]
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"since {text!r}: give 7d, 24h, 30m or an ISO date such as 2026-11-24"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.timestamp()

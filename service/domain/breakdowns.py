"""The outcome report broken down for a lead: by topic (the page each conversation is about,
``Outcome.topic_id``) and by article (every page its answers cited, ``Outcome.topic``), each
with its conversations' labels as tiles. The rows are the stored outcomes of the window
(``OutcomeStore.window_rows``); ``titles`` are the pages the reader's key may read
(``service.domain.staff_reads.readable_titles``): a page it may not read is never named, its
conversations count under ``OTHER``.

Usage::

    rows = outcomes.window_rows("acme", now, 30, ROW_FIELDS)
    titles = readable_titles(runtime, slots, pages(rows))
    by_topic(rows, titles)[0].tiles, by_article(rows, titles)[0].failing_percent
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping

from pydantic import BaseModel
from typing_extensions import TypedDict

from service.domain.outcomes import Tile, tiles
from tasks.outcomes import Label


class OutcomeRow(TypedDict, total=False):
    """The fields of one stored outcome (``tasks.outcomes.Outcome``) the breakdowns read (the
    store reads only these: :data:`ROW_FIELDS`); a row stored before a field existed lacks it."""

    session_id: str
    label: Label
    topic: list[str]  # the pages its answers cited
    topic_id: str  # the page it is about
    evidence: dict[str, object]  # free-form: what justifies the label (``feedback``: the mark)
    decided_by: list[str]  # the pages the last question's answer cited
    marks: dict[str, dict[str, int]]  # per page: up and down marks on answers citing it


ROW_FIELDS = tuple(OutcomeRow.__annotations__)  # the fields a breakdown reads: the row's own


OTHER = "other (no page named, or one above your access)"
# a conversation citing an article that ended here: the article did not settle the question
FAILED = ("reopened", "unanswered", "handed_off", "resolved_by_person", "suggested")


class TopicOutcomes(BaseModel):
    topic_id: str  # "": no page named, or one the key may not read
    title: str
    conversations: int
    tiles: list[Tile]


class ArticleOutcomes(BaseModel):
    """The conversations whose answers cited one article: their outcomes and marks."""

    source_id: str
    title: str
    conversations: int
    tiles: list[Tile]
    helpful: int  # the customer's marks on the answers that cited it
    not_helpful: int
    handoffs: int  # handed to a person right after an answer that cited it
    # conversations whose last answer cited it and that did not end resolved (``FAILED``),
    # or where an answer citing it was marked not helpful
    failing: int
    failing_percent: int


class TopicReport(BaseModel):
    since_day: str
    topics: list[TopicOutcomes]


class ArticleReport(BaseModel):
    since_day: str
    articles: list[ArticleOutcomes]


def pages(rows: Iterable[OutcomeRow]) -> list[str]:
    """Every page the rows name (topics and citations), for one readability read."""
    return sorted({p for r in rows for p in (r.get("topic_id") or "", *(r.get("topic") or [])) if p})


def by_topic(rows: Iterable[OutcomeRow], titles: Mapping[str, str]) -> list[TopicOutcomes]:
    """Per topic the key may read (the rest under ``OTHER``), the largest first.

    >>> [(t.title, t.conversations) for t in by_topic(
    ...     [{"label": "assumed", "topic_id": "a.md"}, {"label": "pending", "topic_id": "x.md"}],
    ...     {"a.md": "Refunds"})]
    [('Refunds', 1), ('other (no page named, or one above your access)', 1)]
    """
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for row in rows:
        topic = row.get("topic_id") or ""
        counts[topic if topic in titles else ""][str(row.get("label"))] += 1
    found = [
        TopicOutcomes(
            topic_id=topic,
            title=titles.get(topic, OTHER),
            conversations=sum(labels.values()),
            tiles=tiles(labels),
        )
        for topic, labels in counts.items()
    ]
    return sorted(found, key=lambda t: (t.topic_id == "", -t.conversations, t.title))


def by_article(rows: Iterable[OutcomeRow], titles: Mapping[str, str]) -> list[ArticleOutcomes]:
    """Per cited article the key may read, the ones that fail most first (share, then count).
    A conversation counts against an article when its last answer cited it (``decided_by``)
    or an answer citing it was marked not helpful; an earlier answer that helped is not
    blamed for what came after.

    >>> [(a.source_id, a.failing, a.handoffs) for a in by_article(
    ...     [{"label": "handed_off", "topic": ["a.md", "b.md"], "decided_by": ["b.md"],
    ...       "marks": {"a.md": {"up": 1, "down": 0}}},
    ...      {"label": "assumed", "topic": ["a.md"], "decided_by": ["a.md"]}],
    ...     {"a.md": "A", "b.md": "B"})]
    [('b.md', 1, 1), ('a.md', 0, 0)]
    """
    labels: dict[str, Counter[str]] = defaultdict(Counter)
    marks: dict[str, Counter[str]] = defaultdict(Counter)
    failing: Counter[str] = Counter()
    handoffs: Counter[str] = Counter()
    for row in rows:
        label = str(row.get("label"))
        cited = list(row.get("topic") or [])
        decided, marked = set(row.get("decided_by") or ()), row.get("marks") or {}
        if "decided_by" not in row:  # stored before answers were told apart: every page
            feedback = (row.get("evidence") or {}).get("feedback")
            rating = feedback.get("rating") if isinstance(feedback, dict) else None
            decided = set(cited)
            marked = {p: {str(rating): 1} for p in cited}
        for page in cited:
            if page not in titles:
                continue
            labels[page][label] += 1
            up, down = (int((marked.get(page) or {}).get(r, 0)) for r in ("up", "down"))
            marks[page].update(up=up, down=down)
            failing[page] += (label in FAILED and page in decided) or down > 0
            handoffs[page] += label in ("handed_off", "resolved_by_person") and page in decided
    found = []
    for page, counted in labels.items():
        whole = sum(counted.values())
        found.append(
            ArticleOutcomes(
                source_id=page,
                title=titles[page],
                conversations=whole,
                tiles=tiles(counted),
                helpful=marks[page]["up"],
                not_helpful=marks[page]["down"],
                handoffs=handoffs[page],
                failing=failing[page],
                failing_percent=round(100 * failing[page] / whole),
            )
        )
    return sorted(found, key=lambda a: (-a.failing_percent, -a.failing, -a.conversations, a.source_id))

"""The outcome report broken down for a lead: by topic (the page each conversation is about,
``Outcome.topic_id``) and by article (every page its answers cited, ``Outcome.topic``), each
with its conversations' labels as tiles. The rows are the stored outcomes of the window
(``OutcomeStore.window_rows``); ``titles`` are the pages the reader's key may read
(``service.staff_reads.readable_titles``): a page it may not read is never named, its
conversations count under ``OTHER``.

Usage::

    rows = outcomes.window_rows("acme", now, 30, ROW_FIELDS)
    titles = readable_titles(runtime, slots, pages(rows))
    by_topic(rows, titles)[0].tiles, by_article(rows, titles)[0].failing_percent
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from service.outcomes import Tile, tiles

ROW_FIELDS = ("session_id", "label", "topic", "topic_id", "evidence")
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
    helpful: int  # the customer's marks on the conversation's last answer
    not_helpful: int
    handoffs: int  # handed to a person after the article was cited
    failing: int  # conversations that did not end resolved (``FAILED``) or were marked down
    failing_percent: int


class TopicReport(BaseModel):
    since_day: str
    topics: list[TopicOutcomes]


class ArticleReport(BaseModel):
    since_day: str
    articles: list[ArticleOutcomes]


def pages(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every page the rows name (topics and citations), for one readability read."""
    return sorted({p for r in rows for p in (r.get("topic_id") or "", *(r.get("topic") or [])) if p})


def by_topic(rows: Iterable[Mapping[str, Any]], titles: Mapping[str, str]) -> list[TopicOutcomes]:
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


def by_article(rows: Iterable[Mapping[str, Any]], titles: Mapping[str, str]) -> list[ArticleOutcomes]:
    """Per cited article the key may read, the ones that fail most first (share, then count).

    >>> [(a.source_id, a.failing_percent) for a in by_article(
    ...     [{"label": "handed_off", "topic": ["a.md"]}, {"label": "assumed", "topic": ["b.md"]}],
    ...     {"a.md": "A", "b.md": "B"})]
    [('a.md', 100), ('b.md', 0)]
    """
    labels: dict[str, Counter[str]] = defaultdict(Counter)
    marks: dict[str, Counter[str]] = defaultdict(Counter)
    failing: Counter[str] = Counter()
    for row in rows:
        rating = ((row.get("evidence") or {}).get("feedback") or {}).get("rating")
        label = str(row.get("label"))
        for page in row.get("topic") or []:
            if page not in titles:
                continue
            labels[page][label] += 1
            marks[page][str(rating)] += 1
            failing[page] += label in FAILED or rating == "down"
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
                handoffs=counted["handed_off"] + counted["resolved_by_person"],
                failing=failing[page],
                failing_percent=round(100 * failing[page] / whole),
            )
        )
    return sorted(found, key=lambda a: (-a.failing_percent, -a.failing, -a.conversations, a.source_id))

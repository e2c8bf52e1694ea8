"""From a knowledge gap to a tested article: draft, save as internal, check, publish.

1. **Draft** (``draft``): for the questions of a gap cluster, the replies people wrote in
   those conversations, each sentence cited to its conversation, become a Markdown draft.
2. **Save** (``save``): the lead's title, text and slots are written to the articles folder
   (``<data dir>/articles``, a Markdown file with front matter) and ingested at ``access:
   internal``: customers cannot see it yet. The article's id is ``articles/<slug>``.
3. **Check** (``check``): the cluster's recorded questions are replayed against the knowledge
   base with the draft (under internal slots and the article's tiers): which are now answered
   from the article, which are not.
4. **Publish** (``publish``): only after a check answered at least one question from it; the
   file is rewritten with its real access level and re-ingested.

Every save, check and publish is recorded with who did it and when, in the store beside the
pilot's sessions (``pilot_articles``, tenant-scoped). Nothing is written outside the folder,
and a save that fails leaves the article as it was.

Usage::

    articles = Articles(store, encoders, folder)
    proposal = draft(memory, "acme", ["Do you ship to Antarctica?"])
    article = ArticleDraft(slug="shipping", title="Shipping", text=proposal["text"])
    record = articles.save("acme", "lead", {}, article, kb)
    record = articles.check("acme", "lead", "shipping", ask)      # ask(question) -> a TurnResult
    record = articles.publish("acme", "lead", "shipping", kb)
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from storage.kb.ingest import ingest_paths
from storage.qdrant.store import AllOf, Match, PointData, Store, ensure_records
from storage.text import ALNUM, split_sentences

ARTICLES = "pilot_articles"
MAX_TEXT = 20_000  # characters of an article's Markdown
SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_NAMESPACE = uuid.UUID("3c9f1e2a-7b4d-4e8a-9f0c-5d6e7f8a9b0c")
ACCESS_ORDER = ("public", "customer", "internal")


class ArticleError(ValueError):
    """A request the articles cannot take; ``field`` names what is wrong."""

    def __init__(self, status: int, field: str, message: str) -> None:
        super().__init__(message)
        self.status, self.field = status, field


class ArticleDraft(BaseModel):
    """What the lead saves: the article and the questions it should answer."""

    model_config = ConfigDict(extra="forbid")

    slug: str = Field(min_length=1, max_length=80)
    title: str = Field(min_length=1, max_length=200)
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    access: Literal["public", "customer", "internal"] = "public"
    tiers: list[str] | None = Field(None, min_length=1)
    product: str | None = Field(None, max_length=80)
    language: str | None = Field(None, max_length=10)
    questions: list[str] = Field(default_factory=list, max_length=50)

    @field_validator("slug")
    @classmethod
    def _a_plain_name(cls, value: str) -> str:
        if not SLUG.fullmatch(value):
            raise ValueError(
                "a slug is lower-case letters, digits and single dashes (no '/', '.' or spaces)"
            )
        return value


class ArticleRecord(BaseModel):
    """An article as the desk sees it: its text and slots, status, last check and history."""

    tenant: str
    slug: str
    id: str
    title: str
    text: str
    access: str
    tiers: list[str] | None = None
    product: str | None = None
    language: str | None = None
    questions: list[str] = Field(default_factory=list)
    status: Literal["draft", "published"]
    check: dict[str, Any] | None = None
    events: list[dict[str, Any]] = Field(default_factory=list)
    updated_at: float


class CheckRow(BaseModel):
    question: str
    verdict: str
    answered_from_article: bool
    cited: list[str]
    answer: str


def draft(memory: Any, tenant: str, questions: Sequence[str]) -> dict[str, Any]:
    """A draft from the replies people wrote in the conversations that asked ``questions``:
    each sentence cited to its conversation (``sources``)."""
    wanted = {normal(q) for q in questions}
    turns = memory.tenant_turns(tenant, ("session_id", "turn_index", "user", "answer", "from"))
    sessions = {t["session_id"] for t in turns if normal(str(t.get("user") or "")) in wanted}
    replies = sorted(
        (t for t in turns if t["session_id"] in sessions and t.get("from") == "agent"),
        key=lambda t: (t["session_id"], t["turn_index"]),
    )
    sentences: list[str] = []
    sources: list[dict[str, Any]] = []
    for reply in replies:
        for sentence in split_sentences(" ".join(str(reply.get("answer") or "").split())):
            if sentence not in sentences:
                sentences.append(sentence)
                sources.append({"session_id": reply["session_id"], "turn_index": reply["turn_index"]})
    title = str(questions[0]).strip().rstrip("?") if questions else "New article"
    body = "\n\n".join(sentences) or "(Nobody replied to these questions yet: write the answer.)"
    return {
        "title": title[:200],
        "slug": slugify(title),
        "text": f"# {title}\n\n{body}\n",
        "sources": sources,
        "questions": list(questions),
    }


def normal(text: str) -> str:
    return " ".join(text.split()).lower()


def slugify(title: str) -> str:
    """A file name from a title.

    >>> slugify("Do you ship to Antarctica?")
    'do-you-ship-to-antarctica'
    """
    return "-".join(ALNUM.findall(title.lower()))[:80] or "article"


def front_matter(article: ArticleDraft, access: str, tenant: str) -> str:
    """The Markdown file: front matter (the article's id, its slots, the tenant) and text."""
    meta: dict[str, Any] = {
        "id": f"articles/{article.slug}",
        "title": article.title,
        "access": access,
    }
    for key in ("tiers", "product", "language"):
        value = getattr(article, key)
        if value:
            meta[key] = value
    if tenant:
        meta["tenant"] = tenant
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n\n" + article.text


def may_grant(caller_slots: dict[str, str], access: str) -> bool:
    """Whether a key whose enforced access level is ``caller_slots["access_level"]`` may give
    an article ``access`` (never above its own; a key without one may give any).

    >>> may_grant({"access_level": "customer"}, "internal"), may_grant({}, "internal")
    (False, True)
    """
    own = caller_slots.get("access_level")
    return own is None or ACCESS_ORDER.index(access) <= ACCESS_ORDER.index(own)


class Articles:
    """The articles folder and the record of each article (status, checks, who did what)."""

    def __init__(self, store: Store, encoders: Any, folder: Path) -> None:
        self.store, self.encoders, self.folder = store, encoders, folder
        ensure_records(store, ARTICLES, encoders.dense.dim, ("tenant", "slug"))

    def path(self, slug: str) -> Path:
        """The article's file, inside the folder (a slug is a plain name: never outside)."""
        target = (self.folder / f"{slug}.md").resolve()
        if target.parent != self.folder.resolve():
            raise ArticleError(422, "slug", f"{slug!r} names a file outside the articles folder")
        return target

    def record(self, tenant: str, slug: str) -> dict[str, Any] | None:
        found = list(
            self.store.scroll(ARTICLES, AllOf((Match("tenant", (tenant,)), Match("slug", (slug,)))))
        )
        return found[0].payload if found else None

    def all(self, tenant: str) -> list[dict[str, Any]]:
        found = self.store.scroll(ARTICLES, Match("tenant", (tenant,)))
        return sorted((r.payload for r in found), key=lambda r: -r["updated_at"])

    def _write_record(self, record: dict[str, Any]) -> dict[str, Any]:
        vector = self.encoders.dense.encode(["article"])[0].dense
        key = str(uuid.uuid5(_NAMESPACE, f"{record['tenant']}/{record['slug']}"))
        self.store.upsert(ARTICLES, [PointData(id=key, dense=vector, payload=record)])
        return record

    def _event(self, record: dict[str, Any], who: str, action: str, detail: str = "") -> None:
        now = time.time()
        event = {"at": now, "by": who, "action": action, "detail": detail}
        record["events"] = [*record.get("events", []), event]
        record["updated_at"] = now

    def _ingest(self, kb: Any, path: Path) -> None:
        report = ingest_paths(kb, [path])
        if report.skipped:
            raise ArticleError(422, "text", f"the article cannot be ingested: {report.skipped[0][1]}")

    def save(
        self, tenant: str, who: str, slots: dict[str, str], article: ArticleDraft, kb: Any
    ) -> dict[str, Any]:
        """Write the article as an internal draft and ingest it; a published article of that
        slug is taken back to draft (a changed text must be checked again)."""
        if not may_grant(slots, article.access):
            raise ArticleError(
                422, "access", f"your key may not give an article access {article.access!r}"
            )
        path = self.path(article.slug)
        self.folder.mkdir(parents=True, exist_ok=True)
        previous = path.read_text(encoding="utf-8") if path.exists() else None
        path.write_text(front_matter(article, "internal", tenant), encoding="utf-8")
        try:
            self._ingest(kb, path)
        except ArticleError:
            if previous is None:
                path.unlink()
            else:
                path.write_text(previous, encoding="utf-8")
            raise
        record = self.record(tenant, article.slug) or {"tenant": tenant, "slug": article.slug}
        record.update(
            article.model_dump(),
            id=f"articles/{article.slug}",
            status="draft",
            check=None,
        )
        self._event(record, who, "saved", f"as internal; to publish as {article.access}")
        return self._write_record(record)

    def check(self, tenant: str, who: str, slug: str, ask: Callable[[str], Any]) -> dict[str, Any]:
        """Replay the article's questions (``ask`` runs one turn under staff slots); record
        which are now answered from the article."""
        record = self._required(tenant, slug)
        rows = []
        for question in record.get("questions") or [record["title"]]:
            result = ask(question)
            cited = [c.source_id for c in result.citations]
            rows.append(
                CheckRow(
                    question=question,
                    verdict=result.verdict,
                    answered_from_article=result.verdict == "answered" and record["id"] in cited,
                    cited=cited,
                    answer=result.answer,
                ).model_dump()
            )
        passed = sum(r["answered_from_article"] for r in rows)
        record["check"] = {"at": time.time(), "by": who, "rows": rows, "answered": passed}
        self._event(record, who, "checked", f"{passed} of {len(rows)} questions answered from it")
        return self._write_record(record)

    def publish(self, tenant: str, who: str, slug: str, kb: Any) -> dict[str, Any]:
        """Give the article its real access level (after a check answered from it)."""
        record = self._required(tenant, slug)
        if not (record.get("check") or {}).get("answered"):
            raise ArticleError(
                409, "check", "run the check first: no question was answered from this article"
            )
        article = ArticleDraft(**{k: record[k] for k in ArticleDraft.model_fields})
        path = self.path(slug)
        path.write_text(front_matter(article, article.access, tenant), encoding="utf-8")
        self._ingest(kb, path)
        record["status"] = "published"
        self._event(record, who, "published", f"as {article.access}")
        return self._write_record(record)

    def _required(self, tenant: str, slug: str) -> dict[str, Any]:
        record = self.record(tenant, slug)
        if record is None:
            raise ArticleError(404, "slug", f"no article {slug!r} in this tenant")
        return record

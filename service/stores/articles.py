"""From a knowledge gap to a tested article: draft, save as a hidden draft, check, publish.

1. **Draft** (``draft``): for the questions of a gap cluster, the replies people wrote in
   those conversations, each sentence cited to its conversation, become a Markdown draft;
   where nobody replied, the model's draft checked against the knowledge base
   (``service/domain/model_draft.py``, only with the responder on the model path), else a skeleton.
2. **Save** (``save``): the lead's title, text and slots are written to the tenant's articles
   folder (``<data dir>/articles/<tenant>/<slug>.md``, Markdown with front matter) and
   ingested with the article's own slots and a ``draft`` value that hides it from every
   search but its check. The id is ``articles/<tenant>/<slug>``: two tenants' articles of
   one name are two files, two documents and two sets of chunks.
3. **Check** (``check``): the cluster's recorded questions are replayed against the knowledge
   base under the lead key's own enforced slots, plus the draft: which are now answered from
   the article, which are not. Nothing above the key's slots is searched.
4. **Publish** (``publish``): only after a check answered at least one question from it; the
   file is rewritten without its ``draft`` value, with its address on the service
   (``article_url``: ``GET /help/articles/...`` serves it, so its citations open), and
   re-ingested.

Every route stays within the caller's enforced slots: it saves and publishes only an article
it could read itself (422 naming the field otherwise), and reads (lists, checks, publishes)
only the records its slots show, filtered in the store. Every save, check and publish is
recorded with who did it and when, beside the pilot's sessions (``pilot_articles``,
tenant-scoped). Nothing is written outside the folder, and a save that fails leaves the
article as it was.

Usage::

    articles = Articles(store, encoders, folder, settings.slots)
    articles.reconcile(kb)                                   # at start: the current layout
    slots = {"access_level": "customer", "tenant": "acme"}   # the lead key's enforced slots
    proposal = draft(memory, "acme", ["Do you ship to Antarctica?"], slots)
    proposal["access"]          # the highest level among the replies it quotes
    article = ArticleDraft(slug="shipping", title="Shipping", text=proposal["text"])
    record = articles.save("acme", "lead", slots, article, kb)
    record = articles.check("acme", "lead", slots, "shipping", ask)  # ask(question, slots)
    record = articles.publish("acme", "lead", slots, "shipping", kb, "https://help.acme.test")
    record["url"]               # "https://help.acme.test/help/articles/acme/shipping"
    articles.readable("acme", slots, "acme/shipping", kb)   # the record, or None
"""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import frontmatter
import yaml
from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

from config.settings import SlotRule
from service.domain.draft_lead import Answerable, leading_with_answer
from service.domain.records import (
    ARTICLE,
    REPLAYED,
    ArticleCheck,
    ArticleEvent,
    CheckedQuestion,
    JsonObject,
    StoredArticle,
)
from service.domain.topics import TOPIC_FLOOR, similarities
from service.domain.views import DraftedBy, DraftProposal
from service.stores.article_checks import ArticleChecks, within
from storage.kb.ingest import ingest_paths
from storage.qdrant.store import Condition, Match, PointData, Store, ensure_records
from storage.records import parsed
from storage.replies import PersonReplies
from storage.retrieval.filters import (
    DRAFT,
    above,
    admits,
    build_filters,
    document_fields,
    highest_levels,
    level_rules,
    widest_reach,
)
from storage.text import ALNUM, split_sentences
from tasks.courtesy import asks_something
from tasks.impersonal import impersonal, names_given
from tasks.message_kind import load_message_kinds
from tasks.passage_text import clean
from tasks.replay import Asked, compare, reply_of, summary

if TYPE_CHECKING:
    from service.domain.model_draft import ModelDraft
    from storage.kb.embeddings import Encoders
    from storage.kb.knowledge_base import KnowledgeBase
    from storage.memory import MemoryStore, StoredTurn
    from tasks.schemas import TurnResult

ARTICLES = "pilot_articles"
MAX_TEXT = 20_000  # characters of an article's Markdown
TITLE_CHARS = 70  # a drafted title: one line a lead reads at a glance ...
SLUG_CHARS = 50  # ... and the file name made from it
COURTESY_WORDS = 4  # a salutation or sign-off line is this short ("Hi Maria,", "Many thanks!")
SOURCES_LINE = "Sources:"  # heads the block the desk's "Use this reply" appends (agent.js)
SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_NAMESPACE = uuid.UUID("3c9f1e2a-7b4d-4e8a-9f0c-5d6e7f8a9b0c")


def _article(payload: Mapping[str, object]) -> StoredArticle:
    """A stored article's record, parsed (:class:`BrokenRecord` naming it)."""
    return parsed(ARTICLE, payload, f"{ARTICLES} {payload.get('tenant')}/{payload.get('slug')}")


class ArticleError(ValueError):
    """A request the articles cannot take; ``field`` names what is wrong, ``details`` what
    else the answer says (``failing``: the gap's questions a check did not answer)."""

    def __init__(self, status: int, field: str, message: str, **details: JsonValue) -> None:
        super().__init__(message)
        self.status, self.field, self.details = status, field, details


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
    url: str | None = None  # once published: where it opens (``GET /help/articles/...``)
    check: ArticleCheck | None = Field(
        None, description="the last check, if the key reaches as far as the one that ran it"
    )
    check_hidden: bool = Field(
        False,
        description="the last check ran under a key that reads more than this one: its rows "
        "are not shown, and publishing needs a check run with this key",
    )
    events: list[ArticleEvent] = Field(default_factory=list)
    updated_at: float


def draft(
    memory: MemoryStore,
    tenant: str,
    questions: Sequence[str],
    slots: Mapping[str, str],
    write: Callable[[Sequence[str]], ModelDraft | None] | None = None,
    answerable: Answerable | None = None,
) -> DraftProposal:
    """A draft from the replies people wrote in the conversations that asked ``questions``,
    those the reader's ``slots`` may read (decided in the store: ``storage.replies``): each
    sentence cited to its conversation (``sources``), without greetings, sign-offs and the
    customer's name (``tasks.impersonal``), and the reach of the replies it quotes
    (``access``, ``tiers``: the highest among them; an article of it published lower is
    refused). Where nobody replied: the model's draft checked against the knowledge base
    (``write``, ``service.domain.model_draft.model_writer``: its unsupported sentences marked and
    listed), else the skeleton of the questions. ``drafted_by`` says which. With
    ``answerable`` a draft from replies leads with the sentence that answers its question
    (``service.domain.draft_lead``)."""
    wanted = {normal(q) for q in questions}
    fields = ("session_id", "turn_index", "user", "answer", "from", "slots")
    turns = memory.tenant_turns(tenant, fields)
    asked = [t for t in turns if normal(str(t.get("user") or "")) in wanted]
    sessions = sorted({t["session_id"] for t in asked})
    shown = PersonReplies(memory).readable(tenant, slots, sessions) if sessions else set()
    replies = sorted(
        (t for t in turns if (t["session_id"], t["turn_index"]) in shown),
        key=lambda t: (t["session_id"], t["turn_index"]),
    )
    names = names_given(str(t["user"]) for t in turns if t["session_id"] in sessions and t.get("user"))
    title = clearest_question(questions)
    paragraphs, sources = (
        on_the_question(memory.encoders, title, replies, names) if replies else ([], [])
    )
    if answerable is not None:
        paragraphs, sources = leading_with_answer(title, paragraphs, sources, answerable)
    drafted_by: DraftedBy = "replies"
    unsupported: list[str] = []
    pages: list[str] = []
    body = "\n\n".join(" ".join(p) for p in paragraphs)
    cited = {(s["session_id"], s["turn_index"]) for s in sources}
    quoted = [r for r in replies if (r["session_id"], r["turn_index"]) in cited]
    level = (
        level_of(memory.rules, [r["slots"] for r in quoted if r.get("slots")]) if quoted else "public"
    )
    if not body:
        written = write(questions) if write is not None else None
        if written is not None:
            drafted_by, body = "model", written.text
            unsupported, pages = list(written.unsupported), list(written.pages)
        else:
            drafted_by, body = "skeleton", skeleton(questions)
    return DraftProposal(
        title=title,
        slug=slugify(title),
        text=f"# {title}\n\n{body}\n",
        sources=sources,
        questions=list(questions),
        drafted_by=drafted_by,
        unsupported=unsupported,
        pages=pages,
        access=level,
    )


def level_of(rules: Mapping[str, SlotRule], reads: Sequence[Mapping[str, str]]) -> str:
    """The access level an article quoting replies must have at least: the highest that
    their conversations ran under (``reads``; public when none did).

    >>> from config.settings import load_settings
    >>> rules = load_settings().slots
    >>> level_of(rules, [{"access_level": "customer", "tier": "pro"}, {"access_level": "internal"}])
    'internal'
    """
    return str(document_fields(level_rules(rules), widest_reach(rules, reads)).get("access", "public"))


def without_pasted_sources(reply: str) -> list[str]:
    """The lines of a person's reply without the sources block the desk's "Use this reply"
    pastes ("Sources:" and its "[1] Refunds: https://..." lines), wherever it stands.

    >>> without_pasted_sources("Refunds take 5 days. [1]\\n\\nSources:\\n[1] Refunds: x\\n[see] ok")
    ['Refunds take 5 days. [1]', '', '[see] ok']
    """
    kept: list[str] = []
    in_block = False
    for line in reply.splitlines():
        numbered = line[:1] == "[" and line[1:2].isdigit()
        in_block = line.strip() == SOURCES_LINE or (in_block and numbered)
        if not in_block:
            kept.append(line)
    return kept


def on_the_question(
    encoders: Encoders, question: str, replies: Sequence[StoredTurn], names: Sequence[str] = ()
) -> tuple[list[list[str]], list[JsonObject]]:
    """The paragraphs of people's ``replies`` that answer ``question``, and each kept
    sentence's conversation: a reply's own paragraphs, without the sources block the desk's
    "Use this reply" pastes and its "[1]" marks (an article cites its own pages), without its
    greeting, sign-off and the names they hold or the customer gave (``names``:
    ``tasks.impersonal``), its opening and closing lines when they are short courtesy
    ("Thanks!": the message-kind classifier's greeting or thanks), and the paragraphs about
    something else (a refund beside the student discount: under the topic floor of
    ``service.domain.topics``) unless none reaches it."""
    paragraphs: list[list[str]] = []
    where: list[JsonObject] = []
    seen: set[str] = set()
    for reply in replies:
        own: list[list[str]] = []
        text = "\n".join(without_pasted_sources(str(reply.get("answer") or "")))
        for line in impersonal(text, names).splitlines():
            said = [s for s in dict.fromkeys(split_sentences(clean(line))) if s and s not in seen]
            seen.update(said)
            own += [said] if said else []
        for said in without_courtesy_ends(encoders, own):
            paragraphs.append(said)
            where.append({"session_id": reply["session_id"], "turn_index": reply["turn_index"]})
    if not paragraphs:
        return [], []
    texts = [" ".join(p) for p in paragraphs]
    close = similarities(encoders.dense.encode, question, texts)
    kept = [i for i in range(len(texts)) if close[i] >= TOPIC_FLOOR] or list(range(len(texts)))
    return [paragraphs[i] for i in kept], [where[i] for i in kept for _ in paragraphs[i]]


def without_courtesy_ends(encoders: Encoders, paragraphs: list[list[str]]) -> list[list[str]]:
    """A reply's paragraphs without its first and last one when that is a short line of
    courtesy (a salutation, a sign-off); a paragraph inside the reply always stays."""
    ends = sorted({0, len(paragraphs) - 1}) if paragraphs else []
    short = [i for i in ends if len(" ".join(paragraphs[i]).split()) <= COURTESY_WORDS]
    read = load_message_kinds(encoders).courtesy([" ".join(paragraphs[i]) for i in short])
    dropped = {i for i, courtesy in zip(short, read, strict=True) if courtesy}
    return [p for i, p in enumerate(paragraphs) if i not in dropped]


def skeleton(questions: Sequence[str]) -> str:
    """Where nobody replied: each of the gap's questions as a heading over a place for its
    answer, so the article is found by the words customers used.

    >>> print(skeleton(["Do you ship to Mars?", "do you  ship to MARS?"]))
    (Nobody replied to these questions yet: write each answer under its question.)
    <BLANKLINE>
    ## Do you ship to Mars?
    <BLANKLINE>
    (the answer)
    """
    heads: dict[str, str] = {}
    for question in questions:
        heads.setdefault(normal(question), " ".join(question.split()))
    parts = ["(Nobody replied to these questions yet: write each answer under its question.)"]
    parts += [f"## {q}\n\n(the answer)" for key, q in heads.items() if key]
    return "\n\n".join(parts)


def normal(text: str) -> str:
    return " ".join(text.split()).lower()


def clearest_question(questions: Sequence[str]) -> str:
    """A draft's title: the shortest of ``questions`` that asks something (small talk alone
    does not, ``tasks.courtesy.asks_something``), trimmed to its asking sentence (a question
    where it has one, its "?" kept: a help centre titles an article with the question its
    readers ask), cut at a word to ``TITLE_CHARS``.

    >>> clearest_question(["Hello! Our team works at a research station and orders keep "
    ...     "getting stuck in customs, so can you ship there at all?", "Thanks!",
    ...     "Hi. Do you ship to Antarctica? We need parts."])
    'Do you ship to Antarctica?'
    """
    said = [q for q in (" ".join(str(q).split()) for q in questions) if q]
    if not said:
        return "New article"
    chosen = min((q for q in said if asks_something(q)), key=len, default=said[0])
    sentences = [s for s in split_sentences(chosen) if asks_something(s)] or [chosen]
    sentence = next((s for s in sentences if s.endswith("?")), sentences[0])
    return cut_at_word(sentence.strip(), TITLE_CHARS) or "New article"


def cut_at_word(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters: cut before the first word that does not fit,
    an ellipsis marking the cut.

    >>> cut_at_word("Can I get a delivery to a research station", 30)
    'Can I get a delivery to a…'
    """
    if len(text) <= limit:
        return text
    head = text[: limit - 1]  # room for the ellipsis
    if text[limit - 1] != " " and " " in head:
        head = head.rsplit(" ", 1)[0]
    return head.rstrip(" ,;:-") + "…"


def slugify(title: str, limit: int = SLUG_CHARS) -> str:
    """A file name from a title: its words, lower-case, dashed, cut at a word to ``limit``.

    >>> slugify("Do you ship to Antarctica?")
    'do-you-ship-to-antarctica'
    >>> slugify("Can I get a delivery to a research station in Antarctica?", 30)
    'can-i-get-a-delivery-to-a'
    """
    slug = "-".join(ALNUM.findall(title.lower()))
    if len(slug) > limit:
        head = slug[: limit + 1]
        slug = head.rsplit("-", 1)[0] if "-" in head else slug[:limit]
    return slug or "article"


def tenant_folder(tenant: str) -> str:
    """The folder (and id part) of a tenant's articles: its name when that is a plain name,
    else ``_`` and a digest of it (``_`` is in no plain name: two tenants never share one).

    >>> tenant_folder("acme"), tenant_folder("Acme Corp")[:9]
    ('acme', '_a73cb456')
    """
    if SLUG.fullmatch(tenant):
        return tenant
    return "_" + hashlib.sha256(tenant.encode("utf-8")).hexdigest()[:32]


def article_id(tenant: str, slug: str) -> str:
    """An article's document id, scoped by its tenant (chunk ids derive from it); a key
    without a tenant writes ``articles/<slug>`` (what every article was before tenants).

    >>> article_id("acme", "mars-shipping"), article_id("", "mars-shipping")
    ('articles/acme/mars-shipping', 'articles/mars-shipping')
    """
    return f"articles/{tenant_folder(tenant)}/{slug}" if tenant else f"articles/{slug}"


def article_url(base: str, tenant: str, slug: str) -> str:
    """Where a published article opens on the service at ``base`` (``GET /help/articles/...``,
    ``pilot.public_url``); without a base, the path alone (the service's pages resolve it).

    >>> article_url("https://help.acme.test/", "acme", "mars-shipping")
    'https://help.acme.test/help/articles/acme/mars-shipping'
    >>> article_url("", "acme", "mars-shipping")
    '/help/articles/acme/mars-shipping'
    """
    return f"{base.rstrip('/')}/help/{article_id(tenant, slug)}"


def front_matter(article: ArticleDraft, tenant: str, draft: str | None, url: str | None = None) -> str:
    """The Markdown file: front matter (the article's id, its slots, the tenant, its ``url``
    once published and, for a draft, its ``draft`` value: hidden from every search but the
    check's) and text."""
    meta: JsonObject = {
        "id": article_id(tenant, article.slug),
        "title": article.title,
        "access": article.access,
    }
    if url:
        meta["url"] = url
    for key in ("tiers", "product", "language"):
        value = getattr(article, key)
        if value:
            meta[key] = value
    if tenant:
        meta["tenant"] = tenant
    if draft:
        meta[DRAFT] = draft
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n\n" + article.text


def as_document_fields(article: ArticleDraft, tenant: str) -> dict[str, str | list[str] | None]:
    """The payload fields the enforced slots filter on, as the article's chunks carry them."""
    return {"access": article.access, "tiers": article.tiers, "tenant": tenant or None}


class Articles:
    """The articles folder and the record of each article (status, checks, who did what).

    Every call takes the caller's enforced slots (its tenant among them): the records it
    reads are filtered by them in the store, as a search is, and it saves or publishes only
    what it could read itself."""

    def __init__(
        self,
        store: Store,
        encoders: Encoders,
        folder: Path,
        rules: Mapping[str, SlotRule],
        memory: MemoryStore | None = None,
    ) -> None:
        self.store, self.encoders, self.folder, self.rules = store, encoders, folder, rules
        self.memory = memory  # where people's replies are: none quoted above an article's level
        ensure_records(store, ARTICLES, encoders.dense.dim, ("tenant", "slug"))
        self.checks = ArticleChecks(store, encoders, rules)

    def path(self, tenant: str, slug: str) -> Path:
        """The article's file: ``<folder>/<tenant>/<slug>.md`` (``<folder>/<slug>.md`` without
        a tenant); a slug is a plain name, so never outside its tenant's folder."""
        home = (self.folder / tenant_folder(tenant)) if tenant else self.folder
        target = (home / f"{slug}.md").resolve()
        if target.parent != home.resolve():
            raise ArticleError(422, "slug", f"{slug!r} names a file outside the articles folder")
        return target

    def _where(self, tenant: str, slots: Mapping[str, str] | None, *more: Condition) -> Condition:
        """The tenant's records (matched as they are stamped, ``""`` for no tenant), filtered
        by ``slots`` as a search under them would be on every other enforced field."""
        return within(self.rules, tenant, slots, *more)

    def record(self, tenant: str, slug: str, slots: Mapping[str, str] | None) -> StoredArticle | None:
        """The tenant's article ``slug`` if ``slots`` may read it (None: any, for the service),
        with its last check if ``slots`` reach as far as the key that ran it."""
        found = list(self.store.scroll(ARTICLES, self._where(tenant, slots, Match("slug", (slug,)))))
        return self._with_checks(tenant, [_article(found[0].payload)], slots)[0] if found else None

    def all(self, tenant: str, slots: Mapping[str, str]) -> list[StoredArticle]:
        """The tenant's articles that ``slots`` may read, the latest changed first, each with
        its last check where ``slots`` reach as far as the key that ran it."""
        found = self.store.scroll(ARTICLES, self._where(tenant, slots))
        records = self._with_checks(tenant, [_article(r.payload) for r in found], slots)
        return sorted(records, key=lambda r: -r.get("updated_at", 0.0))

    def _with_checks(
        self, tenant: str, records: list[StoredArticle], slots: Mapping[str, str] | None
    ) -> list[StoredArticle]:
        """``records`` with the last check ``slots`` may read (read in the store under them),
        and ``check_hidden`` where one ran above them."""
        slugs = [r["slug"] for r in records]
        shown = self.checks.read(tenant, slugs, slots)
        every = shown if slots is None else self.checks.read(tenant, slugs, None)
        return [
            {
                **r,
                "check": shown.get(r["slug"]),
                "check_hidden": r["slug"] in every and r["slug"] not in shown,
            }
            for r in records
        ]

    def _write_record(self, record: StoredArticle) -> StoredArticle:
        """Store the article's record; its check lives apart, at its own level (``checks``)."""
        vector = self.encoders.dense.encode(["article"])[0].dense
        key = str(uuid.uuid5(_NAMESPACE, f"{record['tenant']}/{record['slug']}"))
        kept = {k: v for k, v in record.items() if k not in ("check", "check_hidden")}
        self.store.upsert(ARTICLES, [PointData(id=key, dense=vector, payload=kept)])
        return record

    def _event(self, record: StoredArticle, who: str, action: str, detail: str = "") -> None:
        now = time.time()
        event: ArticleEvent = {"at": now, "by": who, "action": action, "detail": detail}
        record["events"] = [*record.get("events", []), event]
        record["updated_at"] = now

    def _write(self, kb: KnowledgeBase, path: Path, text: str) -> None:
        """Write the file and ingest it; a file that cannot be ingested is put back as it was."""
        path.parent.mkdir(parents=True, exist_ok=True)
        previous = path.read_text(encoding="utf-8") if path.exists() else None
        path.write_text(text, encoding="utf-8")
        report = ingest_paths(kb, [path])
        if report.skipped:
            if previous is None:
                path.unlink()
            else:
                path.write_text(previous, encoding="utf-8")
            raise ArticleError(422, "text", f"the article cannot be ingested: {report.skipped[0][1]}")

    def _within_reach(self, slots: Mapping[str, str], article: ArticleDraft, tenant: str) -> None:
        """422 naming the field when the caller's own slots could not read ``article``."""
        for field in admits(self.rules, slots, as_document_fields(article, tenant)):
            value = getattr(article, field, None)
            raise ArticleError(
                422,
                field,
                f"your key may not give an article {field} {value!r}: it could not read it "
                "itself (an article stays within the enforced slots of the key that saves "
                "or publishes it)",
            )

    def _quotes_no_reply_above(self, article: ArticleDraft, tenant: str) -> None:
        """422 naming ``access`` when ``article`` quotes a person's reply from a conversation
        above its level (an internal customer's reply in a public article): it stays at that
        conversation's level or loses that text."""
        if self.memory is None:
            return
        mine = {k: v for k, v in as_document_fields(article, tenant).items() if k != "tenant"}
        said = words_of(article.text)
        for reply in PersonReplies(self.memory).of_tenant(tenant):
            hidden = above(level_rules(self.rules), mine, reply)
            if hidden and quotes(said, str(reply.get("answer") or "")):
                raise ArticleError(
                    422,
                    "access",
                    f"this article quotes a person's reply in a conversation at access "
                    f"{reply.get('access')!r} (session {reply['session_id']}, turn "
                    f"{reply['turn_index']}), which readers of access {article.access!r} may "
                    f"not read: give the article access {reply.get('access')!r}, or take the "
                    "quoted text out",
                )

    def save(
        self, tenant: str, who: str, slots: Mapping[str, str], article: ArticleDraft, kb: KnowledgeBase
    ) -> StoredArticle:
        """Write the article as a draft (its real slots, hidden from every search but its
        check) and ingest it; a published article of that slug is taken back to draft (a
        changed text must be checked again). Never below a reply it quotes."""
        self._within_reach(slots, article, tenant)
        self._quotes_no_reply_above(article, tenant)
        record = self.record(tenant, article.slug, None)
        if record is not None and self.record(tenant, article.slug, slots) is None:
            raise ArticleError(
                403, "slug", f"an article {article.slug!r} exists that your key may not read"
            )
        preview = uuid.uuid4().hex
        self._write(kb, self.path(tenant, article.slug), front_matter(article, tenant, preview))
        record = record or {"tenant": tenant, "slug": article.slug}
        record = ARTICLE.validate_python({**record, **article.model_dump()})
        record.update(
            {
                "id": article_id(tenant, article.slug),
                "status": "draft",
                "check": None,
                "check_hidden": False,
                "preview": preview,
            }
        )
        self.checks.clear(tenant, article.slug)  # a changed text is checked again
        self._event(record, who, "saved", f"as a draft; to publish as {article.access}")
        return self._write_record(record)

    def check(
        self,
        tenant: str,
        who: str,
        slots: Mapping[str, str],
        slug: str,
        ask: Callable[[str, dict[str, str]], TurnResult],
        recent: Callable[[StoredArticle], Sequence[Asked]] = lambda record: (),
    ) -> StoredArticle:
        """Replay the article's questions, each a turn under the caller's own slots and the
        draft's (``ask(question, slots)``); record which are now answered from the article.
        Then the recent customer questions near it (``recent(record)``), each asked with and
        without the draft under the caller's slots: what publishing would change for them."""
        record = self._required(tenant, slug, slots)
        under = {**slots, **({DRAFT: record["preview"]} if record.get("preview") else {})}
        rows = []
        for question in record.get("questions") or [record["title"]]:
            result = ask(question, under)
            cited = [c.source_id for c in result.citations]
            rows.append(
                CheckedQuestion(
                    question=question,
                    verdict=result.verdict,
                    answered_from_article=result.verdict == "answered" and record["id"] in cited,
                    cited=cited,
                    answer=result.answer,
                )
            )
        passed = sum(r["answered_from_article"] for r in rows)
        near = list(recent(record))
        without = [reply_of(ask(q.text, dict(slots))) for q in near]
        with_it = [reply_of(ask(q.text, under)) for q in near]
        changes = compare(near, without, with_it)
        asked = REPLAYED.validate_python([c.model_dump() for c in changes])
        check: ArticleCheck = {
            "at": time.time(),
            "by": who,
            "rows": rows,
            "answered": passed,
            "replay": {
                "questions": len(asked),
                "summary": summary(changes),
                "changes": [c for c in asked if c["change"] != "same"],
                "asked": asked,
            },
        }
        # its rows quote what these slots read: kept at their level, shown to keys reaching it
        self.checks.write(tenant, slug, check, slots)
        record.update({"check": check, "check_hidden": False})
        self._event(record, who, "checked", f"{passed} of {len(rows)} questions answered from it")
        return self._write_record(record)

    def publish(
        self,
        tenant: str,
        who: str,
        slots: Mapping[str, str],
        slug: str,
        kb: KnowledgeBase,
        base: str = "",
        despite: Sequence[str] = (),
    ) -> StoredArticle:
        """Give the article its real access level (after a check answered from it) and its URL
        on the service at ``base`` (``pilot.public_url``; "": the path alone); only an
        article the caller may read, so never above its own slots. While some of its
        questions still fail the last check, only with each of them named in ``despite`` (the
        lead's explicit confirmation; 409 naming them, ``failing``, otherwise), and the
        publication records them."""
        record = self._required(tenant, slug, slots)
        check = record.get("check")
        if record.get("check_hidden"):
            raise ArticleError(
                409,
                "check",
                "the last check ran under a key that reads more than yours, so your key may "
                "not read it: run the check again with your key",
            )
        if not (check and check["answered"]):
            raise ArticleError(
                409, "check", "run the check first: no question was answered from this article"
            )
        failing = still_failing(check, despite)
        article = draft_of(record)
        self._within_reach(slots, article, tenant)
        self._quotes_no_reply_above(article, tenant)
        url = article_url(base, tenant, slug)
        self._write(kb, self.path(tenant, slug), front_matter(article, tenant, None, url))
        record.update({"status": "published", "url": url})
        record.pop("preview", None)
        also = f"; {len(failing)} question(s) still failing: " + " / ".join(failing) if failing else ""
        self._event(record, who, "published", f"as {article.access}{also}")
        return self._write_record(record)

    def readable(
        self, tenant: str, slots: Mapping[str, str], name: str, kb: KnowledgeBase
    ) -> StoredArticle | None:
        """The published article ``name`` (``<tenant folder>/<slug>``, ``<slug>`` without a
        tenant: its id without ``articles/``) of ``tenant`` when ``slots`` (the reader's
        enforced slots, its tenant among them) may read it, as its record and in the
        knowledge base (decided in the store, as a search under them); None otherwise: another
        tenant's name, a draft, or an article above the reader's slots."""
        slug = name.rsplit("/", 1)[-1]
        if not SLUG.fullmatch(slug) or f"articles/{name}" != article_id(tenant, slug):
            return None
        record = self.record(tenant, slug, slots)
        if record is None or record.get("status") != "published":
            return None
        where = build_filters(self.rules, dict(slots), strict=False).enforced
        return record if kb.readable_sources([record["id"]], where) else None

    def _required(self, tenant: str, slug: str, slots: Mapping[str, str]) -> StoredArticle:
        record = self.record(tenant, slug, slots)
        if record is None:
            raise ArticleError(404, "slug", f"no article {slug!r} your key may read in this tenant")
        return record

    def reconcile(
        self,
        kb: KnowledgeBase,
        slots_of: Callable[[str, str], Mapping[str, str] | None] = lambda t, k: None,
    ) -> int:
        """Bring every stored article's file and document to the current layout, from its
        record (which holds the whole article): files per tenant, ids scoped by tenant, drafts
        hidden by their ``draft`` value. An article another tenant's save overwrote under the
        layout before (one file per name) is written back from its record; the old shared
        file and document go once their tenant's article stands on its own. A check stored in
        the record (before checks kept their level) moves to ``checks`` at the level of the key
        that ran it (``slots_of(tenant, key name)``), or, that key unknown, at the highest
        level. Run at start; the number of articles written."""
        written = 0
        for found in list(self.store.scroll(ARTICLES)):
            record = _article(found.payload)
            tenant, slug = record["tenant"], record["slug"]
            old_check = record.pop("check", None)
            if old_check:
                ran_under = slots_of(tenant, str(old_check.get("by", ""))) or highest_levels(self.rules)
                self.checks.write(tenant, slug, old_check, ran_under)
            draft = record["status"] != "published"
            if draft and not record.get("preview"):
                record["preview"] = uuid.uuid4().hex
            text = front_matter(
                draft_of(record),
                tenant,
                record.get("preview") if draft else None,
                None if draft else record.get("url"),
            )
            path = self.path(tenant, slug)
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                self._write(kb, path, text)
                written += 1
            if record.get("id") != article_id(tenant, slug) or record != found.payload:
                self._write_record({**record, "id": article_id(tenant, slug)})
            if tenant:
                self._retire_shared_file(kb, tenant, slug)
        return written

    def _retire_shared_file(self, kb: KnowledgeBase, tenant: str, slug: str) -> None:
        """The file ``<folder>/<slug>.md`` of the layout before tenants, when it is this
        tenant's (its front matter says so): removed with its document."""
        shared = self.folder / f"{slug}.md"
        if not shared.is_file() or self.record("", slug, None) is not None:
            return
        try:
            owner = frontmatter.loads(shared.read_text(encoding="utf-8")).metadata.get("tenant")
        except (OSError, ValueError, yaml.YAMLError):
            return
        if owner == tenant:
            kb.remove(f"articles/{slug}")
            shared.unlink()


def still_failing(check: ArticleCheck, despite: Sequence[str]) -> list[str]:
    """The questions the last check did not answer from the article; 409 (``failing``: them)
    unless ``despite`` names each of them (publishing anyway is the lead's explicit choice).

    >>> row = {"question": "Mars?", "answered_from_article": False}
    >>> still_failing({"rows": [row], "answered": 0}, ["Mars?"])
    ['Mars?']
    """
    failing = [r["question"] for r in check["rows"] if not r["answered_from_article"]]
    unnamed = [q for q in failing if q not in set(despite)]
    if unnamed:
        raise ArticleError(
            409,
            "despite",
            f"{len(unnamed)} of the article's questions still fail the check ("
            + " / ".join(unnamed)
            + "): fix the article and check it again, or name them in despite to publish anyway",
            failing=[*failing],
        )
    return failing


QUOTED_WORDS = 5  # a reply's sentence of at least this many words, found in an article: quoted


def words_of(text: str) -> str:
    """``text`` as its lower-case words, one space apart (how quotes are found).

    >>> words_of("We **do not** ship\\n to Mars!")
    'we do not ship to mars'
    """
    return " ".join(ALNUM.findall(text.lower()))


def quotes(article_words: str, reply: str) -> bool:
    """Whether an article (its ``words_of``) holds a sentence of ``reply`` of at least
    ``QUOTED_WORDS`` words, as the draft takes them (without greetings and pasted sources).

    >>> quotes(words_of("# Mars\\n\\nWe do not ship to Mars."), "Hi Ana, we do not ship to Mars.")
    True
    """
    text = impersonal("\n".join(without_pasted_sources(reply)))
    for sentence in split_sentences(clean(text)):
        said = words_of(sentence)
        if len(said.split()) >= QUOTED_WORDS and f" {said} " in f" {article_words} ":
            return True
    return False


def draft_of(record: Mapping[str, object]) -> ArticleDraft:
    """The article a record holds."""
    return ArticleDraft(**{k: record[k] for k in ArticleDraft.model_fields if k in record})

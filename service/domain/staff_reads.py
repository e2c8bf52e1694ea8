"""What a staff key may read of a conversation: the same enforced slots as a customer key's
searches. An agent key with ``access_level: public`` never sees an answer, quote or citation
from a customer-only or enterprise-only article, even in a transcript it works on; the answer
is withheld and says so, so the agent knows to ask someone who may read it. A person's reply
is read at its conversation's access level (``storage.replies``): a key below it reads it
withheld too.

Which articles a key may read is decided in the storage layer
(:meth:`storage.kb.knowledge_base.KnowledgeBase.readable_sources`, under the filter
:func:`storage.retrieval.filters.build_filters` builds for every search).

Usage::

    turns = withhold_unreadable(runtime, staff_slots(who), memory.session_turns(scope, sid))
    report = only_readable_topics(runtime, staff_slots(who), report)   # the outcome report
    turns = with_cited_pages(runtime, slots, turns)   # a customer's own: citations as links
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from service.auth import Caller
from storage.replies import PersonReplies
from storage.retrieval.filters import build_filters

if TYPE_CHECKING:
    from agents.runtime import TurnRuntime
    from service.domain.outcomes import ConversationOutcome, OutcomeReport
    from storage.memory import StoredTurn

WITHHELD = (
    "[withheld: this answer cites an article your key may not read; ask a colleague whose key may]"
)
WITHHELD_REPLY = (
    "[withheld: a person's reply in a conversation above what your key may read; ask a "
    "colleague whose key may]"
)


def staff_slots(who: Caller) -> dict[str, str]:
    """The enforced slots a staff key reads under (its tenant included)."""
    return {**who.slots, "tenant": who.tenant} if who.tenant else dict(who.slots)


def readable(runtime: TurnRuntime, slots: dict[str, str], source_ids: Sequence[str]) -> frozenset[str]:
    """Which of ``source_ids`` a caller with ``slots`` may read (decided in the store)."""
    return frozenset(readable_titles(runtime, slots, source_ids))


def readable_titles(
    runtime: TurnRuntime, slots: dict[str, str], source_ids: Sequence[str]
) -> dict[str, str]:
    """The titles of the ``source_ids`` a caller with ``slots`` may read (decided in the store)."""
    return {source: title for source, (title, _) in readable_pages(runtime, slots, source_ids).items()}


def readable_pages(
    runtime: TurnRuntime, slots: dict[str, str], source_ids: Sequence[str]
) -> dict[str, tuple[str, str | None]]:
    """(title, url) of the ``source_ids`` a caller with ``slots`` may read (decided in the store)."""
    if not source_ids:
        return {}
    kb = runtime.knowledge_base()
    return kb.readable_pages(
        sorted(set(source_ids)), build_filters(kb.settings.slots, slots, strict=False).enforced
    )


def with_cited_pages(
    runtime: TurnRuntime, slots: dict[str, str], turns: Sequence[StoredTurn]
) -> list[dict[str, object]]:
    """``turns`` with each stored citation (a source id) as the page the reply showed: its
    ``source_id``, ``title`` and ``url``, for the pages ``slots`` may read now (one store read)."""
    pages = readable_pages(runtime, slots, sorted({c for t in turns for c in t.get("citations") or []}))
    return [
        {
            **turn,
            "citations": [
                {"source_id": c, "title": pages[c][0], "url": pages[c][1]}
                for c in turn.get("citations") or []
                if c in pages
            ],
        }
        for turn in turns
    ]


def withhold_unreadable(
    runtime: TurnRuntime, slots: dict[str, str], turns: Sequence[StoredTurn], reader: str = ""
) -> list[StoredTurn]:
    """``turns`` with every answer that cites an article ``slots`` may not read replaced by
    :data:`WITHHELD`, and such citations left out (counted in ``withheld_citations``); a
    person's reply in a conversation above ``slots`` replaced by :data:`WITHHELD_REPLY`,
    unless the ``reader`` (a staff key's name) wrote it."""
    turns = withhold_replies(runtime, slots, turns, reader)
    cited = sorted({c for t in turns for c in t.get("citations") or []})
    if not cited:
        return list(turns)
    readable_ids = readable(runtime, slots, cited)
    shown = []
    for turn in turns:
        hidden = [c for c in turn.get("citations") or [] if c not in readable_ids]
        if hidden:
            turn = {  # a copy: the turn read stays as stored
                **turn,
                "answer": WITHHELD,
                "withheld_citations": len(hidden),
                "citations": [c for c in turn["citations"] if c in readable_ids],
            }
        shown.append(turn)
    return shown


def withhold_replies(
    runtime: TurnRuntime, slots: dict[str, str], turns: Sequence[StoredTurn], reader: str = ""
) -> list[StoredTurn]:
    """``turns`` with each person's reply that ``slots`` may not read (its conversation's
    reach is above them, decided in the store: ``storage.replies``) replaced by
    :data:`WITHHELD_REPLY`; a reply the ``reader`` wrote is theirs to read."""
    others = [t for t in turns if t.get("from") == "agent" and (not reader or t.get("agent") != reader)]
    if not others or runtime.memory is None:
        return list(turns)
    sessions = sorted({t["session_id"] for t in others})
    shown = PersonReplies(runtime.memory).readable(others[0]["tenant"], slots, sessions)
    hidden = {(t["session_id"], t["turn_index"]) for t in others} - shown
    return [
        {**t, "answer": WITHHELD_REPLY, "withheld_reply": True}
        if (t.get("session_id"), t.get("turn_index")) in hidden
        else t
        for t in turns
    ]


def only_readable_topics(
    runtime: TurnRuntime, slots: dict[str, str], report: OutcomeReport
) -> OutcomeReport:
    """An outcome report (``service.domain.outcomes.OutcomeReport``) whose conversations' ``topic``
    and ``topic_id`` name only the pages ``slots`` may read, ``topic_title`` the title of that
    page (one store read for the page of conversations)."""
    report.conversations = readable_outcomes(runtime, slots, report.conversations)
    return report


def readable_outcomes(
    runtime: TurnRuntime, slots: dict[str, str], conversations: list[ConversationOutcome]
) -> list[ConversationOutcome]:
    """``conversations`` (``ConversationOutcome``) naming only pages ``slots`` may read."""
    pages = [t for c in conversations for t in (*c.topic, c.topic_id) if t]
    titles = readable_titles(runtime, slots, pages)
    for conversation in conversations:
        conversation.topic = [t for t in conversation.topic if t in titles]
        conversation.topic_id = conversation.topic_id if conversation.topic_id in titles else ""
        conversation.topic_title = titles.get(conversation.topic_id, "")
    return conversations

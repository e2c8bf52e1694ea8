"""People's replies in a customer's conversation, kept at the conversation's reach.

A support agent's reply quotes what the conversation is about: in an internal customer's
conversation it may quote an internal page. So a reply is stored with the enforced slots its
conversation's turns ran under (``slots``) and, like a long-term memory, as the knowledge
base's fields (``access``, ``tiers``: :func:`storage.retrieval.filters.document_fields`).
Every staff read asks the store which replies the reader's slots may read, filtered there on
the ordered rules (``at_most``: the access level), and shows the others withheld. A plan
(``tier``) is no level: staff read the replies of every plan's conversations, as they read
the conversations themselves (an enterprise lead's key reads a basic customer's reply), and
an article quoting a reply is held to its level (``service/stores/articles.py``). A reply written
before replies kept their reach gets it from its conversation's turns at start (the highest
level when they are gone); until then it is withheld from every reader.

Usage::

    replies = PersonReplies(memory)
    index = replies.add(scope, "s1", "Use reason code OVR-9.", agent="ana")
    replies.readable("acme", {"access_level": "public"}, ["s1"])   # set(): internal reply
    replies.reach(scope, "s1")                      # {"access_level": "internal", ...}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from storage.memory import SESSIONS, MemoryStore, Scope, StoredTurn, TurnStatus
from storage.qdrant.store import AllOf, Condition, Match, Missing, PointData
from storage.retrieval.filters import (
    build_filters,
    document_fields,
    highest_levels,
    level_rules,
    widest_reach,
)

AGENT_REPLY: TurnStatus = "agent_reply"  # the status of a person's reply turn
REACH_KEPT = "reach_kept"  # set on replies stamped with their conversation's reach


class PersonReplies:
    """The persons' replies of the customer memory's sessions, by reach."""

    def __init__(self, memory: MemoryStore) -> None:
        self.memory = memory

    def reach(
        self, scope: Scope, session_id: str, fallback: Mapping[str, Any] | None = None
    ) -> dict[str, str]:
        """The enforced slots the conversation's turns ran under (the widest of them);
        ``fallback`` when none ran (a conversation a person took before its first message),
        else the highest level."""
        turns = self.memory.session_turns(scope, session_id)
        reads = [t["slots"] for t in turns if isinstance(t.get("slots"), dict) and t.get("user")]
        if reads:
            return widest_reach(self.memory.rules, reads)
        if fallback is not None:
            return {k: str(v) for k, v in fallback.items() if k in self.memory.rules}
        return highest_levels(self.memory.rules)

    def fields(self, reach: Mapping[str, Any]) -> dict[str, Any]:
        """What a reply of a conversation reaching ``reach`` is stamped with."""
        return {
            "slots": dict(reach),
            **document_fields(self.memory.rules, reach),
            REACH_KEPT: True,
        }

    def add(
        self,
        scope: Scope,
        session_id: str,
        text: str,
        agent: str,
        fallback: Mapping[str, Any] | None = None,
    ) -> int:
        """Store a person's reply in the session at the conversation's reach (``fallback``:
        the replying key's slots, for a conversation no turn of which ran yet); its index."""
        record = {
            "user": "",
            "answer": text,
            "from": "agent",
            "agent": agent,
            **self.fields(self.reach(scope, session_id, fallback)),
        }
        return self.memory.claim_turn(scope, session_id, record, AGENT_REPLY)

    def _where(self, tenant: str, *more: Condition) -> Condition:
        return AllOf((Match("tenant", (tenant,)), Match("status", (AGENT_REPLY,)), *more))

    def readable(
        self, tenant: str, slots: Mapping[str, Any], session_ids: Sequence[str] | None = None
    ) -> set[tuple[str, int]]:
        """(session id, turn index) of the tenant's replies (in ``session_ids``) that a reader
        with ``slots`` may read, decided in the store (on the level rules: ``level_rules``)."""
        self.memory.ensure()
        reader = build_filters(level_rules(self.memory.rules), slots, strict=False).enforced
        more = [c for c in (reader,) if c is not None]
        if session_ids is not None:
            more.append(Match("session_id", tuple(session_ids)))
        found = self.memory.store.scroll(
            SESSIONS, self._where(tenant, *more), fields=("session_id", "turn_index")
        )
        return {(r.payload["session_id"], int(r.payload["turn_index"])) for r in found}

    def of_tenant(self, tenant: str) -> list[StoredTurn]:
        """Every reply of the tenant with its text and reach (staff checks, never a read)."""
        self.memory.ensure()
        fields = ("session_id", "turn_index", "answer", "slots", *self.payload_fields())
        found = self.memory.store.scroll(SESSIONS, self._where(tenant), fields=fields)
        return [r.payload for r in found]  # type: ignore[misc]  # a StoredTurn's keys

    def payload_fields(self) -> tuple[str, ...]:
        """The payload fields a reply's reach is stored as (``access``, ``tiers``)."""
        return tuple(rule.field for rule in self.memory.rules.values())

    def keep_reach_of_old_replies(self) -> int:
        """Replies written before they kept their conversation's reach get it (from its
        turns; the highest level when they are gone). Run at start; how many were."""
        self.memory.ensure()
        old = list(
            self.memory.store.scroll(
                SESSIONS, AllOf((Match("status", (AGENT_REPLY,)), Missing(REACH_KEPT))), dense=True
            )
        )
        for record in old:
            scope = Scope(record.payload["customer_id"], record.payload.get("tenant", ""))
            payload = {**record.payload, **self.fields(self.reach(scope, record.payload["session_id"]))}
            self.memory.store.upsert(
                SESSIONS, [PointData(id=record.id, dense=record.dense, payload=payload)]
            )
        return len(old)

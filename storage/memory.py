"""Per-customer memory in Qdrant: sessions, entities and long-term memories.

Every read and write goes through a :class:`Scope` (customer id, and tenant when set). The
scope becomes a filter on every query and is stamped on every record, inside this module:
no method reaches records of another customer, whatever the text or ids passed in.

A long-term memory quotes answers, so it keeps their reach: it is written with the enforced
slots its answers ran under (``read_as``), stored as the knowledge base's fields (``access``,
``tiers``: ``storage.retrieval.filters.document_fields``), and a read under a caller's
slots (a turn's recall, a staff key's view) is filtered on them in Qdrant, as a search is.

Usage::

    memory = MemoryStore(store, encoders)
    scope = Scope("c-001")
    index = memory.claim_turn(scope, "s1", {"user": "..."})     # 0: the pending turn's slot
    memory.add_turn(scope, "s1", index, {"user": "...", "answer": "...", "verdict": "answered"})
    memory.upsert_entities(scope, [Entity("order", "ORD-55812")], source="s1#0")
    memory.remember(scope, "s1", summary="...", resolution="...", sources=["billing/refunds.md"],
                    read_as={"access_level": "internal"})
    memory.recall(scope, "where is my refund?", slots={"access_level": "public"})  # not s1's
    memory.forget(scope)        # {"sessions": 2, "entities": 1, "memories": 1}
"""

from __future__ import annotations

import threading
import time
import uuid
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SkipValidation, TypeAdapter
from typing_extensions import TypedDict  # pydantic reads it before Python 3.12

from config.settings import SlotRule, default_slot_rules
from storage.kb.embeddings import Encoders
from storage.qdrant.store import (
    AllOf,
    AnyOf,
    Condition,
    Match,
    Missing,
    Nearest,
    PointData,
    Stage,
    Store,
    ensure_records,
)
from storage.records import parsed
from storage.retrieval.filters import build_filters, document_fields, highest_levels, widest_reach

SESSIONS, ENTITIES, MEMORIES = "sessions", "entities", "memories"
COLLECTIONS = (SESSIONS, ENTITIES, MEMORIES)
GAP_VERDICTS = ("idk", "suggest", "handoff")  # turns the knowledge-gap report reads
# what a stored turn is: asked (``pending``), answered (``done``), failed (``error``), a message
# kept for a person (``waiting_for_agent``) or a person's reply (``agent_reply``)
TurnStatus = Literal["pending", "done", "error", "waiting_for_agent", "agent_reply"]
# a customer's message stored after the hand-off, for the person who takes the conversation
WAITING_FOR_AGENT: TurnStatus = "waiting_for_agent"
ANONYMOUS = "anon-"  # customer ids of web visitors without one: the session's own id follows
_NAMESPACE = uuid.UUID("0f4b8f0e-9d55-4c0e-8f7a-3c1d2b7e6a91")
_MAX_ID = 200
MAX_ENTITIES_PER_WRITE = 32  # one message naming hundreds of ids stores the first 32
_STRIPES = 64


class _StripedLocks:
    """A fixed set of locks picked by key: per-customer (or per-session) locking without a lock
    per key kept forever."""

    def __init__(self) -> None:
        self._locks = [threading.Lock() for _ in range(_STRIPES)]

    def __call__(self, key: str) -> threading.Lock:
        return self._locks[zlib.crc32(key.encode()) % _STRIPES]


class ScopeError(ValueError):
    """A customer id or tenant is missing or malformed."""


def check_id(name: str, value: object, required: bool = True) -> str:
    """A customer id or tenant as memory accepts it; ScopeError says what is wrong."""
    if not isinstance(value, str):
        raise ScopeError(f"{name} must be text, got {type(value).__name__}")
    if len(value) > _MAX_ID or any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ScopeError(f"{name} {value[:40]!r} is too long or has control characters")
    if required and not value.strip():
        raise ScopeError(f"{name} is required for memory")
    if value != value.strip():
        raise ScopeError(f"{name} {value[:40]!r} has leading or trailing spaces")
    return value


@dataclass(frozen=True)
class Scope:
    """Whose records: one customer, optionally inside one tenant."""

    customer_id: str
    tenant: str = ""

    def __post_init__(self) -> None:
        check_id("tenant", self.tenant, required=False)
        check_id("customer_id", self.customer_id)

    def condition(self) -> Condition:
        return AllOf((Match("customer_id", (self.customer_id,)), Match("tenant", (self.tenant,))))

    def key(self, *parts: object) -> str:
        return str(
            uuid.uuid5(_NAMESPACE, "\x1f".join([self.tenant, self.customer_id, *map(str, parts)]))
        )


@dataclass(frozen=True)
class Entity:
    type: str
    value: str
    attributes: dict[str, str] = field(default_factory=dict)


class RememberedEntity(BaseModel):
    """An entity of the customer's memory: what it is, when it was seen, in which turns."""

    model_config = ConfigDict(extra="ignore")

    type: str
    value: str
    attributes: dict[str, str] = Field(default_factory=dict)
    first_seen: float = 0.0
    last_seen: float = 0.0
    source_turns: list[str] = Field(default_factory=list)
    customer_id: str = ""  # the scope it was stamped with
    tenant: str = ""


class RememberedCase(BaseModel):
    """A long-term memory: an earlier session's question and how it was resolved."""

    model_config = ConfigDict(extra="ignore")

    session_id: str
    summary: str
    resolution: str = ""
    sources: list[str] = Field(default_factory=list)
    ts: float = 0.0
    score: float = 0.0  # its similarity to what it was recalled for
    customer_id: str = ""  # the scope it was stamped with
    tenant: str = ""


SCOPE_FIELDS = ("customer_id", "tenant")


# One turn of a session as stored: the customer's message (``user``), its claim and status,
# and what the assistant (or a person: ``from`` "agent") replied. Every key may be absent: a
# pending turn has no answer yet, a person's reply no verdict, a report's read only the
# fields it asked for. (Functional form: ``from`` is a keyword.)
StoredTurn = TypedDict(
    "StoredTurn",
    {
        "session_id": str,
        "turn_index": int,
        "ts": float,
        "customer_id": str,
        "tenant": str,
        "user": str,
        "slots": dict[str, str],
        "status": TurnStatus,
        "claim": str,
        "kind": str,  # what the message was (tasks.message_kind)
        "answer": str,
        "verdict": str,
        "citations": list[str],  # the cited pages' source ids
        "offers_handoff": bool,
        "probability": float | None,
        "drafted": bool,
        "llm_calls": int,
        "failure": dict[str, Any],
        "from": Literal["agent"],  # a person's reply
        "agent": str,  # the staff key that replied
        # gap_turns only: the message's stored vector (a float32 array, read as stored)
        "vector": Annotated[Sequence[float], SkipValidation],
        "withheld_citations": int,  # a staff read's: citations the reader's slots may not see
        "withheld_reply": bool,  # a staff read's: a person's reply above the reader's slots
        "access": str,  # a person's reply: its conversation's reach (storage.replies)
        "tiers": list[str],
        "reach_kept": bool,
    },
    total=False,
)
TURN: TypeAdapter[StoredTurn] = TypeAdapter(StoredTurn)


def read_turn(payload: Mapping[str, Any]) -> StoredTurn:
    """A stored turn as :data:`StoredTurn`, or a ``BrokenRecord`` naming it and its field."""
    where = "/".join(
        str(payload.get(k, "?")) for k in ("tenant", "customer_id", "session_id", "turn_index")
    )
    return parsed(TURN, payload, f"{SESSIONS} {where}")


def _stamped(scope: Scope, payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "customer_id": scope.customer_id, "tenant": scope.tenant}


class MemoryStore:
    """The three memory collections behind the storage interface (Edge or server)."""

    def __init__(
        self, store: Store, encoders: Encoders, rules: Mapping[str, SlotRule] | None = None
    ) -> None:
        self.store = store
        self.encoders = encoders
        # the enforced rules but the scope's own (customer, tenant): what a memory's reach is
        self.rules = {
            name: rule
            for name, rule in (rules or default_slot_rules()).items()
            if rule.mode == "enforced" and rule.field not in SCOPE_FIELDS
        }
        self._merge_lock = threading.Lock()
        self._customer_locks = _StripedLocks()
        self._session_locks = _StripedLocks()
        self._ready = False

    def ensure(self) -> None:
        if self._ready:
            return
        keys = ("customer_id", "tenant", "session_id", "type", "verdict", "status")
        with self._merge_lock:
            for name in COLLECTIONS:
                # only the long-term memories are searched by meaning (``recall``)
                ensure_records(self.store, name, self.encoders.dense.dim, keys, name == MEMORIES)
            self._ready = True

    def _vector(self, text: str) -> Any:
        return self.encoders.dense.encode([text or " "])[0].dense

    def _where(self, scope: Scope, *extra: Condition) -> Condition:
        return AllOf((scope.condition(), *extra))

    def _write(
        self,
        name: str,
        scope: Scope,
        point_id: str,
        text: str,
        payload: dict[str, Any],
        insert_only: bool = False,
    ) -> None:
        point = PointData(id=point_id, dense=self._vector(text), payload=_stamped(scope, payload))
        (self.store.insert_new if insert_only else self.store.upsert)(name, [point])

    # -- sessions --------------------------------------------------------------------------
    def add_turn(
        self,
        scope: Scope,
        session_id: str,
        turn_index: int,
        record: dict[str, Any],
        insert_only: bool = False,
    ) -> None:
        """Store one turn of a session (call it before the crew runs, then again with the
        result: the same id is overwritten, so nothing of the user's turn is lost)."""
        self.ensure()
        payload = {
            **record,
            "session_id": session_id,
            "turn_index": turn_index,
            "ts": record.get("ts", time.time()),
        }
        self._write(
            SESSIONS,
            scope,
            scope.key("turn", session_id, turn_index),
            str(record.get("user", "")),
            payload,
            insert_only,
        )

    def claim_turn(
        self, scope: Scope, session_id: str, record: dict[str, Any], status: TurnStatus = "pending"
    ) -> int:
        """Claim the session's next turn index and store ``record`` there with ``status``.

        The slot is taken with an insert-only write and read back: of two turns that reach one
        index at once, in this process or in another worker over the same Qdrant, exactly one
        finds its own claim there and the other moves on to the next index. A turn that ends
        late writes only the slot it claimed."""
        with self._session_locks(scope.key("session", session_id)):  # this process: no retries
            index = max(self._claims(scope, session_id), default=-1) + 1
            while True:
                claim = uuid.uuid4().hex
                self.add_turn(
                    scope,
                    session_id,
                    index,
                    {**record, "status": status, "claim": claim},
                    insert_only=True,
                )
                claims = self._claims(scope, session_id)
                if claims.get(index) == claim:
                    return index
                index = max(claims) + 1

    def release_turn(self, scope: Scope, session_id: str, turn_index: int) -> None:
        """Take back a turn this caller claimed and may not keep (e.g. over a cap)."""
        self.ensure()
        self.store.delete(
            SESSIONS,
            self._where(scope, Match("session_id", (session_id,)), Match("turn_index", (turn_index,))),
        )

    def _claims(self, scope: Scope, session_id: str) -> dict[int, str | None]:
        """The session's taken turn indices and the claim each was taken with (two fields of
        each turn, not the whole transcript)."""
        self.ensure()
        records = self.store.scroll(
            SESSIONS, self._session(scope, session_id), fields=("turn_index", "claim")
        )
        return {int(r.payload["turn_index"]): r.payload.get("claim") for r in records}

    def _session(self, scope: Scope, session_id: str) -> Condition:
        return self._where(scope, Match("session_id", (session_id,)))

    def session_turns(self, scope: Scope, session_id: str) -> list[StoredTurn]:
        self.ensure()
        records = self.store.scroll(SESSIONS, self._session(scope, session_id))
        return sorted((read_turn(r.payload) for r in records), key=lambda p: p["turn_index"])

    def gap_turns(
        self, tenant: str, since: float = 0.0, rated_sessions: Sequence[str] = ()
    ) -> list[StoredTurn]:
        """The turns of ``tenant`` since ``since`` (epoch seconds) that may show a knowledge
        gap (refused, suggested, handed off, waiting for a person, or of ``rated_sessions``),
        each with the ``vector`` its message was stored with: the one read across customers,
        for the tenant's own knowledge-gap report (staff, never a customer); turns that
        failed (status ``error``) come too, for its error count."""
        self.ensure()
        kinds: list[Condition] = [
            Match("verdict", GAP_VERDICTS),
            Match("status", (WAITING_FOR_AGENT, "error")),
        ]
        if rated_sessions:
            kinds.append(Match("session_id", tuple(rated_sessions)))
        where = AllOf((Match("tenant", (tenant,)), AnyOf(tuple(kinds))))
        return [
            read_turn({**r.payload, "vector": r.dense})
            for r in self.store.scroll(SESSIONS, where, dense=True)
            if r.payload.get("ts", 0.0) >= since
        ]

    def tenant_turns(self, tenant: str, fields: Sequence[str]) -> list[StoredTurn]:
        """``fields`` of every turn of ``tenant`` (staff reports across customers, never a
        customer's view): one read for the outcome report, not one per conversation."""
        self.ensure()
        return [
            read_turn(r.payload)
            for r in self.store.scroll(SESSIONS, Match("tenant", (tenant,)), fields=fields)
        ]

    # -- entities --------------------------------------------------------------------------
    def upsert_entities(self, scope: Scope, entities: Sequence[Entity], source: str) -> None:
        """Add or refresh entities: first/last seen, attributes merged, source turns kept.

        At most ``MAX_ENTITIES_PER_WRITE`` per call, encoded and written in one batch, under a
        lock of the customer's alone: other customers' turns never wait for this one."""
        entities = list({(e.type, e.value): e for e in entities}.values())[:MAX_ENTITIES_PER_WRITE]
        if not entities:
            return
        self.ensure()
        now = time.time()
        with self._customer_locks(scope.key("entities")):
            known = {(p.type, p.value): p for p in self.entities(scope)}
            points = []
            texts = [f"{e.type} {e.value}" for e in entities]
            for entity, vector in zip(entities, self.encoders.dense.encode(texts), strict=True):
                previous = known.get((entity.type, entity.value))
                sources = list(previous.source_turns) if previous else []
                if source not in sources:
                    sources = [*sources, source][-20:]
                payload = {
                    "type": entity.type,
                    "value": entity.value,
                    "attributes": {**(previous.attributes if previous else {}), **entity.attributes},
                    "first_seen": previous.first_seen if previous else now,
                    "last_seen": now,
                    "source_turns": sources,
                }
                points.append(
                    PointData(
                        id=scope.key("entity", entity.type, entity.value),
                        dense=vector.dense,
                        payload=_stamped(scope, payload),
                    )
                )
            self.store.upsert(ENTITIES, points)

    def entities(self, scope: Scope) -> list[RememberedEntity]:
        """The scope's entities, most recently seen first."""
        self.ensure()
        found = [
            RememberedEntity.model_validate(r.payload)
            for r in self.store.scroll(ENTITIES, self._where(scope))
        ]
        return sorted(found, key=lambda e: -e.last_seen)

    # -- long-term memories ----------------------------------------------------------------
    def remember(
        self,
        scope: Scope,
        session_id: str,
        summary: str,
        resolution: str,
        sources: Sequence[str],
        read_as: Mapping[str, Any] | None = None,
    ) -> None:
        """Write the session's long-term memory, readable only under slots that reach as far
        as ``read_as`` (the enforced slots its answers ran under; none: what a caller without
        slots reads)."""
        self.ensure()
        reach = {k: v for k, v in (read_as or {}).items() if k in self.rules}
        self._write(
            MEMORIES,
            scope,
            scope.key("memory", session_id),
            summary,
            {
                **document_fields(self.rules, reach),
                "session_id": session_id,
                "summary": summary,
                "resolution": resolution,
                "sources": list(sources),
                "read_as": reach,
                "reach_kept": True,
                "ts": time.time(),
            },
        )

    def _readable(self, scope: Scope, slots: Mapping[str, Any] | None) -> Condition:
        """The scope's memories, and, given a reader's ``slots``, only those they may read."""
        if slots is None:
            return self._where(scope)
        reader = build_filters(self.rules, slots, strict=False).enforced
        return self._where(scope, *(c for c in (reader,) if c is not None))

    def memories(
        self, scope: Scope, limit: int = 5, slots: Mapping[str, Any] | None = None
    ) -> list[RememberedCase]:
        """The scope's latest long-term memories, newest first (what staff see of a customer),
        those ``slots`` may read when given."""
        self.ensure()
        found = self.store.scroll(MEMORIES, self._readable(scope, slots))
        cases = [RememberedCase(**r.payload) for r in found]
        return sorted(cases, key=lambda c: -c.ts)[:limit]

    def recall(
        self, scope: Scope, query: str, limit: int = 3, slots: Mapping[str, Any] | None = None
    ) -> list[RememberedCase]:
        """The scope's long-term memories nearest in meaning to ``query`` (those ``slots`` may
        read when given: a turn recalls under its own)."""
        self.ensure()
        hits = self.store.query(
            MEMORIES, Stage(Nearest("dense", self._vector(query)), limit), self._readable(scope, slots)
        )
        return [RememberedCase.model_validate({**h.payload, "score": round(h.score, 3)}) for h in hits]

    def keep_reach_of_old_memories(self) -> int:
        """Memories written before they kept their answers' reach get it from their session's
        turns (each stored with the slots it ran under); one whose turns are gone is kept at
        the highest level of each ``at_most`` slot. Run at start; how many were rewritten."""
        self.ensure()
        old = list(self.store.scroll(MEMORIES, Missing("reach_kept"), dense=True))
        for record in old:
            scope = Scope(record.payload["customer_id"], record.payload.get("tenant", ""))
            turns = self.session_turns(scope, record.payload["session_id"])
            reads = [t["slots"] for t in turns if isinstance(t.get("slots"), dict)]
            reach = widest_reach(self.rules, reads) if reads else highest_levels(self.rules)
            payload = {
                **record.payload,
                **document_fields(self.rules, reach),
                "read_as": reach,
                "reach_kept": True,
            }
            self.store.upsert(MEMORIES, [PointData(id=record.id, dense=record.dense, payload=payload)])
        return len(old)

    def clear_memories(self, scope: Scope) -> int:
        """Erase the scope's long-term memories only (sessions and entities stay)."""
        self.ensure()
        count = self.store.count(MEMORIES, self._where(scope))
        self.store.delete(MEMORIES, self._where(scope))
        return count

    # -- administration ---------------------------------------------------------------------
    def export(self, scope: Scope) -> dict[str, list[dict[str, Any]]]:
        self.ensure()
        return {
            name: [r.payload for r in self.store.scroll(name, self._where(scope))]
            for name in COLLECTIONS
        }

    def forget(self, scope: Scope) -> dict[str, int]:
        """Erase every record of the scope in every collection; return how many went."""
        self.ensure()
        counts = {}
        for name in COLLECTIONS:
            counts[name] = self.store.count(name, self._where(scope))
            self.store.delete(name, self._where(scope))
        return counts

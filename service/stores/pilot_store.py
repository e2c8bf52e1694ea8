"""Pilot session headers and feedback in Qdrant, scoped by tenant.

The turns themselves live in the customer memory's ``sessions`` collection
(:mod:`storage.memory`); this module keeps who owns a session (tenant, customer, key) and the
thumbs up/down of each answer, so several workers can share one Qdrant server.

Usage::

    pilot = PilotStore(store, encoders)
    pilot.create_session(header)
    pilot.session("acme", session_id)          # None for another tenant's session
    pilot.add_feedback("acme", session_id, turn_index=0, rating="up", comment="clear")
    pilot.mark_handoff("acme", session_id, "requested by the customer")
    pilot.handoffs("acme")                     # handed-off, unresolved sessions, oldest first
    pilot.take("acme", session_id, agent="ana", role="agent")
    pilot.resolve("acme", session_id, note="refund sent", by="ana")

A session's ``status`` is ``open``, ``handoff`` (waiting for a person) or ``resolved``, moved
only by the verbs of :mod:`service.domain.session_state`, each write a compare-and-set on the
header's ``rev`` (a conflict is a :class:`SessionConflict`, answered 409).
``memory_written_at`` says when its long-term memory was last written (on resolution, or by the
idle sweep); the first message after that clears it (``reopen``), so the sweep reads the turns
of sessions active since their memory was written, not of every session ever opened.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Literal

from service.domain.records import MARK, SESSION, SessionFields, SessionHeader, StoredMark
from service.domain.session_state import (
    Role,
    SessionConflict,
    Status,
    Verb,
    current_format,
    move,
    status_of,
)
from storage.kb.embeddings import Encoders
from storage.qdrant.revisions import expected, landed, revised
from storage.qdrant.store import (
    AllOf,
    AnyOf,
    Condition,
    Match,
    Missing,
    PointData,
    Store,
    ensure_records,
)
from storage.records import parsed
from tasks.outcomes import day_of

SESSIONS, FEEDBACK = "pilot_sessions", "pilot_feedback"
# why an open conversation is in the queue when staff took it (``taken_by`` names who; the
# customer reads this reason and never a staff key's name)
TAKEN_OVER = "taken over by our support team"
MAX_TRIES = 8  # compare-and-set attempts before a writer gives up with a conflict
_NAMESPACE = uuid.UUID("7a1d2c3e-5b6f-4a8b-9c0d-e1f2a3b4c5d6")


class PilotStore:
    def __init__(self, store: Store, encoders: Encoders) -> None:
        self.store = store
        self.encoders = encoders
        # headers and marks are filtered and counted, never searched by meaning; the queue and
        # the idle sweep filter on ``status``, the outcome report counts marks by day and rating
        ensure_records(store, SESSIONS, encoders.dense.dim, ("tenant", "session_id", "status"))
        ensure_records(
            store, FEEDBACK, encoders.dense.dim, ("tenant", "session_id", "status", "day", "rating")
        )
        # stores made before these were indexed
        store.add_keyword_index(SESSIONS, "status")
        for key in ("day", "rating"):
            store.add_keyword_index(FEEDBACK, key)

    def _point(self, key: str, text: str, payload: Mapping[str, object]) -> PointData:
        vector = self.encoders.dense.encode([text or "session"])[0].dense  # cached: "session"
        return PointData(id=str(uuid.uuid5(_NAMESPACE, key)), dense=vector, payload=dict(payload))

    def _save(self, header: SessionHeader) -> SessionHeader:
        self.store.upsert(
            SESSIONS, [self._point(f"{header['tenant']}/{header['session_id']}", "session", header)]
        )
        return header

    def create_session(
        self, tenant: str, session_id: str, customer_id: str, owner: str, slots: dict[str, str]
    ) -> SessionHeader:
        """``owner`` identifies the keys that may use the session (same tenant, enforced slots
        and trust); any other key gets 404."""
        now = time.time()
        return self._save(
            self._revised(
                {
                    "session_id": session_id,
                    "tenant": tenant,
                    "customer_id": customer_id,
                    "owner": owner,
                    "slots": slots,
                    "created": now,
                    "status": Status.OPEN,
                    # nothing to remember yet: the first message starts a spell (``reopen``)
                    "memory_written_at": now,
                },
                {},
            )
        )

    def drop_handoff_flags(self) -> int:
        """Headers written before ``status`` was the one record of a hand-off also carry a
        ``handoff`` flag: each gets its status (from the flag where it had none) and loses the
        flag. Run at start; each write a compare-and-set, so a header another worker wrote
        meanwhile keeps that write and is migrated at the next start. How many were."""
        migrated = 0
        # three fields of every header are read: embedded Qdrant cannot filter on a boolean
        # (it matches 0 and 1), and a start reads a page at a time, whatever the number
        keys = ("tenant", "session_id", "handoff")
        for record in self.store.scroll(SESSIONS, fields=keys):
            if "handoff" not in record.payload:
                continue
            header = self.session(record.payload["tenant"], record.payload["session_id"])
            if header is None:
                continue
            new = revised(header, {})  # read in this version's format: status, no flag
            key = f"{header['tenant']}/{header['session_id']}"
            self.store.update_if(SESSIONS, self._point(key, "session", new), expected(header))
            migrated += 1
        return migrated

    def session(self, tenant: str, session_id: str) -> SessionHeader | None:
        """The tenant's session header (in this version's format: ``current_format``)."""
        found = list(
            self.store.scroll(
                SESSIONS, AllOf((Match("tenant", (tenant,)), Match("session_id", (session_id,))))
            )
        )
        return self._header(found[0].payload) if found else None

    @staticmethod
    def _header(payload: Mapping[str, object]) -> SessionHeader:
        """A stored header, parsed (:class:`service.domain.records.BrokenRecord` naming it when
        it does not fit) and read in this version's format (``current_format``)."""
        name = f"{SESSIONS} {payload.get('tenant')}/{payload.get('session_id')}"
        return current_format(parsed(SESSION, payload, name))

    @staticmethod
    def _mark(payload: Mapping[str, object]) -> StoredMark:
        name = (
            f"{FEEDBACK} {payload.get('tenant')}/{payload.get('session_id')}/{payload.get('turn_index')}"
        )
        return parsed(MARK, payload, name)

    @staticmethod
    def _revised(header: SessionHeader, changes: SessionFields) -> SessionHeader:
        """``header`` with ``changes`` and a new revision (:func:`storage.qdrant.revisions.revised`)."""
        return parsed(
            SESSION, revised(header, changes), f"{SESSIONS} {header['tenant']}/{header['session_id']}"
        )

    def apply(
        self,
        tenant: str,
        session_id: str,
        verb: Verb,
        role: Role,
        actor: str = "",
        fields: Callable[[SessionHeader, SessionFields], SessionFields] | None = None,
    ) -> SessionHeader | None:
        """Apply one move of :mod:`service.domain.session_state` as a compare-and-set on the
        session's revision: the header as written (None for an unknown session), or
        :class:`SessionConflict` when the move does not apply to the session as it is now.
        ``fields(header, changes)`` adds fields that depend on what the move changes. A
        writer that lost a race re-reads and tries again."""
        for _ in range(MAX_TRIES):
            header = self.session(tenant, session_id)
            if header is None:
                return None
            changes = move(header, verb, role, actor)
            changes.update(fields(header, changes) if fields else {})
            if not changes:
                return header
            written = self._compare_and_set(header, changes)
            if written is not None:
                return written
        raise SessionConflict("busy", "this conversation is changing now: try again")

    def _compare_and_set(self, header: SessionHeader, changes: SessionFields) -> SessionHeader | None:
        """Write ``header`` with ``changes`` if nobody wrote it since it was read; the header
        written, or None when another writer came first."""
        new = self._revised(header, changes)
        key = f"{header['tenant']}/{header['session_id']}"
        self.store.update_if(SESSIONS, self._point(key, "session", new), expected(header))
        return new if landed(self.session(header["tenant"], header["session_id"]), new) else None

    def mark_handoff(
        self, tenant: str, session_id: str, reason: str, role: Role = "customer"
    ) -> SessionHeader | None:
        """Hand the session to people (once: a second hand-off keeps the first time and
        reason); :class:`SessionConflict` once it is resolved."""

        def first_time(_: SessionHeader, changes: SessionFields) -> SessionFields:
            return {"handoff_reason": reason, "handoff_at": time.time()} if changes else {}

        return self.apply(tenant, session_id, "hand_off", role, fields=first_time)

    def take(self, tenant: str, session_id: str, agent: str, role: Role) -> SessionHeader | None:
        """Give the conversation to ``agent`` (an agent takes it for themselves; an admin may
        reassign it to anyone); a conversation still open is handed off by it."""

        def taken(header: SessionHeader, changes: SessionFields) -> SessionFields:
            reason: SessionFields = (
                {}
                if header.get("handoff_at")
                else {"handoff_reason": TAKEN_OVER, "handoff_at": time.time()}
            )
            return {**reason, "taken_at": time.time()} if header.get("taken_by") != agent else {}

        return self.apply(tenant, session_id, "take", role, agent, taken)

    def reopen(
        self, tenant: str, session_id: str, verb: Verb, role: Role, actor: str = ""
    ) -> SessionHeader | None:
        """A message to a session whose memory was written starts a new spell: the idle sweep
        will remember it again (one header write per spell, none per message).
        :class:`SessionConflict` when ``verb`` does not apply (e.g. the session is resolved)."""

        def new_spell(header: SessionHeader, _: SessionFields) -> SessionFields:
            return {"memory_written_at": None} if header.get("memory_written_at") else {}

        return self.apply(tenant, session_id, verb, role, actor, new_spell)

    def remembered(self, tenant: str, session_id: str, when: float) -> SessionHeader | None:
        """The idle sweep wrote the session's memory (a conflict if it was resolved since)."""
        return self.apply(
            tenant, session_id, "remember", "sweep", fields=lambda _h, _c: {"memory_written_at": when}
        )

    def resolve(
        self,
        tenant: str,
        session_id: str,
        note: str,
        by: str,
        role: Role = "agent",
        replied: bool = True,
    ) -> SessionHeader | None:
        """Close the session (once: a second resolve is a conflict); the caller writes its
        long-term memory after this. ``replied``: a person replied in it; without a reply it
        is closed, not resolved (``closed_without_reply``: its customer is not told it was)."""
        now = time.time()
        return self.apply(
            tenant,
            session_id,
            "resolve",
            role,
            by,
            lambda _h, _c: {
                "resolution": note,
                "resolved_by": by,
                "resolved_at": now,
                "memory_written_at": now,
                **({} if replied else {"closed_without_reply": True}),
            },
        )

    def leave(self, tenant: str, session_id: str, replied: bool) -> SessionHeader | None:
        """The customer leaves a conversation that waits for a person (they start another):
        the hand-off is closed as left by them (``left_at``; ``closed_without_reply`` when no
        person had replied), so the queue no longer shows it. The caller writes its long-term
        memory after this."""
        now = time.time()
        return self.apply(
            tenant,
            session_id,
            "leave",
            "customer",
            fields=lambda _h, _c: {
                "left_at": now,
                "memory_written_at": now,
                **({} if replied else {"closed_without_reply": True}),
            },
        )

    def sessions(self, tenant: str) -> list[SessionHeader]:
        """Every session header of the tenant, oldest first."""
        found = self.store.scroll(SESSIONS, Match("tenant", (tenant,)))
        return sorted((self._header(r.payload) for r in found), key=lambda h: h["created"])

    def session_ids(self, tenant: str) -> Iterator[str]:
        """Every session id of the tenant, in the store's order, read a page at a time (the
        id alone: the caller holds what it keeps, not every header)."""
        for record in self.store.scroll(SESSIONS, Match("tenant", (tenant,)), fields=("session_id",)):
            yield record.payload["session_id"]

    def tenants(self) -> list[str]:
        """The tenants that hold sessions ("" for sessions of keys without one)."""
        return sorted({r.payload["tenant"] for r in self.store.scroll(SESSIONS, fields=("tenant",))})

    def handoffs(self, tenant: str) -> list[SessionHeader]:
        """Sessions waiting for a person: handed off, not resolved, oldest hand-off first. Only
        those are read (the status is indexed): a poll costs the same however many sessions
        the tenant has closed."""
        found = self.store.scroll(
            SESSIONS, AllOf((Match("tenant", (tenant,)), self._with_status(Status.HANDOFF)))
        )
        waiting = (
            h for h in map(self._header, (r.payload for r in found)) if status_of(h) is Status.HANDOFF
        )
        return sorted(waiting, key=lambda h: h.get("handoff_at", h["created"]))

    @staticmethod
    def _with_status(*statuses: Status) -> Condition:
        """Headers stored with one of ``statuses``, and those in the old format (no status: a
        restored backup, a worker of the version before), whose flag the caller reads."""
        return AnyOf((Match("status", tuple(s.value for s in statuses)), Missing("status")))

    def unremembered(self) -> list[SessionHeader]:
        """Every tenant's sessions that no person resolved and that had a message since their
        memory was written (the idle sweep's candidates). A new session counts as remembered
        until its first message (``create_session``), so sessions opened and never written
        to are never read."""
        candidates = AllOf(
            (self._with_status(Status.OPEN, Status.HANDOFF), Missing("memory_written_at"))
        )
        headers = (self._header(r.payload) for r in self.store.scroll(SESSIONS, candidates))
        return [h for h in headers if status_of(h) is not Status.RESOLVED]

    def add_feedback(
        self, tenant: str, session_id: str, turn_index: int, rating: Literal["up", "down"], comment: str
    ) -> StoredMark:
        now = time.time()
        record: StoredMark = {
            "tenant": tenant,
            "session_id": session_id,
            "turn_index": turn_index,
            "rating": rating,
            "comment": comment,
            "ts": now,
            "day": day_of(now),
        }
        self.store.upsert(
            FEEDBACK, [self._point(f"{tenant}/{session_id}/{turn_index}", comment, record)]
        )
        return record

    def feedback_counts(self, tenant: str, day: str) -> tuple[int, int]:
        """(helpful, all) marks given on ``day`` (UTC) in the tenant."""

        def count(ratings: tuple[str, ...]) -> int:
            where = AllOf((Match("tenant", (tenant,)), Match("day", (day,)), Match("rating", ratings)))
            return self.store.count(FEEDBACK, where)

        return count(("up",)), count(("up", "down"))

    def date_feedback(self) -> int:
        """Give the marks stored before marks had a ``day`` theirs (counted by day since)."""
        undated = [r.payload for r in self.store.scroll(FEEDBACK, Missing("day"))]
        for mark in undated:
            mark["day"] = day_of(float(mark.get("ts", 0.0)))
            key = f"{mark['tenant']}/{mark['session_id']}/{mark['turn_index']}"
            self.store.upsert(FEEDBACK, [self._point(key, mark.get("comment", ""), mark)])
        return len(undated)

    def all_feedback(self, tenant: str) -> list[StoredMark]:
        found = self.store.scroll(FEEDBACK, Match("tenant", (tenant,)))
        return [self._mark(r.payload) for r in found]

    def feedback(self, tenant: str, session_id: str) -> list[StoredMark]:
        records = self.store.scroll(
            FEEDBACK, AllOf((Match("tenant", (tenant,)), Match("session_id", (session_id,))))
        )
        return sorted((self._mark(r.payload) for r in records), key=lambda p: p["turn_index"])

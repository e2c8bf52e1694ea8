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
    pilot.resolve("acme", session_id, note="refund sent", by="agent-ana")

A session's ``status`` is ``open``, ``handoff`` (waiting for a person) or ``resolved``;
``memory_written_at`` says when its long-term memory was last written (on resolution, or by the
idle sweep); the first message after that clears it (``reopen``), so the sweep reads the turns
of sessions active since their memory was written, not of every session ever opened.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Literal

from storage.kb.embeddings import Encoders
from storage.qdrant.store import AllOf, CollectionSpec, Match, PointData, Store

SESSIONS, FEEDBACK = "pilot_sessions", "pilot_feedback"
_NAMESPACE = uuid.UUID("7a1d2c3e-5b6f-4a8b-9c0d-e1f2a3b4c5d6")


class PilotStore:
    def __init__(self, store: Store, encoders: Encoders) -> None:
        self.store = store
        self.encoders = encoders
        spec = CollectionSpec(dense_dim=encoders.dense.dim, sparse=False, tokens=False,
                              keyword_indexes=("tenant", "session_id"))
        for name in (SESSIONS, FEEDBACK):
            if not store.has_collection(name):
                store.create_collection(name, spec)

    def _point(self, key: str, text: str, payload: dict[str, Any]) -> PointData:
        vector = self.encoders.dense.encode([text or "session"])[0].dense  # cached: "session"
        return PointData(id=str(uuid.uuid5(_NAMESPACE, key)), dense=vector, payload=payload)

    def _save(self, header: dict[str, Any]) -> dict[str, Any]:
        self.store.upsert(SESSIONS, [self._point(f"{header['tenant']}/{header['session_id']}",
                                                 "session", header)])
        return header

    def update(self, tenant: str, session_id: str, **changes: Any) -> dict[str, Any] | None:
        """The session's header with ``changes`` applied and stored; None when unknown."""
        header = self.session(tenant, session_id)
        return None if header is None else self._save({**header, **changes})

    def create_session(self, tenant: str, session_id: str, customer_id: str, owner: str,
                       slots: dict[str, str]) -> dict[str, Any]:
        """``owner`` identifies the keys that may use the session (same tenant, enforced slots
        and trust); any other key gets 404."""
        now = time.time()
        return self._save({"session_id": session_id, "tenant": tenant, "customer_id": customer_id,
                           "owner": owner, "slots": slots, "created": now, "handoff": False,
                           "status": "open", "memory_written_at": None})

    def session(self, tenant: str, session_id: str) -> dict[str, Any] | None:
        found = list(self.store.scroll(SESSIONS, AllOf((Match("tenant", (tenant,)),
                                                        Match("session_id", (session_id,))))))
        return found[0].payload if found else None

    def mark_handoff(self, tenant: str, session_id: str, reason: str) -> dict[str, Any] | None:
        """Hand the session to people (once: a second hand-off keeps the first time and reason)."""
        header = self.session(tenant, session_id)
        if header is None or header.get("handoff"):
            return header
        return self._save({**header, "handoff": True, "status": "handoff",
                           "handoff_reason": reason, "handoff_at": time.time()})

    def reopen(self, header: dict[str, Any]) -> dict[str, Any]:
        """A message to a session whose memory was written starts a new spell: the idle sweep
        will remember it again (one header write per spell, none per message)."""
        if not header.get("memory_written_at"):
            return header
        return self._save({**header, "memory_written_at": None})

    def resolve(self, tenant: str, session_id: str, note: str, by: str
                ) -> dict[str, Any] | None:
        """Close the session; its long-term memory is written by the caller, now."""
        now = time.time()
        return self.update(tenant, session_id, status="resolved", resolution=note,
                           resolved_by=by, resolved_at=now, memory_written_at=now)

    def sessions(self, tenant: str) -> list[dict[str, Any]]:
        """Every session header of the tenant, oldest first."""
        found = self.store.scroll(SESSIONS, Match("tenant", (tenant,)))
        return sorted((r.payload for r in found), key=lambda h: h["created"])

    def tenants(self) -> list[str]:
        """The tenants that hold sessions ("" for sessions of keys without one)."""
        return sorted({r.payload["tenant"] for r in self.store.scroll(SESSIONS)})

    def handoffs(self, tenant: str) -> list[dict[str, Any]]:
        """Sessions waiting for a person: handed off, not resolved, oldest hand-off first."""
        waiting = [h for h in self.sessions(tenant) if h.get("status") == "handoff"]
        return sorted(waiting, key=lambda h: h.get("handoff_at", h["created"]))

    def unremembered(self) -> list[dict[str, Any]]:
        """Every tenant's sessions that no person resolved and that had a message since their
        memory was written, or never had it written (the idle sweep's candidates)."""
        return [r.payload for r in self.store.scroll(SESSIONS)
                if r.payload.get("status") != "resolved"
                and not r.payload.get("memory_written_at")]

    def add_feedback(self, tenant: str, session_id: str, turn_index: int,
                     rating: Literal["up", "down"], comment: str) -> dict[str, Any]:
        record = {"tenant": tenant, "session_id": session_id, "turn_index": turn_index,
                  "rating": rating, "comment": comment, "ts": time.time()}
        self.store.upsert(FEEDBACK, [self._point(f"{tenant}/{session_id}/{turn_index}",
                                                 comment, record)])
        return record

    def all_feedback(self, tenant: str) -> list[dict[str, Any]]:
        return [r.payload for r in self.store.scroll(FEEDBACK, Match("tenant", (tenant,)))]

    def feedback(self, tenant: str, session_id: str) -> list[dict[str, Any]]:
        records = self.store.scroll(FEEDBACK, AllOf((Match("tenant", (tenant,)),
                                                     Match("session_id", (session_id,)))))
        return sorted((r.payload for r in records), key=lambda p: p["turn_index"])

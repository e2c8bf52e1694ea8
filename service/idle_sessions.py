"""Sessions nobody wrote to for ``pilot.idle_close_minutes`` are closed: their long-term memory
is written the way ``kickoff`` and a person's resolution write it, so a returning customer of
the pilot is remembered. A background task of the service runs the sweep every minute.

Usage::

    closed = close_idle_sessions(pilot, now=time.time())   # session ids whose memory was written
    task = asyncio.create_task(sweep_forever(pilot))
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from fastapi.concurrency import run_in_threadpool

from service.domain.records import SessionHeader
from service.domain.session_state import SessionConflict
from service.outcome_upkeep import keep_current
from storage.memory import Scope
from tasks.memory_context import close_session

if TYPE_CHECKING:
    from service.context import PilotContext

log = logging.getLogger(__name__)
SWEEP_EVERY_S = 60.0


def close_idle_sessions(pilot: PilotContext, now: float | None = None) -> list[str]:
    """Write the memory of every session idle since its last turn (once per quiet spell: a
    session written to again is remembered again); the ids of those remembered. Only the
    turns of sessions active since their memory was written are read (``PilotStore.reopen``)."""
    now = time.time() if now is None else now
    older_than = now - pilot.settings.pilot.idle_close_minutes * 60
    remembered = []
    for header in pilot.store.unremembered():
        scope = Scope(header["customer_id"], header["tenant"])
        turns = pilot.memory.session_turns(scope, header["session_id"])
        last = max((t.get("ts", 0.0) for t in turns), default=None)
        if last is None:  # never written to: nothing to remember, and no reason to look again
            if header.get("created", now) < older_than:  # until a first message reopens it
                mark_remembered(pilot, header, now)
            continue
        if last >= older_than:
            continue
        if close_session(pilot.memory, scope, header["session_id"]):
            remembered.append(header["session_id"])
        mark_remembered(pilot, header, now)
    return remembered


def mark_remembered(pilot: PilotContext, header: SessionHeader, now: float) -> None:
    """Record the sweep's write; a session resolved meanwhile keeps its resolution."""
    try:
        pilot.store.remembered(header["tenant"], header["session_id"], now)
    except SessionConflict:
        log.info("session %s was resolved while the sweep remembered it", header["session_id"])


async def sweep_forever(pilot: PilotContext, every_s: float = SWEEP_EVERY_S) -> None:
    """Every minute: idle sessions remembered, conversations' outcomes kept current, the
    records of spent customer tokens that have expired anyway forgotten, and the rate
    counters whose window ended."""
    jobs = (
        (close_idle_sessions, "closing idle sessions"),
        (current, "outcomes"),
        (forget_spent_tokens, "forgetting spent tokens"),
        (forget_expired_counters, "forgetting expired rate counters"),
    )
    while True:
        await asyncio.sleep(every_s)
        for job, what in jobs:
            try:
                await run_in_threadpool(job, pilot)
            except Exception:  # the sweep retries next minute; the service keeps serving
                log.exception("%s failed", what)


def current(pilot: PilotContext) -> None:
    keep_current(pilot, time.time())


def forget_spent_tokens(pilot: PilotContext) -> None:
    if pilot.spent_tokens is not None:
        pilot.spent_tokens.forget_expired()


def forget_expired_counters(pilot: PilotContext) -> None:
    pilot.limits.forget_expired(time.time())

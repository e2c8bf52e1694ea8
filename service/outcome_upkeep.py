"""Keeping the stored outcomes current while the pilot runs: a conversation something
happened to is marked (``touched``) and refreshed at the next ``flush`` (the minute sweep's
``keep_current``, or a report read); ``catch_up`` runs the start's migrations and labels
conversations stored before outcomes were.

Usage::

    touched(pilot, "acme", session_id)     # in the request that changed the conversation
    flush(pilot, time.time())              # -> how many conversations were refreshed
    keep_current(pilot, time.time())       # the minute sweep
    catch_up(pilot, time.time())           # at start
    stop_cleanly(pilot, time.time())       # at a graceful stop
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from service.context import PilotContext

HANDOFF_FLAGS, FEEDBACK_DAYS = "handoff_flags_dropped", "feedback_dated"
OUTCOMES_LABELLED = "outcomes_labelled"  # every conversation stored had its outcome


def touched(pilot: PilotContext, tenant: str, session_id: str) -> None:
    """Something happened to the conversation: its outcome is refreshed at the next flush
    (the minute sweep, or a report read), not in the request that changed it; the tenant's
    kept gap reports are forgotten (the next one counts it, not a minute later)."""
    pilot.dirty.add((tenant, session_id))
    pilot.gap_reports.forget(tenant)


def flush(pilot: PilotContext, now: float) -> int:
    """Refresh the outcomes of the conversations touched since the last flush."""
    taken = list(pilot.dirty)
    pilot.dirty.difference_update(taken)
    by_tenant: dict[str, list[str]] = {}
    for tenant, session_id in taken:
        by_tenant.setdefault(tenant, []).append(session_id)
    settings = pilot.settings.pilot
    for tenant, sessions in by_tenant.items():
        pilot.outcomes.refresh(pilot.store, pilot.memory, tenant, sessions, now, settings)
    return len(taken)


def keep_current(pilot: PilotContext, now: float) -> None:
    """The minute sweep's part: touched conversations refreshed, quiet pending ones labelled."""
    flush(pilot, now)
    pilot.outcomes.relabel_quiet(pilot.store, pilot.memory, now, pilot.settings.pilot)


def catch_up(pilot: PilotContext, now: float) -> None:
    """At start: headers that still carry the old hand-off flag lose it, marks stored before
    they had a day get one; conversations without a stored outcome are labelled. A migration
    that finds nothing left is marked done and not run again; the look for conversations
    without an outcome runs once, then only where a run did not stop cleanly (``stop_cleanly``
    leaves none behind)."""
    marks = pilot.upkeep
    if not marks.done(HANDOFF_FLAGS) and pilot.store.drop_handoff_flags() == 0:
        marks.mark(HANDOFF_FLAGS)
    if not marks.done(FEEDBACK_DAYS) and pilot.store.date_feedback() == 0:
        marks.mark(FEEDBACK_DAYS)
    if pilot.others_left or not marks.done(OUTCOMES_LABELLED):
        pilot.outcomes.backfill(pilot.store, pilot.memory, now, pilot.settings.pilot)
        marks.mark(OUTCOMES_LABELLED)
    pilot.caught_up = True


def stop_cleanly(pilot: PilotContext, now: float) -> None:
    """At a graceful stop: every touched conversation's outcome refreshed; the run's mark
    taken away when the start's ``catch_up`` had finished too (nothing left unlabelled)."""
    flush(pilot, now)
    if pilot.caught_up:
        pilot.upkeep.end_run(pilot.run)

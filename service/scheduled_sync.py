"""The knowledge base re-synced while the pilot serves: every ``pilot.sync_every_minutes`` the
service runs ``sources:`` (``storage/kb/sync.py``, as ``main.py sync`` does) in a worker thread;
answers go on meanwhile, and a changed page's new chunks are written before its old ones go,
so a turn reads the old page or the new one, never half of one. Each source's counts are
logged; a source that fails is logged and retried at the next round.

Usage (in the service's lifespan)::

    task = asyncio.create_task(sync_forever(pilot))
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import asdict
from typing import TYPE_CHECKING

from starlette.concurrency import run_in_threadpool

from service.metrics import record_sync
from storage.kb.named_values import advice, unlisted
from storage.kb.sync import SyncReport, sync_sources

if TYPE_CHECKING:
    from service.context import PilotContext

log = logging.getLogger(__name__)


def sync_once(pilot: PilotContext) -> list[SyncReport]:
    """One round over every configured source, logged."""
    kb = pilot.runtime.knowledge_base()
    reports = sync_sources(kb, pilot.settings.sources)
    for report in reports:
        level = logging.INFO if report.complete else logging.WARNING
        log.log(level, "sync %s", {**asdict(report), "complete": report.complete})
        record_sync(report)
    # values the pages now name beyond what this run accepts: known at the next start
    for line in advice(unlisted(pilot.runtime.settings.slots, kb), pilot.runtime.settings.slots):
        log.warning("sync: %s (the service accepts them from its next start)", line)
    return reports


async def sync_forever(pilot: PilotContext) -> None:
    """Every ``pilot.sync_every_minutes`` (0, or no sources: never)."""
    every_s = pilot.settings.pilot.sync_every_minutes * 60
    if every_s <= 0 or not pilot.settings.sources:
        return
    while True:
        await asyncio.sleep(every_s)
        try:
            await run_in_threadpool(sync_once, pilot)
        except Exception:  # the next round retries; the service keeps answering
            log.exception("syncing the knowledge base failed")

"""The knowledge-gap report of one tenant, from what the pilot stored: every customer's refused
and handed-off turns, and the answers rated "not helpful" (``tasks/gap_report.py`` groups them).
Served at ``GET /v1/reports/gaps`` (admin keys) and printed by ``main.py report gaps``.

Usage::

    report = tenant_gap_report(memory, pilot_store, retriever, "acme", since=0.0,
                               slots={"access_level": "internal"})
"""

from __future__ import annotations

from typing import Any

from tasks.gap_report import GapReport, cluster_gaps, gap_questions


def tenant_gap_report(memory: Any, pilot_store: Any, retriever: Any, tenant: str, since: float,
                      slots: dict[str, str]) -> GapReport:
    """``slots``: the enforced slots the nearest article is searched under (the caller's)."""
    turns = memory.tenant_turns(tenant, since)
    feedback = [f for f in pilot_store.all_feedback(tenant) if f.get("ts", 0.0) >= since]
    search_slots = {**slots, "tenant": tenant} if tenant else dict(slots)

    def nearest(text: str) -> tuple[str, str, float] | None:
        found = retriever.search_queries([text], search_slots, top_k=1, threshold=0.0,
                                         strict=False)
        if not found.results:
            return None
        best = found.results[0]
        return best.metadata["source_id"], best.metadata.get("title", ""), best.score

    return cluster_gaps(gap_questions(turns, feedback), memory.encoders.dense.encode, nearest)

"""Sync the knowledge base from its configured sources (``sources:`` in assistant.yaml).

Each source is read, its new and changed documents written (an unchanged one is skipped by
its content hash, an unchanged page by its 304), and, when the whole source was read, what it
no longer holds is removed. A source that was not read whole (a page failed, a file is
missing) removes nothing: what was ingested before stays. A changed document's new chunks are
written before its old ones are removed, so a turn sees the old page or the new one, never
half of one.

Usage::

    for report in sync_sources(kb, settings.sources):
        report.source, report.added, report.changed, report.unchanged, report.removed
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from config.sources import SourceSettings
from storage.kb.documents import Document, DocumentError
from storage.kb.ingest import IngestReport, ingest_documents, ingest_paths
from storage.kb.knowledge_base import KnowledgeBase
from storage.kb.sources.site import SiteError, fetch_site
from storage.kb.sources.urls import normal_url, same_site
from storage.kb.sources.zendesk import export_origin, read_export


@dataclass
class SyncReport:
    """What one source's sync did."""

    source: str
    kind: str
    added: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    requests: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)  # (what, why): not complete
    skipped: list[tuple[str, str]] = field(default_factory=list)  # bad documents, the rest landed
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def complete(self) -> bool:
        return not self.failures


def _counted(report: SyncReport, ingested: IngestReport) -> None:
    report.added += ingested.documents - ingested.replaced
    report.changed += ingested.replaced
    report.unchanged += ingested.unchanged
    report.removed += ingested.pruned
    report.skipped.extend(ingested.skipped)
    report.warnings.extend(ingested.warnings)


def _prune(kb: KnowledgeBase, stored: Iterable[str], seen: set[str]) -> int:
    """Remove the stored documents of a source that its complete read did not see."""
    gone = [source_id for source_id in stored if source_id not in seen]
    for source_id in gone:
        kb.remove(source_id)
    return len(gone)


def _with_warnings(documents: list[Document], report: IngestReport) -> Iterator[Document]:
    for document in documents:
        report.warnings.extend(document.warnings)
        yield document


def sync_folder(kb: KnowledgeBase, source: SourceSettings, report: SyncReport) -> None:
    path = Path(source.location)
    if not path.exists():
        report.failures.append((str(path), "no such file or folder"))
        return
    _counted(report, ingest_paths(kb, [path], prune=source.prune))


def site_key(source: SourceSettings) -> str:
    """Whose pages: a site source's normalised location (stamped on what it stores)."""
    return normal_url(source.location)


def sync_site(kb: KnowledgeBase, source: SourceSettings, report: SyncReport) -> None:
    """Fetch the site and write what changed; a complete fetch prunes the pages this source
    stored that it no longer finds, never another source's on the same site. A page stored
    before sources stamped their pages is fetched whole once (no validators), so that it is
    written again with its source's stamp; until then no source prunes it."""
    mine = site_key(source)
    on_site = {
        source_id: record.payload
        for source_id, record in kb.stored_sources().items()
        if same_site(source_id, source.location)
    }
    known = {
        url: {k: str(payload[k]) for k in ("etag", "last_modified") if payload.get(k)}
        for url, payload in on_site.items()
        if payload.get("sync_source")
    }
    try:
        fetched = fetch_site(source, known)
    except SiteError as exc:
        report.failures.append((source.location, str(exc)))
        return
    for document in fetched.documents:
        document.sync_source = mine
    report.requests = fetched.requests
    report.failures.extend(fetched.failures)
    ingested = IngestReport()
    ingest_documents(kb, _with_warnings(fetched.documents, ingested), ingested)
    ingested.unchanged += len(fetched.unchanged)
    _counted(report, ingested)
    if fetched.complete and source.prune:
        stored = [url for url, payload in on_site.items() if payload.get("sync_source") == mine]
        report.removed += _prune(kb, stored, fetched.seen)


def sync_zendesk(kb: KnowledgeBase, source: SourceSettings, report: SyncReport) -> None:
    path = Path(source.location)
    try:
        documents, skipped = read_export(path, source)
    except DocumentError as exc:
        report.failures.append((str(path), str(exc)))
        return
    ingested = IngestReport(skipped=skipped)
    seen = ingest_documents(kb, _with_warnings(documents, ingested), ingested)
    _counted(report, ingested)
    if source.prune:
        prefix = export_origin(path)
        mine = [
            source_id
            for source_id, record in kb.stored_sources().items()
            if str(record.payload.get("origin", "")).startswith(prefix)
        ]
        report.removed += _prune(kb, mine, seen)


SYNCS = {"folder": sync_folder, "site": sync_site, "zendesk": sync_zendesk}


def sync_source(kb: KnowledgeBase, source: SourceSettings) -> SyncReport:
    """Sync one source into ``kb``."""
    started = time.perf_counter()
    report = SyncReport(source=source.label, kind=source.kind)
    kb.ensure_collection()
    SYNCS[source.kind](kb, source, report)
    report.seconds = round(time.perf_counter() - started, 2)
    return report


def sync_sources(kb: KnowledgeBase, sources: Iterable[SourceSettings]) -> list[SyncReport]:
    """Sync every source, in order; one that fails does not stop the others."""
    return [sync_source(kb, source) for source in sources]

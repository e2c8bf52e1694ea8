"""Ingest files into the knowledge base: idempotent, batch-tolerant, measured.

* an unchanged document (same content hash) is skipped;
* a changed one has its new chunks upserted, then its stale chunks removed;
* ``prune`` removes documents whose file, under one of the given folders, is gone;
* a bad file is reported and skipped; the rest of the batch still lands.

Usage::

    report = ingest_paths(kb, [Path("examples/kb")], prune=True)
    report.files, report.chunks, report.skipped
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from storage.kb.chunking import Chunk, chunk_text
from storage.kb.documents import Document, DocumentError, count_documents, discover, read_file
from storage.kb.knowledge_base import KnowledgeBase

BATCH_DOCUMENTS = 64
ProgressCallback = Callable[[int, int], None]


@dataclass
class IngestReport:
    files: int = 0
    documents: int = 0
    chunks: int = 0
    unchanged: int = 0
    replaced: int = 0
    pruned: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(
        default_factory=lambda: {"read+chunk": 0.0, "encode": 0.0, "write": 0.0}
    )


def _documents(files: list[tuple[Path, Path]], report: IngestReport) -> Iterator[Document]:
    for path, root in files:
        report.files += 1
        try:
            for document in read_file(path, root):
                report.warnings.extend(document.warnings)
                yield document
        except DocumentError as exc:
            report.skipped.append((str(path), str(exc)))


def ingest_documents(
    kb: KnowledgeBase,
    documents: Iterable[Document],
    report: IngestReport,
    progress: ProgressCallback | None = None,
    total: int = 0,
) -> set[str]:
    """Write documents in batches; return the source_ids seen (for pruning)."""
    chunking = kb.settings.chunking
    stored = kb.stored_sources()
    seen: dict[str, str] = {}
    batch: list[tuple[Document, list[Chunk]]] = []
    replaced: dict[str, str] = {}
    done = 0

    def flush() -> None:
        if not batch:
            return
        started = time.perf_counter()
        points = kb.build_points(batch)
        report.stage_seconds["encode"] += time.perf_counter() - started
        started = time.perf_counter()
        kb.write(points, replaced)
        report.stage_seconds["write"] += time.perf_counter() - started
        report.chunks += len(points)
        report.documents += len(batch)
        batch.clear()
        replaced.clear()

    started = time.perf_counter()
    for doc in documents:
        done += 1
        if doc.source_id in seen:
            report.skipped.append(
                (doc.origin, f"duplicate id {doc.source_id!r}, already used by {seen[doc.source_id]}")
            )
            continue
        seen[doc.source_id] = doc.origin
        previous = stored.get(doc.source_id)
        same = previous is not None and previous.payload.get("content_hash") == doc.content_hash
        if previous is not None and same and _claimed(previous.payload, doc):
            report.unchanged += 1
        else:
            chunks = chunk_text(doc.text, chunking.max_tokens, chunking.overlap_sentences)
            if not chunks:
                report.skipped.append((doc.origin, "no text to index"))
                continue
            if previous is not None:
                if not same:  # the same text is written over its own chunks: nothing to drop
                    replaced[doc.source_id] = previous.payload.get("content_hash", "")
                report.replaced += 1
            batch.append((doc, chunks))
        if len(batch) >= BATCH_DOCUMENTS:
            report.stage_seconds["read+chunk"] += time.perf_counter() - started
            flush()
            started = time.perf_counter()
        if progress:
            progress(done, total)
    report.stage_seconds["read+chunk"] += time.perf_counter() - started
    flush()
    return set(seen)


def _claimed(stored: dict[str, Any], doc: Document) -> bool:
    """Whether a stored document needs no source stamp from ``doc``: ``doc`` comes from no
    sync source, or the stored one has a source already (a page stored before sources
    stamped their pages is written once more, with its source)."""
    return doc.sync_source is None or bool(stored.get("sync_source"))


def ingest_paths(
    kb: KnowledgeBase,
    paths: list[Path],
    recreate: bool = False,
    prune: bool = False,
    progress: ProgressCallback | None = None,
) -> IngestReport:
    """Ingest files and folders into ``kb``; see the module docstring for the rules."""
    started = time.perf_counter()
    report = IngestReport()
    missing = [p for p in paths if not p.exists()]
    for path in missing:
        report.skipped.append((str(path), "no such file or folder"))
    files = discover([p for p in paths if p.exists()])
    kb.ensure_collection(recreate=recreate)
    total = count_documents(files)
    seen = ingest_documents(kb, _documents(files, report), report, progress, total=total)
    if prune:
        report.pruned = prune_missing(kb, [p for p in paths if p.is_dir()], seen)
    report.seconds = time.perf_counter() - started
    return report


def prune_missing(kb: KnowledgeBase, folders: list[Path], seen: set[str]) -> int:
    """Remove stored documents whose origin lies under ``folders`` but were not seen now."""
    roots = [str(f.resolve()) for f in folders]
    removed = 0
    for source_id, record in kb.stored_sources().items():
        origin = str(Path(record.payload.get("origin", "")).resolve())
        if source_id not in seen and any(origin.startswith(root + "/") for root in roots):
            kb.remove(source_id)
            removed += 1
    return removed

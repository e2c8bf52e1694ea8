"""Syncing a help-center site: pages per second for a first sync and a re-sync, 2 cores.

A generated site of ``--pages`` pages (examples/kb's pages, each copied with its own title and
one sentence of its own) is served on 127.0.0.1 (``tests/help_site.py``: navigation, cookie
banner, footer, sitemap, robots.txt, ETags). Three syncs into an empty embedded knowledge
base: the first (every page fetched, extracted, chunked and encoded), a re-sync with nothing
changed (every page answered 304), and a re-sync after a tenth of the pages changed.

    python -m bench.site_sync [--pages 500] [--concurrency 4]

Writes bench/results/site_sync.{md,json}.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench._common import ROOT, table, write_results
from config.settings import load_settings
from config.sources import SourceSettings
from storage.kb.knowledge_base import KnowledgeBase
from storage.kb.sync import SyncReport, sync_source
from tests.help_site import HelpSite

FIGURES = ("pages", "added", "changed", "unchanged", "requests", "seconds", "pages_per_s")


def generated(pages: int) -> HelpSite:
    """``pages`` pages made from examples/kb's, each with its own title and sentence."""
    base = HelpSite.from_folder(ROOT / "examples" / "kb")
    originals = [(p, t, text) for p, (t, text) in base.pages.items() if "/internal/" not in p]
    base.server.server_close()
    made: dict[str, tuple[str, str]] = {}
    for number in range(pages):
        path, title, text = originals[number % len(originals)]
        copy = f"{path[:-5]}-{number:04d}.html"
        made[copy] = (f"{title} ({number})", f"{text}\n\nThis copy is page number {number} of the site.")
    return HelpSite(made)


def row(name: str, pages: int, report: SyncReport) -> dict[str, object]:
    return {
        "sync": name,
        "pages": pages,
        "added": report.added,
        "changed": report.changed,
        "unchanged": report.unchanged,
        "requests": report.requests,
        "seconds": report.seconds,
        "pages_per_s": round(pages / report.seconds, 1) if report.seconds else None,
        "complete": report.complete,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    settings = load_settings()
    rows = []
    with generated(args.pages) as site, tempfile.TemporaryDirectory() as work:
        kb = KnowledgeBase.open(settings, Path(work))
        source = SourceSettings(
            kind="site",
            location=site.url("/sitemap.xml"),
            concurrency=args.concurrency,
            requests_per_second=1000,
            max_pages=args.pages,
        )
        try:
            rows.append(row("first sync", args.pages, sync_source(kb, source)))
            rows.append(row("re-sync, nothing changed", args.pages, sync_source(kb, source)))
            for path in list(site.pages)[::10]:
                title, text = site.pages[path]
                site.pages[path] = (title, text + " Updated this week.")
            rows.append(row("re-sync, a tenth changed", args.pages, sync_source(kb, source)))
        finally:
            kb.close()
    lines = [
        "# Syncing a help-center site (generated, served on 127.0.0.1)",
        "",
        f"{args.pages} pages, {args.concurrency} requests at once, embedded store, 2 cores. "
        "Seconds include fetching, extraction (trafilatura), chunking, encoding and writing.",
        "",
        *table(("sync", *FIGURES), ((r["sync"], *(r[f] for f in FIGURES)) for r in rows)),
        "",
    ]
    write_results("site_sync", lines, {"pages": args.pages, "rows": rows})


if __name__ == "__main__":
    main()

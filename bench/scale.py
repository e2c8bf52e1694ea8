"""A turn at scale: a support pack's questions over its pages alone, then over its pages with
SciFact's 5,183 abstracts added as distractors, in one run. Each question is a new
conversation on the shipped configuration (the embedded defaults: no model call).

Figures per knowledge base: documents and chunks, turn p50 and p95 seconds (each turn's own
``duration_ms``), answered right, refused right, precision, and the answers citing a
distractor (a SciFact abstract: never right for a support question). The pack is the
doc2dial test pack by default: reported, never tuned on (``--pack`` takes the dev pack).

    python -m bench.scale [--pack ../shared/datasets/doc2dial-support]
                          [--distractors ../shared/datasets/scifact] [--limit N]

Ingest is incremental: a second run over the same ``--data-dir`` re-reads nothing unchanged.
Writes bench/results/scale.{md,json}.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from agents.build import build_runtime
from bench._common import ROOT, comparison_parser, table, write_results
from config.settings import load_settings
from evaluation.answer_sets import load_answer_set
from evaluation.answers import answer_set_settings, evaluate_answers, percentile
from storage.kb.ingest import ingest_paths
from storage.kb.knowledge_base import KnowledgeBase

SHARED = ROOT.parent / "shared" / "datasets"
FIGURES = ("answered_right", "refused_right", "precision", "wrong_source_answers")


def distractor_ids(corpus: Path) -> set[str]:
    """The ``_id`` of every abstract of a BEIR ``corpus.jsonl``."""
    with corpus.open(encoding="utf-8") as handle:
        return {str(json.loads(line)["_id"]) for line in handle if line.strip()}


def measure(pack: Path, corpus: Path | None, data_dir: Path, limit: int | None) -> dict[str, Any]:
    """Ingest the pack's pages (and the distractors), then ask its questions; the figures."""
    answer_set = load_answer_set(pack)
    name = answer_set.name + ("-with-distractors" if corpus else "")
    settings = answer_set_settings(load_settings(), name, data_dir)
    kb = KnowledgeBase.open(settings, data_dir)
    started = time.perf_counter()
    try:
        ingest_paths(kb, [answer_set.kb, *([corpus] if corpus else [])], prune=True)
        documents = len(kb.stored_sources())
        chunks = kb.store.count(kb.collection)
    finally:
        kb.close()
    ingest_s = time.perf_counter() - started
    runtime = build_runtime(settings, data_dir)
    try:
        evaluate_answers(runtime, answer_set, 1)  # models loaded, caches warm: not counted
        report = evaluate_answers(runtime, answer_set, limit)
    finally:
        runtime.close()
    foreign = distractor_ids(corpus) if corpus else set()
    rows = report.rows
    seconds = [r["seconds"] for r in rows]
    cited_distractor = [
        r["id"] for r in rows if r["verdict"] == "answered" and set(r["cited"]) & foreign
    ]
    return {
        "kb": f"{answer_set.name} + {corpus.parent.name}" if corpus else answer_set.name,
        "documents": documents,
        "chunks": chunks,
        "ingest_s": round(ingest_s, 1),
        "questions": len(rows),
        "p50_s": percentile(seconds, 0.5),
        "p95_s": percentile(seconds, 0.95),
        **{figure: report.summary[figure] for figure in FIGURES},
        "distractor_citations": len(cited_distractor),
        "distractor_cited_by": cited_distractor,
    }


def main() -> None:
    parser = comparison_parser(__doc__, ".supportcrew/bench-scale")
    parser.add_argument("--pack", type=Path, default=SHARED / "doc2dial-support")
    parser.add_argument("--distractors", type=Path, default=SHARED / "scifact")
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    corpus = args.distractors / "corpus.jsonl"
    rows = [
        measure(args.pack, None, args.data_dir, args.limit),
        measure(args.pack, corpus, args.data_dir, args.limit),
    ]
    columns = [
        "kb",
        "documents",
        "chunks",
        "questions",
        "p50_s",
        "p95_s",
        *FIGURES,
        "distractor_citations",
    ]
    lines = [
        "# A turn at scale: the pack's pages alone and beside SciFact's abstracts",
        "",
        f"Pack: `{args.pack.name}`; distractors: `{corpus}` (every abstract a page). Each "
        "question a new conversation, shipped defaults (no model call), one process on 2 "
        "shared cores; seconds are each turn's own `duration_ms`, the first turn not counted.",
        "",
        *table(columns, [[row[c] for c in columns] for row in rows]),
    ]
    write_results("scale", lines, {"pack": args.pack.name, "rows": rows})


if __name__ == "__main__":
    main()

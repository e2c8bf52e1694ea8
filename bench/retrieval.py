"""Retrieval benchmark on BEIR SciFact: quality per pipeline stage, ingest cost, latency, memory.

    python -m bench.retrieval [--dataset ../shared/datasets/scifact] [--data-dir DIR] [--fresh]

Writes ``bench/results/retrieval.json`` and ``bench/results/retrieval.md``: our figures beside
the published ones and an earlier reference run's, as ratios. Neither reference is measured
by this script: ``PUBLISHED`` are BEIR / sentence-transformers figures for all-MiniLM-L6-v2,
``EARLIER_REFERENCE`` the reference figures given for this machine (not measured here).
Ingest runs in a child process so its peak RSS is measured on its own.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import platform
import resource
import shutil
import time
from pathlib import Path

from bench._common import RESULTS, ROOT
from config.settings import PIPELINES, Settings, load_settings

PUBLISHED = {"bm25": 0.665, "dense": 0.645, "dense+late": 0.707}
PUBLISHED_NOTE = {"dense+late": "MiniLM token embeddings as late interaction; dense+rerank 0.703"}
# nDCG@10 of an earlier reference run on this machine (not measured here)
EARLIER_REFERENCE = {
    "bm25": 0.683,
    "dense": 0.656,
    "hybrid": 0.722,
    "dense+late": 0.710,
    "hybrid+late": 0.728,
}
TARGETS = {"nDCG@10": 0.74, "p95_ms": 30.0, "ingest_s": 300.0, "rss_gb": 2.5}


def _settings(dataset: Path) -> Settings:
    settings = load_settings()
    qdrant = settings.qdrant.model_copy(update={"collection": f"beir-{dataset.name}"})
    return settings.model_copy(update={"qdrant": qdrant})


def _ingest_child(dataset: str, data_dir: str, queue: multiprocessing.Queue) -> None:
    from evaluation.retrieval import load_beir
    from storage.kb.ingest import ingest_paths
    from storage.kb.knowledge_base import KnowledgeBase

    settings = _settings(Path(dataset))
    data = load_beir(Path(dataset))
    kb = KnowledgeBase.open(settings, Path(data_dir))
    started = time.perf_counter()
    report = ingest_paths(kb, [data.corpus])
    kb.close()
    queue.put(
        {
            "seconds": round(time.perf_counter() - started, 1),
            "documents": report.documents,
            "chunks": report.chunks,
            "unchanged": report.unchanged,
            "stage_seconds": {k: round(v, 1) for k, v in report.stage_seconds.items()},
            "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
        }
    )


def _dir_size_gb(path: Path) -> float:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**30, 2)


def _ratio(ours: float, reference: float | None) -> str:
    return f"{ours / reference:.3f}" if reference else "-"


def render_markdown(result: dict) -> str:
    lines = [
        f"# Retrieval benchmark: {result['dataset']} ({result['split']}, {result['queries']} queries)",
        "",
        f"Machine: {result['machine']}. Pipeline default: `{result['default_pipeline']}`.",
        "",
        "| stage | nDCG@10 | published | ratio | earlier reference run | ratio | Recall@100 "
        "| MRR@10 | p50 ms | p95 ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for stage, row in result["stages"].items():
        published, measured = PUBLISHED.get(stage), EARLIER_REFERENCE.get(stage)
        lines.append(
            f"| {stage} | {row['nDCG@10']:.3f} | {published or '-'} | "
            f"{_ratio(row['nDCG@10'], published)} | {measured or '-'} | "
            f"{_ratio(row['nDCG@10'], measured)} | {row['Recall@100']:.3f} | "
            f"{row['MRR@10']:.3f} | {row['p50_ms']:.1f} | {row['p95_ms']:.1f} |"
        )
    ingest = result["ingest"]
    default = result["stages"][result["default_pipeline"]]
    lines += [
        "",
        "Published: BEIR/MiniLM figures; "
        + "; ".join(f"{k}: {v}" for k, v in PUBLISHED_NOTE.items())
        + ".",
        "",
        "| target | ours | target | ratio (ours/target) | met |",
        "|---|---|---|---|---|",
        f"| nDCG@10 ({result['default_pipeline']}) | {default['nDCG@10']:.3f} | "
        f"≥ {TARGETS['nDCG@10']} | {_ratio(default['nDCG@10'], TARGETS['nDCG@10'])} | "
        f"{'yes' if default['nDCG@10'] >= TARGETS['nDCG@10'] else 'no'} |",
        f"| query p95 ms (incl. embedding) | {default['p95_ms']:.1f} | ≤ {TARGETS['p95_ms']} | "
        f"{_ratio(default['p95_ms'], TARGETS['p95_ms'])} | "
        f"{'yes' if default['p95_ms'] <= TARGETS['p95_ms'] else 'no'} |",
        f"| ingest seconds | {ingest['seconds']} | ≤ {TARGETS['ingest_s']} | "
        f"{_ratio(ingest['seconds'], TARGETS['ingest_s'])} | "
        f"{'yes' if ingest['seconds'] <= TARGETS['ingest_s'] else 'no'} |",
        f"| ingest peak RSS GB | {ingest['peak_rss_gb']} | ≤ {TARGETS['rss_gb']} | "
        f"{_ratio(ingest['peak_rss_gb'], TARGETS['rss_gb'])} | "
        f"{'yes' if ingest['peak_rss_gb'] <= TARGETS['rss_gb'] else 'no'} |",
        "",
        f"Ingest: {ingest['documents']} documents, {ingest['chunks']} chunks, "
        f"{ingest['chunks_per_s']} chunks/s; stage seconds {ingest['stage_seconds']}.",
        f"Query process peak RSS: {result['query_rss_gb']} GB. Index on disk: "
        f"{result['index_gb']} GB (reference: qdrant-edge 1.1 GB, qdrant-client local 4.1 GB).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", type=Path, default=ROOT.parent / "shared/datasets/scifact")
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/supportcrew-bench"))
    parser.add_argument("--split", default="test")
    parser.add_argument("--fresh", action="store_true", help="delete the data dir first")
    args = parser.parse_args()
    if args.fresh and args.data_dir.exists():
        shutil.rmtree(args.data_dir)

    queue: multiprocessing.Queue = multiprocessing.get_context("spawn").Queue()
    child = multiprocessing.get_context("spawn").Process(
        target=_ingest_child, args=(str(args.dataset), str(args.data_dir), queue)
    )
    child.start()
    ingest = queue.get()
    child.join()
    ingest["chunks_per_s"] = round(ingest["chunks"] / max(ingest["seconds"], 1e-9), 1)

    from evaluation.retrieval import evaluate, load_beir
    from storage.kb.knowledge_base import KnowledgeBase

    settings = _settings(args.dataset)
    data = load_beir(args.dataset, args.split)
    kb = KnowledgeBase.open(settings, args.data_dir)
    stages = evaluate(kb, data, list(PIPELINES))
    kb.close()
    result = {
        "dataset": args.dataset.name,
        "split": args.split,
        "queries": len(data.queries),
        "machine": f"{platform.machine()}, {multiprocessing.cpu_count()} cores",
        "default_pipeline": settings.retrieval.pipeline,
        "retrieval_settings": settings.retrieval.model_dump(),
        "stages": stages,
        "ingest": ingest,
        "query_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
        "index_gb": _dir_size_gb(args.data_dir / "qdrant" / settings.qdrant.collection),
        "published": PUBLISHED,
        "earlier_reference": EARLIER_REFERENCE,
        "targets": TARGETS,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "retrieval.json").write_text(json.dumps(result, indent=2) + "\n")
    markdown = render_markdown(result)
    (RESULTS / "retrieval.md").write_text(markdown)
    print(markdown)


if __name__ == "__main__":
    main()

"""Score retrieval on a BEIR-layout dataset with ir-measures (nDCG@10, Recall@100, MRR@10).

Chunk hits count for their document (a document scores its best chunk).

Usage::

    dataset = load_beir(Path("../shared/datasets/scifact"), split="test")
    scores = evaluate(kb, dataset, stages=["bm25", "hybrid+late"])
    scores["hybrid+late"]["nDCG@10"]
"""

from __future__ import annotations

import csv
import json
import time
from dataclasses import dataclass
from pathlib import Path

import ir_measures
from ir_measures import RR, R, nDCG

from storage.kb.knowledge_base import KnowledgeBase
from storage.retrieval.filters import build_filters

MEASURES = {"nDCG@10": nDCG @ 10, "Recall@100": R @ 100, "MRR@10": RR @ 10}
RUN_DEPTH = 100


@dataclass
class BeirDataset:
    name: str
    corpus: Path
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


class DatasetError(ValueError):
    """The dataset folder is not in BEIR layout; the message says what is missing."""


def load_beir(directory: Path, split: str = "test", keep_unjudged: bool = False) -> BeirDataset:
    """Corpus, queries and qrels; queries without judgements are dropped unless kept."""
    corpus, queries_file = directory / "corpus.jsonl", directory / "queries.jsonl"
    qrels_file = directory / "qrels" / f"{split}.tsv"
    for needed in (corpus, queries_file, qrels_file):
        if not needed.is_file():
            raise DatasetError(f"{directory}: missing {needed.relative_to(directory)}")
    qrels: dict[str, dict[str, int]] = {}
    with qrels_file.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    queries = {}
    with queries_file.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                if keep_unjudged or row["_id"] in qrels:
                    queries[row["_id"]] = row["text"]
    return BeirDataset(directory.name, corpus, queries, qrels)


def document_run(
    kb: KnowledgeBase, query: str, pipeline: str, depth: int = RUN_DEPTH
) -> dict[str, float]:
    """Best chunk score per document for one query, ``depth`` documents at most."""
    plan = build_filters(kb.settings.slots, {})
    hits = kb.query_chunks(query, pipeline, plan.condition, depth * 2)
    scores: dict[str, float] = {}
    for hit in hits:
        source = hit.payload["source_id"]
        scores[source] = max(scores.get(source, float("-inf")), hit.score)
    best = sorted(scores, key=lambda s: scores[s], reverse=True)[:depth]
    return {s: scores[s] for s in best}


def evaluate(kb: KnowledgeBase, dataset: BeirDataset, stages: list[str]) -> dict[str, dict]:
    """Run every stage over the dataset's queries; figures per stage, plus latency."""
    results: dict[str, dict] = {}
    for stage in stages:
        run: dict[str, dict[str, float]] = {}
        latencies = []
        for qid, text in dataset.queries.items():
            started = time.perf_counter()
            run[qid] = document_run(kb, text, stage)
            latencies.append((time.perf_counter() - started) * 1000)
        figures = ir_measures.calc_aggregate(list(MEASURES.values()), dataset.qrels, run)
        latencies.sort()
        results[stage] = {
            **{name: round(float(figures[m]), 4) for name, m in MEASURES.items()},
            "p50_ms": round(latencies[len(latencies) // 2], 2),
            "p95_ms": round(latencies[int(len(latencies) * 0.95) - 1], 2),
            "queries": len(run),
        }
    return results

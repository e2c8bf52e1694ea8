"""Tune fusion knobs (RRF k, per-signal weights, candidate depths) on SciFact's *train* qrels.

Each train query's three ranked lists (dense, BM25, MaxSim rescoring of their union) are
fetched once from Qdrant; fusion variants are then scored offline with ir-measures. Test qrels
are never read here.

    python -m training.fusion_fit --data-dir /tmp/scifact [--dataset ../shared/datasets/scifact]
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections import defaultdict
from pathlib import Path

import ir_measures
from ir_measures import nDCG

from config.settings import load_settings
from config.telemetry import apply_telemetry_policy
from evaluation.reporting import ROOT
from evaluation.retrieval import load_beir
from storage.kb.ingest import ingest_paths
from storage.kb.knowledge_base import KnowledgeBase
from storage.qdrant.store import Nearest, Stage
from storage.retrieval.filters import build_filters


def doc_ranking(hits) -> list[str]:
    seen: list[str] = []
    for hit in hits:
        source = hit.payload["source_id"]
        if source not in seen:
            seen.append(source)
    return seen


def fuse(lists: list[list[str]], weights: list[float], k: int) -> dict[str, float]:
    scores: dict[str, float] = defaultdict(float)
    for ranking, weight in zip(lists, weights, strict=True):
        for rank, doc in enumerate(ranking):
            scores[doc] += weight / (k + rank + 1)
    return dict(sorted(scores.items(), key=lambda x: -x[1])[:100])


def main() -> None:
    apply_telemetry_policy()  # where the training process starts
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--dataset", type=Path, default=ROOT.parent / "shared/datasets/scifact")
    parser.add_argument("--depths", default="30,50,100")
    parser.add_argument(
        "--query-tokens",
        choices=["all", "words"],
        default="all",
        help="words: drop [CLS]/[SEP] from the query's token vectors",
    )
    args = parser.parse_args()

    settings = load_settings()
    settings = settings.model_copy(
        update={"qdrant": settings.qdrant.model_copy(update={"collection": f"beir-{args.dataset.name}"})}
    )
    data = load_beir(args.dataset, "train")
    kb = KnowledgeBase.open(settings, args.data_dir)
    ingest_paths(kb, [data.corpus])
    where = build_filters(settings.slots, {}).condition
    depths = [int(d) for d in args.depths.split(",")]
    first_depth = settings.retrieval.candidates
    lists: dict[int, dict[str, list[list[str]]]] = {d: {} for d in depths}
    for qid, text in data.queries.items():
        encoded = kb.encoders.dense.encode([text])[0]
        if args.query_tokens == "words":
            encoded = type(encoded)(encoded.dense, encoded.tokens[1:-1])
        sparse = kb.encoders.bm25.encode_query(text)
        dense = Stage(Nearest("dense", encoded.dense), first_depth)
        bm25 = Stage(Nearest("bm25", sparse), first_depth)
        first = [doc_ranking(kb.store.query(kb.collection, s, where)) for s in (dense, bm25)]
        for depth in depths:
            union = (Stage(dense.query, depth), Stage(bm25.query, depth))
            late = Stage(Nearest("tokens", encoded.tokens), 2 * depth, union)
            lists[depth][qid] = [*first, doc_ranking(kb.store.query(kb.collection, late, where))]
    kb.close()
    rows = []
    for depth, k, wd, wb, wt in itertools.product(
        depths, (2, 3, 5, 8, 12, 20), (1.0,), (0.75, 1.0, 1.5), (0.75, 1.0, 1.5, 2.0)
    ):
        run = {q: fuse(ls, [wd, wb, wt], k) for q, ls in lists[depth].items()}
        score = ir_measures.calc_aggregate([nDCG @ 10], data.qrels, run)[nDCG @ 10]
        rows.append(
            {
                "depth": depth,
                "k": k,
                "dense": wd,
                "bm25": wb,
                "tokens": wt,
                "nDCG@10": round(float(score), 4),
            }
        )
    rows.sort(key=lambda r: -r["nDCG@10"])
    for row in rows:
        if (row["dense"], row["bm25"], row["tokens"]) == (1.0, 1.0, 1.0):
            print("equal weights:", json.dumps(row))
    for row in rows[:15]:
        print(json.dumps(row))


if __name__ == "__main__":
    main()

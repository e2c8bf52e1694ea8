"""Recall@1 and @5 on entity-centric questions, with and without entity-linked context.

Some questions carry ``remembered`` entities: they come from the conversation or entity
memory (as in a turn), not from the question text.

    python -m bench.entity_context [--data-dir DIR]

Writes bench/results/entity_context.{json,md}.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from bench._common import ROOT
from config.settings import load_settings
from storage.kb.ingest import ingest_paths
from storage.kb.knowledge_base import KnowledgeBase
from storage.retrieval.request import RetrievalRequest
from storage.retrieval.retriever import QdrantRetriever

STAFF = {"tier": "enterprise", "access_level": "internal"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/supportcrew-entities"))
    args = parser.parse_args()
    questions = yaml.safe_load((ROOT / "examples" / "entity_questions.yaml").read_text())
    rows = []
    for enabled in (False, True):
        base = load_settings()
        settings = base.model_copy(
            update={
                "retrieval": base.retrieval.model_copy(update={"entity_context": enabled, "top_k": 5})
            }
        )
        kb = KnowledgeBase.open(settings, args.data_dir)
        ingest_paths(kb, [ROOT / "examples" / "kb"])
        retriever = QdrantRetriever(kb=kb)
        for item in questions:
            found = retriever.search_queries(
                RetrievalRequest([item["question"]], STAFF, entities=item.get("remembered", []))
            )
            sources = [r.metadata["source_id"] for r in found.results]
            rows.append(
                {
                    "entity_context": enabled,
                    "question": item["question"],
                    "remembered": item.get("remembered", []),
                    "hit": item["expected"] in sources,
                    "hit@1": sources[:1] == [item["expected"]],
                    "entities": found.metadata["entities"],
                }
            )
        kb.close()

    def rate(flag: bool, key: str) -> float:
        return round(sum(r[key] for r in rows if r["entity_context"] == flag) / len(questions), 3)

    recall = {flag: rate(flag, "hit") for flag in (False, True)}
    top1 = {flag: rate(flag, "hit@1") for flag in (False, True)}
    result = {
        "questions": len(questions),
        "recall@5_without": recall[False],
        "recall@5_with": recall[True],
        "recall@1_without": top1[False],
        "recall@1_with": top1[True],
        "rows": rows,
    }
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "entity_context.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "# Entity-linked context on examples/kb",
        "",
        "| | recall@1 | recall@5 |",
        "|---|---|---|",
        f"| search only | {top1[False]:.2f} | {recall[False]:.2f} |",
        f"| + entity-linked context | {top1[True]:.2f} | {recall[True]:.2f} |",
        "",
        "| question | remembered | top-1 without | top-1 with | @5 without | @5 with |",
        "|---|---|---|---|---|---|",
    ]
    half = len(questions)
    for without, with_ in zip(rows[:half], rows[half:], strict=True):
        lines.append(
            f"| {without['question']} | {', '.join(without['remembered'])} | "
            f"{without['hit@1']} | {with_['hit@1']} | {without['hit']} | "
            f"{with_['hit']} |"
        )
    (out / "entity_context.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""Calibrate the evidence thresholds on the example knowledge base.

For each labelled question of ``examples/calibration.yaml`` (answerable / unanswerable for an
enterprise customer) it prints the best passage's late-interaction relevance, the query-term
coverage of the passages, and the evidence call under the configured thresholds.

    python bench/calibrate_evidence.py [--data-dir DIR]

Writes bench/results/calibration.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from config.settings import load_settings  # noqa: E402
from storage.ingest import ingest_paths  # noqa: E402
from storage.knowledge_base import KnowledgeBase  # noqa: E402
from storage.retrieval import QdrantRetriever  # noqa: E402
from tasks.evidence import EvidenceScorer  # noqa: E402
from tasks.judging import assess  # noqa: E402
from tasks.schemas import Passage  # noqa: E402

SLOTS = {"tier": "enterprise", "access_level": "customer"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/supportcrew-calibration"))
    args = parser.parse_args()
    settings = load_settings()
    kb = KnowledgeBase.open(settings, args.data_dir)
    ingest_paths(kb, [ROOT / "examples" / "kb"])
    retriever = QdrantRetriever(kb=kb)
    scorer = EvidenceScorer(kb.encoders)
    labelled = yaml.safe_load((ROOT / "examples" / "calibration.yaml").read_text())
    rows = []
    for label in ("answerable", "unanswerable"):
        for question in labelled[label]:
            found = retriever.search_queries([question], SLOTS)
            passages = [Passage(pid=i, source_id=r.metadata["source_id"],
                                chunk_id=r.metadata["chunk_id"], text=r.text, score=r.score)
                        for i, r in enumerate(found.results, start=1)]
            evidence = assess(scorer, question, passages, settings.evidence)
            rows.append({"question": question, "label": label, "relevance": round(evidence.best, 3),
                         "coverage": evidence.coverage, "call": evidence.call})
    kb.close()
    wrong = [r for r in rows if (r["label"], r["call"]) in
             (("answerable", "insufficient"), ("unanswerable", "sufficient"))]
    undecided = [r for r in rows if r["call"] == "undecided"]
    summary = {"questions": len(rows), "decided_right": len(rows) - len(wrong) - len(undecided),
               "decided_wrong": len(wrong), "undecided": len(undecided),
               "thresholds": settings.evidence.model_dump()}
    (ROOT / "bench" / "results").mkdir(exist_ok=True)
    (ROOT / "bench" / "results" / "calibration.json").write_text(
        json.dumps({"summary": summary, "rows": rows}, indent=2) + "\n")
    lines = ["# Evidence calibration on examples/kb", "",
             "| label | relevance | coverage | evidence call | question |", "|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["label"], -r["relevance"])):
        lines.append(f"| {r['label']} | {r['relevance']} | {r['coverage']} | {r['call']} | "
                     f"{r['question']} |")
    lines += ["", f"Decided right {summary['decided_right']}, wrong {summary['decided_wrong']}, "
              f"left to the model {summary['undecided']} (of {summary['questions']}).", ""]
    (ROOT / "bench" / "results" / "calibration.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()

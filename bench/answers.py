"""Answers and refusals on doc2dial (dev and test packs), ours against two baselines, one run.

For each pack: supportcrew's turn on both engines (the shipped configuration: local model,
roles on auto), and in the same run

* **BM25 top-1**: the first two sentences of the best BM25 passage, cited; never refuses;
* **naive RAG**: the turn's search, then the local model answers from the top three passages
  with no gate and no check, citing the top passage (refuses only if it says it cannot).

Figures: answered right (a cited source answers), answers citing a wrong source, refused right,
precision of answers, gold-evidence token recall and F1 (over answerable questions; a refusal
scores 0), LLM calls and seconds per question. The test pack is reported, never tuned on.

    python bench/answers.py [--packs dev,test] [--no-naive-rag] [--data-dir DIR]

Writes bench/results/answers.{md,json}.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from _common import ROOT, open_answer_set, table, write_results

from agents.answer_eval import answer_set_settings, evaluate_answers, overlap, summarise
from agents.runtime import build_runtime
from config.settings import load_settings
from storage.retrieval.filters import build_filters
from tasks.passage_text import split_units

PACKS = {"dev": ROOT.parent / "shared" / "datasets" / "doc2dial-support-dev",
         "test": ROOT.parent / "shared" / "datasets" / "doc2dial-support"}
FIGURES = ("answered_right", "wrong_source_answers", "refused_right", "precision",
           "evidence_recall", "evidence_f1", "llm_calls", "p50_s", "p95_s")
NAIVE_PROMPT = ("Answer the customer's question using only these help-centre passages. If they do "
                "not answer it, say \"I don't know\".\n\n{passages}\n\nQuestion: {question}\n"
                "Answer:")


def baseline_row(question: Any, answer: str, source: str | None, seconds: float,
                 calls: int = 0) -> dict[str, Any]:
    answered = bool(source) and "don't know" not in answer.lower()
    recall = f1 = None
    if question.answerable and question.evidence:
        recall, f1 = overlap(answer if answered else "", " ".join(question.evidence))
    return {"id": question.id, "answerable": question.answerable,
            "verdict": "answered" if answered else "idk", "cited": [source] if source else [],
            "right_source": answered and source in question.doc_ids, "probability": None,
            "answer": answer, "evidence_recall": recall, "evidence_f1": f1, "llm_calls": calls,
            "seconds": round(seconds, 3)}


def bm25_top1(opened: Any) -> list[dict[str, Any]]:
    rows = []
    condition = build_filters(opened.settings.slots, opened.answer_set.slots).condition
    for question in opened.answer_set.questions:
        started = time.perf_counter()
        hits = opened.kb.query_chunks(question.question, "bm25", condition, 1)
        quotable = [u.text for u in split_units(hits[0].payload["text"]) if u.quotable] \
            if hits else []
        text = " ".join(quotable[:2])
        rows.append(baseline_row(question, text, hits[0].payload["source_id"] if hits else None,
                                 time.perf_counter() - started))
    return rows


def naive_rag(opened: Any, llm: Any) -> list[dict[str, Any]]:
    rows = []
    for question in opened.answer_set.questions:
        started = time.perf_counter()
        passages = opened.search(question.question)[:3]
        prompt = NAIVE_PROMPT.format(question=question.question, passages="\n".join(
            f"[{p.pid}] {p.text[:600]}" for p in passages))
        answer = str(llm.call([{"role": "user", "content": prompt}])) if passages else ""
        rows.append(baseline_row(question, answer, passages[0].source_id if passages else None,
                                 time.perf_counter() - started, calls=1))
    return rows


def ours(pack: Path, data_dir: Path, engine: str) -> list[dict[str, Any]]:
    settings = answer_set_settings(load_settings(), pack.name, data_dir)
    opened = open_answer_set(pack, data_dir, settings)  # ingests, idempotently
    answer_set = opened.answer_set
    opened.close()
    runtime = build_runtime(settings, data_dir, engine=engine, process="sequential")
    try:
        return evaluate_answers(runtime, answer_set).rows
    finally:
        runtime.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--packs", default="dev,test")
    parser.add_argument("--no-naive-rag", action="store_true")
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/supportcrew-bench-answers"))
    args = parser.parse_args()
    results: dict[str, dict[str, Any]] = {}
    llm = None
    if not args.no_naive_rag:
        from agents.llm_factory import build_llm
        llm = build_llm(load_settings().llm)
    for name in [p.strip() for p in args.packs.split(",") if p.strip()]:
        pack = PACKS[name]
        if not pack.exists():
            print(f"skipped {name}: {pack} not found")
            continue
        runs: dict[str, list[dict[str, Any]]] = {}
        for engine in ("crewai", "autogen"):
            runs[f"supportcrew ({engine})"] = ours(pack, args.data_dir, engine)
        settings = answer_set_settings(load_settings(), pack.name, args.data_dir)
        opened = open_answer_set(pack, args.data_dir, settings)
        runs["BM25 top-1, first two sentences"] = bm25_top1(opened)
        if llm is not None:
            runs["naive RAG (local model, no checks)"] = naive_rag(opened, llm)
        opened.close()
        results[name] = {label: {"summary": summarise(rows), "rows": rows}
                         for label, rows in runs.items()}
    lines = ["# Answers on doc2dial: supportcrew against two baselines (one run)", "",
             "Local model, shipped configuration (roles on auto). Each question is the first turn "
             "of a new conversation, `access_level: public`. dev = doc2dial-support-dev (tuned "
             "on), test = doc2dial-support (reported only).", ""]
    for name, runs in results.items():
        lines += [f"## {name}", "", *table(("system", *FIGURES), (
            (label, *(run["summary"][f] for f in FIGURES)) for label, run in runs.items())), ""]
    write_results("answers", lines, results)

if __name__ == "__main__":
    main()

"""Answers and refusals on doc2dial (dev and test packs), ours against two baselines, one run.

For each pack: supportcrew's turn on both engines (the shipped configuration: local model,
roles on auto), and in the same run

* **BM25 top-1**: the first two sentences of the best BM25 passage, cited; never refuses;
* **naive RAG**: the turn's search, then the local model answers from the top three passages
  with no gate and no check, citing the top passage (refuses only if it says it cannot).

Figures: answered right (a cited source answers), answers citing a wrong source, refused right,
precision of answers, gold-evidence token recall and F1 (over answerable questions; a refusal
scores 0), LLM calls and seconds per question. The test pack is reported, never tuned on.

With ``--baseline-repo DIR`` (a checkout of an earlier main, e.g. ``git worktree add
/tmp/baseline 0e7518f``) that checkout's own ``main.py eval answers`` runs on the same packs in
the same run: once as shipped (its figures) and once with its gate answering everything (its
probability per question and the page it would cite: its risk-coverage curve).

    python bench/answers.py [--packs dev,test,near-miss,support-problems,support-requests]
                            [--no-naive-rag] [--baseline-repo DIR]

Writes bench/results/answers.{md,json} and, per pack, the risk-coverage curves of our gate
(and the baseline's) as bench/results/answers_<pack>_curve.png.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from _common import (
    RESULTS,
    ROOT,
    comparison_parser,
    open_answer_set,
    product_rows,
    table,
    write_results,
)

from config.settings import load_settings
from evaluation.answers import (
    answer_set_settings,
    overlap,
    plot_risk_coverage,
    risk_coverage,
    summarise,
)
from storage.retrieval.filters import build_filters
from tasks.operating_points import learned_points
from tasks.passage_text import split_units

SETS = ROOT / "examples" / "answer-sets"
PACKS = {
    "dev": ROOT.parent / "shared" / "datasets" / "doc2dial-support-dev",
    "test": ROOT.parent / "shared" / "datasets" / "doc2dial-support",
    # written for supportcrew over examples/kb (tuned on, like dev)
    "near-miss": SETS / "near-miss",
    "support-problems": SETS / "support-problems",
    "support-requests": SETS / "support-requests",
}
FIGURES = (
    "answered_right",
    "wrong_source_answers",
    "refused_right",
    "precision",
    "evidence_recall",
    "evidence_f1",
    "llm_calls",
    "p50_s",
    "p95_s",
    "answered_p50_s",
    "gate_ms_p50",
)
NAIVE_PROMPT = (
    "Answer the customer's question using only these help-centre passages. If they do "
    'not answer it, say "I don\'t know".\n\n{passages}\n\nQuestion: {question}\n'
    "Answer:"
)


def baseline_row(
    question: Any, answer: str, source: str | None, seconds: float, calls: int = 0
) -> dict[str, Any]:
    answered = bool(source) and "don't know" not in answer.lower()
    recall = f1 = None
    if question.answerable and question.evidence:
        recall, f1 = overlap(answer if answered else "", " ".join(question.evidence))
    return {
        "id": question.id,
        "answerable": question.answerable,
        "verdict": "answered" if answered else "idk",
        "cited": [source] if source else [],
        "right_source": answered and source in question.doc_ids,
        "probability": None,
        "answer": answer,
        "evidence_recall": recall,
        "evidence_f1": f1,
        "llm_calls": calls,
        "seconds": round(seconds, 3),
    }


def bm25_top1(opened: Any) -> list[dict[str, Any]]:
    rows = []
    condition = build_filters(opened.settings.slots, opened.answer_set.slots).condition
    for question in opened.answer_set.questions:
        started = time.perf_counter()
        hits = opened.kb.query_chunks(question.question, "bm25", condition, 1)
        quotable = [u.text for u in split_units(hits[0].payload["text"]) if u.quotable] if hits else []
        text = " ".join(quotable[:2])
        rows.append(
            baseline_row(
                question,
                text,
                hits[0].payload["source_id"] if hits else None,
                time.perf_counter() - started,
            )
        )
    return rows


def naive_rag(opened: Any, llm: Any) -> list[dict[str, Any]]:
    rows = []
    for question in opened.answer_set.questions:
        started = time.perf_counter()
        passages = opened.search(question.question)[:3]
        prompt = NAIVE_PROMPT.format(
            question=question.question, passages="\n".join(f"[{p.pid}] {p.text[:600]}" for p in passages)
        )
        answer = str(llm.call([{"role": "user", "content": prompt}])) if passages else ""
        rows.append(
            baseline_row(
                question,
                answer,
                passages[0].source_id if passages else None,
                time.perf_counter() - started,
                calls=1,
            )
        )
    return rows


def baseline_run(repo: Path, pack: Path, data_dir: Path, answer_all: bool) -> list[dict[str, Any]]:
    """The rows of an earlier checkout's own ``eval answers`` (its CLI, its config)."""
    config = yaml.safe_load((repo / "config" / "assistant.yaml").read_text())
    if answer_all:  # its fitted gate with both operating points at 0: every question answers
        fitted = yaml.safe_load((repo / "config" / "answerability.yaml").read_text())
        config.setdefault("evidence", {})["answerability"] = {
            **fitted,
            "answer_at": 0.0,
            "refuse_below": 0.0,
        }
    with tempfile.TemporaryDirectory() as work:
        config_path, output = Path(work) / "config.yaml", Path(work) / "report.json"
        config_path.write_text(yaml.safe_dump(config))
        subprocess.run(
            [
                sys.executable,
                "main.py",
                "--data-dir",
                str(data_dir),
                "--config",
                str(config_path),
                "eval",
                "answers",
                "--dataset",
                str(pack),
                "--output",
                str(output),
            ],
            cwd=repo,
            check=True,
            capture_output=True,
        )
        return json.loads(output.read_text())["rows"]


def answer_all_curve(rows: list[dict[str, Any]]) -> list[dict[str, float]]:
    """A gate's curve from a run in which it answered everything."""
    return risk_coverage(
        [
            {**r, "gate_source": r["cited"][0] if r["cited"] else "", "gate_right": r["right_source"]}
            for r in rows
        ]
    )


def main() -> None:
    parser = comparison_parser(__doc__, "/tmp/supportcrew-bench-answers")
    parser.add_argument("--packs", default="dev,test")
    parser.add_argument("--no-naive-rag", action="store_true")
    args = parser.parse_args()
    results: dict[str, dict[str, Any]] = {}
    llm = None
    if not args.no_naive_rag:
        from agents.llm.factory import build_llm

        llm = build_llm(load_settings().llm)
    for name in [p.strip() for p in args.packs.split(",") if p.strip()]:
        pack = PACKS[name]
        if not pack.exists():
            print(f"skipped {name}: {pack} not found")
            continue
        runs: dict[str, list[dict[str, Any]]] = {}
        for engine in ("crewai", "autogen"):
            runs[f"supportcrew ({engine})"] = product_rows(pack, args.data_dir, engine)
        runs["supportcrew, learned gate (crewai)"] = product_rows(
            pack, args.data_dir, "crewai", "learned"
        )
        settings = answer_set_settings(load_settings(), pack.name, args.data_dir)
        opened = open_answer_set(pack, args.data_dir, settings)
        runs["BM25 top-1, first two sentences"] = bm25_top1(opened)
        if llm is not None:
            runs["naive RAG (local model, no checks)"] = naive_rag(opened, llm)
        opened.close()
        learned = "supportcrew, learned gate (crewai)"
        curves = {
            "supportcrew (crewai)": risk_coverage(runs["supportcrew (crewai)"]),
            learned: risk_coverage(runs[learned]),
        }
        marks = {
            "supportcrew (crewai)": settings.evidence.answerability.answer_at,
            learned: learned_points(settings.evidence.learned, settings.evidence.target_precision)[0],
        }
        if args.baseline_repo:
            commit = subprocess.run(
                ["git", "-C", str(args.baseline_repo), "rev-parse", "--short", "HEAD"],
                capture_output=True,
                text=True,
            ).stdout.strip()
            label = f"main before, {commit or args.baseline_repo.name} (crewai)"
            base_dir = args.data_dir / "baseline"
            runs[label] = baseline_run(args.baseline_repo, pack, base_dir, answer_all=False)
            curves[label] = answer_all_curve(
                baseline_run(args.baseline_repo, pack, base_dir, answer_all=True)
            )
        results[name] = {
            label: {"summary": summarise(rows), "rows": rows} for label, rows in runs.items()
        }
        results[name]["curves"] = curves
        plot_risk_coverage(
            curves,
            RESULTS / f"answers_{name}_curve.png",
            marks,
            f"doc2dial {name}: risk-coverage of the gate",
        )
    lines = [
        "# Answers on doc2dial: supportcrew against two baselines (one run)",
        "",
        "Local model, shipped configuration (roles on auto). Each question is the first turn "
        "of a new conversation, `access_level: public`. dev = doc2dial-support-dev (tuned "
        "on), test = doc2dial-support (reported only).",
        "",
    ]
    for name, runs in results.items():
        systems = {label: run for label, run in runs.items() if label != "curves"}
        lines += [
            f"## {name}",
            "",
            *table(
                ("system", *FIGURES),
                ((label, *(run["summary"][f] for f in FIGURES)) for label, run in systems.items()),
            ),
            "",
            f"Risk-coverage (precision / coverage per threshold): `answers_{name}_curve.png`",
            "",
            *table(
                ("threshold", *runs["curves"]),
                (
                    (
                        point["threshold"],
                        *(f"{c[i]['precision']} / {c[i]['coverage']}" for c in runs["curves"].values()),
                    )
                    for i, point in enumerate(next(iter(runs["curves"].values())))
                    if i % 2 == 0
                ),
            ),
            "",
        ]
    write_results("answers", lines, results)


if __name__ == "__main__":
    main()

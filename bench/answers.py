"""Answers and refusals, ours against baselines, in one run: the doc2dial packs, the
examples/ answer sets, SQuAD 2.0 held-out articles (which paragraph answers: page choice at
scale) and the multi-turn conversation scripts.

For each pack: supportcrew's turn on both engines (the shipped configuration: local model,
roles on auto), and in the same run

* **BM25 top-1**: the first two sentences of the best BM25 passage, cited; never refuses;
* **naive RAG**: the turn's search, then the local model answers from the top three passages
  with no gate and no check, citing the top passage (refuses only if it says it cannot).

Figures: answered right (a cited source answers), wrong-page answers (answers citing a page
that does not answer: an answerable question answered from another page, or an unanswerable
one answered), refused right, precision of answers, page choice (the decision's chosen page
is a gold one, answered or not, over answerable questions), gold-evidence token recall and F1
(over answerable questions; a refusal scores 0), LLM calls and seconds per question. The
test pack is reported, never tuned on. ``squad``: a pack of 200 questions (half adversarial
unanswerables) over the SQuAD articles the cross-encoder never saw (``bench/squad_pack.py``),
every paragraph a page. ``--scripts``: the conversation scripts of ``bench/conversations.py``
on both engines (and the baseline's kickoff), with their follow-ups apart.

With ``--baseline-repo DIR`` (a checkout of an earlier main, e.g. ``git worktree add
/tmp/baseline 0e7518f``) that checkout's own ``main.py eval answers`` runs on the same packs in
the same run: once as shipped (its figures) and once with its gate answering everything (its
probability per question and the page it would cite: its risk-coverage curve).

    python -m bench.answers [--packs dev,near-miss,support-problems,support-requests,squad]
                            [--scripts doc2dial-dev-conversations.yaml,...]
                            [--no-naive-rag] [--baseline-repo DIR]
    python -m bench.answers --packs test --results answers_test   # reported once, at the end

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

from bench import conversations, squad_pack
from bench._common import (
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
from evaluation.squad import SQUAD, held_out_titles, load_squad
from storage.retrieval.filters import build_filters
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
SQUAD_QUESTIONS = 200
FIGURES = (
    "answered_right",
    "wrong_source_answers",
    "refused_right",
    "precision",
    "page_choice",
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
        "gate_right": question.answerable and source in question.doc_ids,
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
        shipped = repo / "storage" / "kb" / "assets" / "decision" / "gate.yaml"
        if not shipped.exists():  # a checkout from before the fitted files moved
            shipped = repo / "config" / "answerability.yaml"
        fitted = yaml.safe_load(shipped.read_text())
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


def squad_held_out(data_dir: Path) -> Path:
    """The SQuAD pack of ``SQUAD_QUESTIONS`` questions over the held-out articles, written
    under ``data_dir`` (``bench/squad_pack.py``, seed 13)."""
    out = data_dir / "squad-held-out"
    articles = load_squad(SQUAD)
    held = set(held_out_titles(articles, squad_pack.SEED))
    pages, rows = squad_pack.pack_rows(
        [a for a in articles if a["title"] in held], SQUAD_QUESTIONS, squad_pack.SEED
    )
    squad_pack.write_pack(out, pages, rows)
    return out


def pack_runs(
    name: str, pack: Path, args: Any, llm: Any
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict]], dict[str, float]]:
    """Every system's rows on one pack, the risk-coverage curves and the gate's mark."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for engine in ("crewai", "autogen"):
        runs[f"supportcrew ({engine})"] = product_rows(pack, args.data_dir, engine)
    settings = answer_set_settings(load_settings(), pack.name, args.data_dir)
    opened = open_answer_set(pack, args.data_dir, settings)
    runs["BM25 top-1, first two sentences"] = bm25_top1(opened)
    if llm is not None:
        runs["naive RAG (local model, no checks)"] = naive_rag(opened, llm)
    opened.close()
    curves = {"supportcrew (crewai)": risk_coverage(runs["supportcrew (crewai)"])}
    marks = {"supportcrew (crewai)": settings.evidence.answerability.answer_at}
    if args.baseline_repo:
        label = f"main before, {baseline_commit(args.baseline_repo)} (crewai)"
        base_dir = args.data_dir / "baseline"
        runs[label] = baseline_run(args.baseline_repo, pack, base_dir, answer_all=False)
        curves[label] = answer_all_curve(
            baseline_run(args.baseline_repo, pack, base_dir, answer_all=True)
        )
    return runs, curves, marks


def baseline_commit(repo: Path) -> str:
    return (
        subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        or repo.name
    )


def script_runs(scripts: list[str], args: Any) -> tuple[list[str], dict[str, Any]]:
    """The conversation scripts on both engines (and the baseline's kickoff): Markdown and data."""
    systems: dict[str, list[dict[str, Any]]] = {
        f"supportcrew ({engine})": conversations.run(engine, scripts, args.data_dir / f"conv-{engine}")
        for engine in ("crewai", "autogen")
    }
    if args.baseline_repo:
        label = f"main before, {baseline_commit(args.baseline_repo)} (crewai)"
        systems[label] = conversations.baseline(args.baseline_repo, scripts, args.data_dir / "conv-base")
    rows, data = conversations.summaries(systems, scripts)
    lines = [
        "## conversations (examples/kickoff, dev: tuned on)",
        "",
        *table(("system", "script", "part", *conversations.FIGURES), rows),
        "",
    ]
    return lines, data


def main() -> None:
    parser = comparison_parser(__doc__, "/tmp/supportcrew-bench-answers")
    parser.add_argument("--packs", default="dev,near-miss,support-problems,support-requests,squad")
    parser.add_argument(
        "--scripts",
        default="doc2dial-dev-conversations.yaml,kb-dev-conversations.yaml,conversations.yaml,"
        "follow-ups.yaml",
        help="conversation scripts of examples/kickoff ('' for none)",
    )
    parser.add_argument("--results", default="answers", help="bench/results/<name>.{md,json}")
    parser.add_argument("--no-naive-rag", action="store_true")
    args = parser.parse_args()
    results: dict[str, dict[str, Any]] = {}
    llm = None
    if not args.no_naive_rag:
        from agents.llm.factory import build_llm

        llm = build_llm(load_settings().llm)
    for name in [p.strip() for p in args.packs.split(",") if p.strip()]:
        pack = squad_held_out(args.data_dir) if name == "squad" else PACKS[name]
        if not pack.exists():
            print(f"skipped {name}: {pack} not found")
            continue
        runs, curves, marks = pack_runs(name, pack, args, llm)
        results[name] = {
            label: {"summary": summarise(rows), "rows": rows} for label, rows in runs.items()
        }
        results[name]["curves"] = curves
        plot_risk_coverage(
            curves,
            RESULTS / f"answers_{name}_curve.png",
            marks,
            f"{name}: risk-coverage of the gate",
        )
    lines = [
        "# Answers: supportcrew against baselines (one run)",
        "",
        "Local model, shipped configuration (roles on auto). Each question of a pack is the "
        "first turn of a new conversation, `access_level: public`. dev = doc2dial-support-dev "
        "and the examples/ sets (tuned on); squad = SQuAD 2.0 held-out articles (never "
        "trained or tuned on); test = doc2dial-support (reported only). "
        "`wrong_source_answers`: wrong-page answers.",
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
    scripts = [s.strip() for s in args.scripts.split(",") if s.strip()]
    if scripts:
        more, results["conversations"] = script_runs(scripts, args)
        lines += more
    write_results(args.results, lines, results)


if __name__ == "__main__":
    main()

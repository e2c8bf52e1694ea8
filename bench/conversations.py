"""Multi-turn conversations on both engines: answered right, refused right, precision, with
the follow-ups (every turn after the first) counted separately.

Scripts are kickoff files of ``examples/kickoff`` (``conversations.yaml``: openers, follow-ups
that mostly name no pronoun, near misses of the conversation's page, topic changes;
``follow-ups.yaml``; the dev sets written for the answer decision, ``kb-dev-conversations.yaml``
and ``doc2dial-dev-conversations.yaml`` over the doc2dial *dev* pages). A turn with
``expect: {verdict: answered, cites: [...]}`` is answered right when it answers citing one
of those pages; ``verdict: idk`` or ``handoff`` is refused right when it does not answer.
``evidence_held``: of the answerable turns whose expectation names the words their right
sentences hold (``contains``), those whose answer quotes them all.
Turns without an expectation (an opener that only states the problem) are not scored.

With ``--baseline-repo DIR`` (a checkout of an earlier main) the same scripts also run through
that checkout's own ``main.py kickoff`` on CrewAI, in the same run.

    python bench/conversations.py [--scripts conversations.yaml,...] [--baseline-repo DIR]

Writes bench/results/conversations.{md,json}.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import ROOT, comparison_parser, table, write_results

from agents.build import build_runtime
from config.settings import Settings, load_settings
from evaluation.answers import percentile
from evaluation.kickoff import load_script, run_script
from storage.kb.ingest import ingest_paths
from storage.kb.knowledge_base import KnowledgeBase

FIGURES = (
    "answered_right",
    "refused_right",
    "precision",
    "wrong_page_answers",
    "page_choice",
    "evidence_held",
    "turns",
    "p50_s",
    "p95_s",
)
DEV_KB = ROOT.parent / "shared" / "datasets" / "doc2dial-support-dev" / "kb"


def scored(line: dict[str, Any]) -> dict[str, Any] | None:
    """One scored turn, or None when the script expects nothing of it."""
    expect = line.get("expect") or {}
    want = expect.get("verdict")
    if want is None:
        return None
    cited = {c["source_id"] for c in line["citations"]}
    answered = line["verdict"] == "answered"
    right_page = answered and bool(cited & set(expect.get("cites", [])))
    gates = [s["detail"] for s in line["trace"]["steps"] if s["name"] == "evidence_gate"]
    gate_source = gates[-1]["source"] if gates else ""
    return {
        "conversation": line["conversation_id"],
        "turn": line["turn_index"],
        "user": line["user"],
        "want": want,
        "verdict": line["verdict"],
        "cited": sorted(cited),
        "answered": answered,
        "right": right_page if want == "answered" else not answered,
        "seconds": line["trace"]["duration_ms"] / 1000,
        # the gate's final reading, answered or not: what its risk-coverage curve needs
        "probability": gates[-1]["answerable"] if gates else None,
        "gate_source": gate_source,
        "gate_right": want == "answered" and gate_source in expect.get("cites", []),
        "cites": expect.get("cites", []),
        # the words the right sentences hold (``contains``): does the answer quote them?
        "holds_evidence": all(t.lower() in line["answer"].lower() for t in expect["contains"])
        if expect.get("contains") and want == "answered"
        else None,
        # the page choice's candidates, features and scores (bench/fit_page_choice.py)
        "candidates": gates[-1].get("candidates", []) if gates else [],
    }


def figures(turns: list[dict[str, Any]]) -> dict[str, Any]:
    answerable = [t for t in turns if t["want"] == "answered"]
    refusable = [t for t in turns if t["want"] != "answered"]
    answered = [t for t in turns if t["answered"]]
    seconds = sorted(t["seconds"] for t in turns)
    return {
        "answered_right": f"{sum(t['right'] for t in answerable)}/{len(answerable)}",
        "refused_right": f"{sum(t['right'] for t in refusable)}/{len(refusable)}",
        "precision": round(
            sum(t["want"] == "answered" and t["right"] for t in answered) / len(answered), 3
        )
        if answered
        else None,
        # answers citing a page that does not answer the turn (or answering one no page answers)
        "wrong_page_answers": sum(not (t["want"] == "answered" and t["right"]) for t in answered),
        # the decision's chosen page is a gold one, answered or not (answerable turns)
        "page_choice": round(sum(t["gate_right"] for t in answerable) / len(answerable), 3)
        if answerable
        else None,
        # of the answerable turns that name the words of their right sentences: quoted
        "evidence_held": f"{sum(bool(t['holds_evidence']) for t in named)}/{len(named)}"
        if (named := [t for t in answerable if t.get("holds_evidence") is not None])
        else None,
        "turns": len(turns),
        "p50_s": round(percentile(seconds, 0.5), 2),
        "p95_s": round(percentile(seconds, 0.95), 2),
    }


def knowledge_base_of(script: str) -> Path:
    """The pages a script is written over: the doc2dial dev pack's for its dev conversations,
    else examples/kb."""
    return DEV_KB if script.startswith("doc2dial-dev") else ROOT / "examples" / "kb"


def run(
    engine: str, scripts: list[str], data_dir: Path, settings: Settings | None = None
) -> list[dict[str, Any]]:
    """The scored turns of ``scripts`` through this checkout's turn on ``engine``
    (``settings``: another configuration than the loaded one), each over its own knowledge
    base (``knowledge_base_of``)."""
    settings = settings or load_settings()
    turns = []
    for pages in dict.fromkeys(knowledge_base_of(name) for name in scripts):
        where = data_dir / pages.parent.name
        kb = KnowledgeBase.open(settings, where)
        ingest_paths(kb, [pages], prune=True)
        kb.close()
        runtime = build_runtime(settings, where, engine=engine, process="sequential")
        try:
            for name in (n for n in scripts if knowledge_base_of(n) == pages):
                for line in run_script(load_script(ROOT / "examples" / "kickoff" / name), runtime):
                    turn = scored(line)
                    if turn is not None:
                        turns.append({"set": name, **turn})
        finally:
            runtime.close()
    return turns


def baseline(repo: Path, scripts: list[str], data_dir: Path) -> list[dict[str, Any]]:
    """The scripts through an earlier checkout's own ``kickoff`` (its CLI, its config), each
    over its own knowledge base (``knowledge_base_of``)."""
    turns = []
    for name in scripts:
        pages = knowledge_base_of(name)
        where = data_dir / pages.parent.name
        subprocess.run(
            [sys.executable, "main.py", "--data-dir", str(where), "ingest", str(pages), "--prune"],
            cwd=repo,
            check=True,
            capture_output=True,
        )
        with tempfile.TemporaryDirectory() as work:
            output = Path(work) / "turns.jsonl"
            subprocess.run(
                [
                    sys.executable,
                    "main.py",
                    "--data-dir",
                    str(where),
                    "kickoff",
                    str(ROOT / "examples" / "kickoff" / name),
                    "--output",
                    str(output),
                ],
                cwd=repo,
                capture_output=True,
            )  # exit 1 when expectations fail
            for line in output.read_text().splitlines():
                turn = scored(json.loads(line))
                if turn is not None:
                    turns.append({"set": name, **turn})
    return turns


def summaries(
    systems: dict[str, list[dict[str, Any]]], scripts: list[str]
) -> tuple[list[tuple[Any, ...]], dict[str, Any]]:
    """Table rows and data of each system's turns: per script, all turns and follow-ups."""
    rows, data = [], {}
    for label, turns in systems.items():
        for name in scripts:
            mine = [t for t in turns if t["set"] == name]
            for part, chosen in (
                ("all turns", mine),
                ("follow-ups", [t for t in mine if t["turn"] > 0]),
            ):
                summary = figures(chosen)
                rows.append((label, name, part, *(summary[f] for f in FIGURES)))
                data.setdefault(label, {}).setdefault(name, {})[part] = summary
        data[label]["turns"] = turns
    return rows, data


def main() -> None:
    parser = comparison_parser(__doc__, "/tmp/supportcrew-bench-conv")
    parser.add_argument(
        "--scripts",
        default="conversations.yaml,follow-ups.yaml,kb-dev-conversations.yaml,"
        "doc2dial-dev-conversations.yaml",
    )
    parser.add_argument("--engines", default="crewai,autogen")
    args = parser.parse_args()
    scripts = [s.strip() for s in args.scripts.split(",") if s.strip()]
    systems = {
        engine: run(engine, scripts, args.data_dir / engine)
        for engine in (e.strip() for e in args.engines.split(",") if e.strip())
    }
    if args.baseline_repo:
        systems["main before (crewai)"] = baseline(
            args.baseline_repo, scripts, args.data_dir / "baseline"
        )
    rows, results = summaries(systems, scripts)
    lines = [
        "# Multi-turn conversations (examples/kickoff), shipped configuration",
        "",
        "Follow-ups = every turn after a conversation's first. Local model, roles on auto.",
        "",
        *table(("engine", "script", "part", *FIGURES), rows),
        "",
    ]
    write_results("conversations", lines, results)


if __name__ == "__main__":
    main()

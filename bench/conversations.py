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

    python -m bench.conversations [--scripts conversations.yaml,...] [--baseline-repo DIR]

Writes bench/results/conversations.{md,json}.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench._common import ROOT, comparison_parser, table, write_results
from evaluation.dev_runs import FIGURES, figures, knowledge_base_of, scored
from evaluation.dev_runs import run_scripts as run


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

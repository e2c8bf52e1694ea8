"""Sequential against hierarchical, on each engine, with the embedded defaults: does the
manager delegate every searched turn, to the same verdicts, in about the sequential time?

Four runtimes (CrewAI and AutoGen, sequential and hierarchical), each over its own copy of
examples/kb (so customer memory does not leak between them), run the same conversations of
examples/kickoff (support demo, returning customer, follow-ups) interleaved: each conversation
runs on the four in turn, so the four meet the same load on a shared machine. ``--repeats``
runs the whole set again.

    python -m bench.processes [--repeats 1] [--scripts a.yaml,b.yaml]

Writes bench/results/processes.{md,json}: per configuration the p50 / p95 of the searched
turns' time (the trace's ``duration_ms``), its ratio to the same engine's sequential p50, the
median time it adds to the same turn run beside it sequentially, the turns whose verdict or
citations differ from sequential, and how many searched turns have a ``manage`` step that
handed the retrieve step to the retriever and finished the turn.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from agents.build import build_runtime
from bench._common import ROOT, table, write_results
from config.settings import load_settings
from evaluation.answers import percentile
from evaluation.kickoff import Script, load_script, run_script
from storage.kb.ingest import ingest_paths
from storage.kb.knowledge_base import KnowledgeBase

SCRIPTS = ["support-demo.yaml", "returning-customer.yaml", "follow-ups.yaml"]
CONFIGS = [(e, p) for e in ("crewai", "autogen") for p in ("sequential", "hierarchical")]


def searched(line: dict[str, Any]) -> bool:
    return any(s["name"] == "retrieve" for s in line["trace"]["steps"])


def delegated(line: dict[str, Any]) -> bool:
    """The turn's manager handed the retrieve step to the retriever and finished the turn."""
    manage = [s["detail"] for s in line["trace"]["steps"] if s["name"] == "manage"]
    return bool(manage) and "retriever" in manage[0]["delegated_to"] and manage[0]["completed"]


def figures(lines: list[dict[str, Any]], plain: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The figures of one configuration's turns, beside its engine's sequential ones."""
    turns = [t for t in lines if searched(t)]
    seconds = sorted(t["trace"]["duration_ms"] / 1000 for t in turns)
    row: dict[str, Any] = {
        "turns": len(lines),
        "searched": len(turns),
        "p50_s": round(percentile(seconds, 0.5), 3),
        "p95_s": round(percentile(seconds, 0.95), 3),
        "mean_s": round(statistics.mean(seconds), 3),
        "llm_calls": sum(t["trace"]["llm_calls"] for t in lines),
        "expectations_failed": sum(bool(t["expect_failures"]) for t in lines),
    }
    plain = plain or lines
    pairs = [(a, b) for a, b in zip(lines, plain, strict=True) if searched(a)]
    row["differs_from_sequential"] = [
        f"{a['conversation_id']}#{a['turn_index']}"
        for a, b in zip(lines, plain, strict=True)
        if (a["verdict"], [c["chunk_id"] for c in a["citations"]])
        != (b["verdict"], [c["chunk_id"] for c in b["citations"]])
    ]
    # the same turn, the same moment (interleaved): what the process adds to it
    added = [(a["trace"]["duration_ms"] - b["trace"]["duration_ms"]) / 1000 for a, b in pairs]
    row["p50_added_s"] = round(statistics.median(added), 3)
    row["delegated"] = f"{sum(delegated(t) for t in turns)}/{len(turns)}"
    return row


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scripts", default=",".join(SCRIPTS))
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/supportcrew-bench-processes"))
    args = parser.parse_args()
    settings = load_settings()
    runtimes = {}
    for engine, process in CONFIGS:
        data_dir = args.data_dir / f"{engine}-{process}"
        kb = KnowledgeBase.open(settings, data_dir)
        ingest_paths(kb, [ROOT / "examples" / "kb"], prune=True)
        kb.close()
        runtimes[engine, process] = build_runtime(settings, data_dir, engine=engine, process=process)
    conversations = [
        conversation
        for name in args.scripts.split(",")
        if name
        for conversation in load_script(ROOT / "examples" / "kickoff" / name).conversations
    ]
    lines: dict[tuple[str, str], list[dict[str, Any]]] = {config: [] for config in CONFIGS}
    try:
        for repeat in range(args.repeats):
            for conversation in conversations:
                for config in CONFIGS:  # interleaved: the four meet the same load
                    script = Script(conversations=[conversation])
                    lines[config] += run_script(script, runtimes[config], run_id=f"r{repeat}")
    finally:
        for runtime in runtimes.values():
            runtime.close()
    rows = []
    for engine, process in CONFIGS:
        plain = lines[engine, "sequential"]
        row = {"engine": engine, "process": process, **figures(lines[engine, process], plain)}
        base = figures(plain, None)["p50_s"]
        row["p50_vs_sequential"] = round(row["p50_s"] / base, 2) if base else None
        rows.append(row)
        print(json.dumps(row), flush=True)
    columns = (
        "turns",
        "searched",
        "p50_s",
        "p95_s",
        "p50_vs_sequential",
        "p50_added_s",
        "llm_calls",
        "delegated",
    )
    lines_md = [
        "# Sequential and hierarchical processes, embedded defaults",
        "",
        f"examples/kb; scripts {args.scripts} (x{args.repeats}), the four configurations "
        "interleaved per conversation. Seconds: searched turns' `duration_ms`. delegated: "
        "searched turns whose `manage` step handed the retrieve step to the retriever and "
        "finished the turn. p50_added_s: the median over searched turns of (this run's turn "
        "time - the same turn's sequential time, run beside it).",
        "",
        *table(
            ("engine", "process", *columns),
            ((r["engine"], r["process"], *(r.get(c, "") for c in columns)) for r in rows),
        ),
        "",
        *[
            f"- {r['engine']} hierarchical: {len(r['differs_from_sequential'])} turns differ "
            f"from sequential in verdict or citations"
            + (f" ({', '.join(r['differs_from_sequential'])})" if r["differs_from_sequential"] else "")
            for r in rows
            if r["process"] == "hierarchical"
        ],
    ]
    write_results("processes", lines_md, {f"{r['engine']} {r['process']}": r for r in rows})


if __name__ == "__main__":
    main()

"""Role ablation: does each role's model call earn its place with the local model?

For each role (reformulate, retrieve, judge, respond) the model path alone against all roles on
the evidence path, plus all on the model path, over examples/kickoff (support demo, returning
customer, follow-ups) and the doc2dial dev pack (never the test pack). The judge only speaks
where evidence is undecided, so its run widens the gate's undecided band (``--band``) around
the operating point; what it calls "sufficient" still needs a verified draft.

    python -m bench.roles [--engine crewai] [--scripts a.yaml,b.yaml] [--no-dev] [--band 0.15]

Writes bench/results/roles.{md,json}: answered right, refused right, LLM calls, prompt tokens,
p50 / p95 / max seconds per turn (every turn is bounded by ``turn_timeout_s``).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from agents.build import build_runtime
from agents.llm.factory import build_llm
from bench._common import ROOT, open_answer_set, table, write_results
from config.settings import ROLE_NAMES, Settings, load_settings
from evaluation.answers import answer_set_settings, evaluate_answers, percentile
from evaluation.kickoff import load_script, run_script
from storage.kb.ingest import ingest_paths
from storage.kb.knowledge_base import KnowledgeBase

DEV = ROOT.parent / "shared" / "datasets" / "doc2dial-support-dev"
SCRIPTS = ["support-demo.yaml", "returning-customer.yaml", "follow-ups.yaml"]


def configured(base: Settings, on_model: tuple[str, ...], band: float) -> Settings:
    roles = base.roles.model_copy(
        update={r: ("model" if r in on_model else "evidence") for r in ROLE_NAMES}
    )
    update: dict[str, Any] = {"roles": roles}
    if "judge" in on_model:
        gate = base.evidence.answerability
        update["evidence"] = base.evidence.model_copy(
            update={
                "answerability": gate.model_copy(
                    update={
                        "answer_at": min(1.0, gate.answer_at + band),
                        "refuse_below": max(0.0, gate.answer_at - band),
                    }
                )
            }
        )
    return base.model_copy(update=update)


def turn_figures(turns: list[dict[str, Any]]) -> dict[str, Any]:
    seconds = sorted(t["seconds"] for t in turns)
    answerable = [t for t in turns if t["want"] == "answered"]
    refusable = [t for t in turns if t["want"] in ("idk", "handoff")]
    return {
        "turns": len(turns),
        "answered_right": f"{sum(t['right'] for t in answerable)}/{len(answerable)}",
        "refused_right": f"{sum(t['right'] for t in refusable)}/{len(refusable)}",
        "llm_calls": round(statistics.mean(t["calls"] for t in turns), 2),
        "prompt_tokens": round(statistics.mean(t["tokens"] for t in turns)),
        "p50_s": round(percentile(seconds, 0.5), 2),
        "p95_s": round(percentile(seconds, 0.95), 2),
        "max_s": round(seconds[-1], 2),
    }


def kickoff_turns(
    settings: Settings, data_dir: Path, engine: str, llm: Any, scripts: list[str]
) -> list[dict[str, Any]]:
    kb = KnowledgeBase.open(settings, data_dir)
    ingest_paths(kb, [ROOT / "examples" / "kb"], prune=True)
    kb.close()
    runtime = build_runtime(settings, data_dir, engine=engine, process="sequential", llm=llm)
    turns = []
    try:
        for name in scripts:
            for line in run_script(load_script(ROOT / "examples" / "kickoff" / name), runtime):
                want = (line.get("expect") or {}).get("verdict")
                turns.append(
                    {
                        "set": name,
                        "want": want,
                        "right": not line["expect_failures"],
                        "calls": line["trace"]["llm_calls"],
                        "tokens": line["trace"]["prompt_tokens"],
                        "seconds": line["trace"]["duration_ms"] / 1000,
                    }
                )
    finally:
        runtime.close()
    return turns


def dev_turns(settings: Settings, data_dir: Path, engine: str, llm: Any) -> list[dict[str, Any]]:
    pack_settings = answer_set_settings(settings, DEV.name, data_dir)
    opened = open_answer_set(DEV, data_dir, pack_settings)
    answer_set = opened.answer_set
    opened.close()
    runtime = build_runtime(pack_settings, data_dir, engine=engine, process="sequential", llm=llm)
    try:
        rows = evaluate_answers(runtime, answer_set).rows
    finally:
        runtime.close()
    return [
        {
            "set": "doc2dial-dev",
            "want": "answered" if r["answerable"] else "idk",
            "right": r["right_source"] if r["answerable"] else r["verdict"] != "answered",
            "calls": r["llm_calls"],
            "tokens": 0,
            "seconds": r["seconds"],
        }
        for r in rows
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--engine", default="crewai")
    parser.add_argument("--scripts", default=",".join(SCRIPTS))
    parser.add_argument("--no-dev", action="store_true")
    parser.add_argument("--band", type=float, default=0.15)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/supportcrew-bench-roles"))
    args = parser.parse_args()
    base = load_settings()
    llm = build_llm(base.llm)
    plans: list[tuple[str, tuple[str, ...]]] = [
        ("all evidence", ()),
        *[(f"model: {r}", (r,)) for r in ROLE_NAMES],
        ("all model", ROLE_NAMES),
    ]
    rows = []
    for label, on_model in plans:
        settings = configured(base, on_model, args.band)
        data_dir = args.data_dir / label.replace(" ", "-").replace(":", "")  # fresh memory
        turns = kickoff_turns(
            settings, data_dir, args.engine, llm, [s for s in args.scripts.split(",") if s]
        )
        if not args.no_dev and DEV.exists():
            turns += dev_turns(settings, data_dir, args.engine, llm)
        row = {
            "config": label,
            **turn_figures(turns),
            "by_set": {
                name: turn_figures([t for t in turns if t["set"] == name])
                for name in dict.fromkeys(t["set"] for t in turns)
            },
        }
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "by_set"}), flush=True)
    columns = (
        "answered_right",
        "refused_right",
        "llm_calls",
        "prompt_tokens",
        "p50_s",
        "p95_s",
        "max_s",
    )
    lines = [
        f"# Role ablation ({args.engine}, sequential, local model, turn_timeout_s "
        f"{base.turn_timeout_s:g})",
        "",
        "Sets: examples/kickoff ("
        + ", ".join(args.scripts.split(","))
        + ")"
        + ("" if args.no_dev else " and doc2dial-support-dev")
        + ". Judge runs widen the "
        f"undecided band by ±{args.band}.",
        "",
        *table(("config", *columns), ((row["config"], *(row[c] for c in columns)) for row in rows)),
        "",
    ]
    for row in rows:
        lines.append(
            f"- {row['config']}: "
            + "; ".join(
                f"{name} {fig['answered_right']} answered right, {fig['refused_right']} refused right"
                for name, fig in row["by_set"].items()
            )
        )
    write_results("roles", lines, rows)


if __name__ == "__main__":
    main()

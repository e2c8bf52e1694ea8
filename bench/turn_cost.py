"""Cost per turn: our crew against a stock CrewAI crew, same local model, same script.

The stock crew is built as CrewAI's docs suggest: four agents, four tasks, Process.sequential,
a plain Qdrant search tool (dense search, no filters), and the model called as a plain chat
endpoint (no JSON-schema constraint, tools left to CrewAI's text prompting, as llama.cpp's
server does for SmolLM2's chat template).

    python -m bench.turn_cost [--script examples/kickoff/support-demo.yaml] [--data-dir DIR]
                              [--baseline-repo DIR]

``--baseline-repo`` points at another checkout (for example ``git worktree add /tmp/before
19f1414``): the same script runs there through its own ``main.py kickoff`` (both engines) in
the same run, so today's main and the change stand side by side.

Writes bench/results/turn_cost.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from crewai import Agent, Crew, Process, Task
from crewai.tools import BaseTool
from pydantic import BaseModel, Field, PrivateAttr

from agents.build import build_runtime
from agents.crewai.llm import crewai_llm
from agents.llm.local import LocalLlamaLLM, as_chat
from agents.roles import load_role_specs
from agents.usage import UsageLedger
from bench._common import ROOT, table, write_results
from config.settings import load_settings
from evaluation.kickoff import check, load_script, run_script
from storage.kb.ingest import ingest_paths
from storage.kb.knowledge_base import KnowledgeBase
from storage.qdrant.store import Nearest, Stage
from tasks.schemas import Citation, TurnResult


class StockLocalLLM(LocalLlamaLLM):
    """The same SmolLM2, called as a plain chat endpoint: no schema, tools not rendered."""

    def supports_function_calling(self) -> bool:
        return False

    def call(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> Any:
        chat = as_chat(messages)
        return self.complete(chat, None, purpose="stock") or "(empty)"


class SearchArgs(BaseModel):
    query: str = Field(description="what to search for")


class PlainQdrantSearch(BaseTool):
    """A plain Qdrant search tool as tutorials build it: dense top-3, no filters."""

    name: str = "qdrant_search"
    description: str = "Search the knowledge base for passages."
    args_schema: type[BaseModel] = SearchArgs
    _kb: KnowledgeBase = PrivateAttr()
    hits: list[list[str]] = Field(default_factory=list, exclude=True)

    def bind(self, kb: KnowledgeBase) -> PlainQdrantSearch:
        self._kb = kb
        return self

    def _run(self, query: str) -> str:
        vector = self._kb.encoders.dense.encode([query])[0].dense
        found = self._kb.store.query(self._kb.collection, Stage(Nearest("dense", vector), 3))
        self.hits.append([h.payload["source_id"] for h in found])
        return "\n\n".join(f"{h.payload['title']}: {h.payload['text']}" for h in found)


def stock_turn(llm: StockLocalLLM, tool: PlainQdrantSearch, question: str) -> TurnResult:
    specs = load_role_specs()
    agents = {
        name: Agent(
            role=s["role"],
            goal=s["goal"],
            backstory=s["backstory"],
            llm=crewai_llm(llm),
            tools=[tool] if name == "retriever" else [],
            verbose=False,
        )
        for name, s in specs.agents.items()
    }
    tasks = [
        Task(
            description=f"Rewrite the customer question as a search query: {question}",
            expected_output="A search query.",
            agent=agents["reformulator"],
        ),
        Task(
            description="Search the knowledge base with the query and return the passages.",
            expected_output="Relevant passages.",
            agent=agents["retriever"],
        ),
        Task(
            description=f"Do the passages answer: {question}? Say sufficient or insufficient.",
            expected_output="A verdict.",
            agent=agents["judge"],
        ),
        Task(
            description=f"Answer the customer: {question}",
            expected_output="A short answer.",
            agent=agents["responder"],
        ),
    ]
    calls_before = len(tool.hits)
    result = Crew(
        agents=list(agents.values()), tasks=tasks, process=Process.sequential, verbose=False
    ).kickoff()
    answer = str(result.raw)
    lowered = answer.lower()
    verdict = (
        "handoff"
        if re.search(r"\bhuman|agent will\b", lowered)
        else "idk"
        if re.search(r"don't know|do not know|could not find|no information", lowered)
        else "answered"
    )
    searched = {s for hits in tool.hits[calls_before:] for s in hits}
    citations = [Citation(source_id=s, chunk_id=s) for s in sorted(searched) if s.lower() in lowered]
    return TurnResult(session_id="stock", answer=answer, verdict=verdict, citations=citations)


def p50(values: list[float]) -> float:
    return round(statistics.median(values), 2) if values else 0.0


def summarize(rows: list[dict[str, Any]]) -> dict[str, float]:
    return {
        "answered_p50_s": p50([r["seconds"] for r in rows if r.get("verdict") == "answered"]),
        "idk_p50_s": p50([r["seconds"] for r in rows if r.get("verdict") == "idk"]),
        "max_s": round(max(r["seconds"] for r in rows), 2),
        "turns": len(rows),
        "llm_calls_per_turn": round(statistics.mean(r["llm_calls"] for r in rows), 2),
        "median_llm_calls": statistics.median(r["llm_calls"] for r in rows),
        "prompt_tokens_per_turn": round(statistics.mean(r["prompt_tokens"] for r in rows), 1),
        "seconds_per_turn": round(statistics.mean(r["seconds"] for r in rows), 2),
        "tool_calls_per_turn": round(statistics.mean(r["tool_calls"] for r in rows), 2),
        "correct": sum(r["correct"] for r in rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--script", type=Path, default=ROOT / "examples" / "kickoff" / "support-demo.yaml"
    )
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/supportcrew-turn-cost"))
    parser.add_argument("--baseline-repo", type=Path, default=None)
    args = parser.parse_args()
    settings = load_settings()
    script = load_script(args.script)

    kb = KnowledgeBase.open(settings, args.data_dir)
    ingest_paths(kb, [ROOT / "examples" / "kb"])
    kb.close()

    ours: dict[str, list[dict[str, Any]]] = {}
    for engine in ("crewai", "autogen"):
        runtime = build_runtime(settings, args.data_dir, engine=engine, process="sequential")
        ours[engine] = []
        for line in run_script(script, runtime):
            retrieve_steps = [s for s in line["trace"]["steps"] if s["name"] == "retrieve"]
            ours[engine].append(
                {
                    "turn": f"{line['conversation_id']}#{line['turn_index']}",
                    "llm_calls": line["trace"]["llm_calls"],
                    "prompt_tokens": line["trace"]["prompt_tokens"],
                    "seconds": line["trace"]["duration_ms"] / 1000,
                    "tool_calls": len(retrieve_steps),
                    "verdict": line["verdict"],
                    "correct": not line["expect_failures"],
                }
            )
        if engine == "crewai":
            runtime.close()
    kb = runtime.knowledge_base()

    stock: list[dict[str, Any]] = []
    llm = StockLocalLLM(model="local/smollm2-stock")
    tool = PlainQdrantSearch().bind(kb)
    for conversation in script.conversations:
        for index, turn in enumerate(conversation.turns):
            before = len(tool.hits)
            started = time.perf_counter()
            with UsageLedger.activate() as ledger:
                result = stock_turn(llm, tool, turn.user)
            stock.append(
                {
                    "turn": f"{conversation.id}#{index}",
                    "llm_calls": len(ledger.calls),
                    "prompt_tokens": ledger.prompt_tokens,
                    "seconds": time.perf_counter() - started,
                    "tool_calls": len(tool.hits) - before,
                    "verdict": result.verdict,
                    "correct": not check(turn.expect, result),
                }
            )
    runtime.close()

    systems = {"supportcrew on CrewAI": ours["crewai"], "supportcrew on AutoGen": ours["autogen"]}
    if args.baseline_repo:
        for engine in ("crewai", "autogen"):
            systems[f"before, {engine}"] = baseline_turns(
                args.baseline_repo, args.script, args.data_dir / "baseline", engine
            )
    systems["stock CrewAI crew"] = stock
    summary = {name: summarize(rows) for name, rows in systems.items()}
    keys = (
        "llm_calls_per_turn",
        "median_llm_calls",
        "prompt_tokens_per_turn",
        "seconds_per_turn",
        "answered_p50_s",
        "idk_p50_s",
        "max_s",
        "tool_calls_per_turn",
        "correct",
    )
    stock_figures = summary["stock CrewAI crew"]
    lines = [
        f"# Turn cost: {args.script.name}, SmolLM2-135M local, sequential",
        "",
        *table(
            (
                "per turn",
                *summary,
                *(f"{name} / stock" for name in summary if name != "stock CrewAI crew"),
            ),
            (
                (
                    key,
                    *(figures[key] for figures in summary.values()),
                    *(
                        f"{figures[key] / stock_figures[key]:.2f}" if stock_figures[key] else "-"
                        for name, figures in summary.items()
                        if name != "stock CrewAI crew"
                    ),
                )
                for key in keys
            ),
        ),
        "",
        f"`correct` counts turns (of {len(stock)}) whose script expectations all hold.",
        "",
    ]
    write_results("turn_cost", lines, {"script": args.script.name, "summary": summary, "turns": systems})


def baseline_turns(repo: Path, script: Path, data_dir: Path, engine: str) -> list[dict[str, Any]]:
    """The same script through another checkout's own kickoff command."""
    out = data_dir / f"{engine}.jsonl"
    data_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "main.py",
            "--data-dir",
            str(data_dir),
            "ingest",
            str(ROOT / "examples" / "kb"),
        ],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            sys.executable,
            "main.py",
            "--data-dir",
            str(data_dir),
            "kickoff",
            str(script),
            "--engine",
            engine,
            "--process",
            "sequential",
            "--output",
            str(out),
        ],
        cwd=repo,
        check=False,
        capture_output=True,
    )
    rows = []
    for raw in out.read_text().splitlines():
        line = json.loads(raw)
        rows.append(
            {
                "turn": f"{line['conversation_id']}#{line['turn_index']}",
                "llm_calls": line["trace"]["llm_calls"],
                "prompt_tokens": line["trace"]["prompt_tokens"],
                "seconds": line["trace"]["duration_ms"] / 1000,
                "tool_calls": sum(s["name"] == "retrieve" for s in line["trace"]["steps"]),
                "verdict": line["verdict"],
                "correct": not line["expect_failures"],
            }
        )
    return rows


if __name__ == "__main__":
    main()

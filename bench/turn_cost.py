"""Cost per turn: our crew against a stock CrewAI crew, same local model, same script.

The stock crew is built as CrewAI's docs suggest: four agents, four tasks, Process.sequential,
a plain Qdrant search tool (dense search, no filters), and the model called as a plain chat
endpoint (no JSON-schema constraint, tools left to CrewAI's text prompting, as llama.cpp's
server does for SmolLM2's chat template).

    python bench/turn_cost.py [--script examples/kickoff/support-demo.yaml] [--data-dir DIR]

Writes bench/results/turn_cost.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from config.telemetry import apply_telemetry_policy  # noqa: E402

apply_telemetry_policy()

from crewai import Agent, Crew, Process, Task  # noqa: E402
from crewai.tools import BaseTool  # noqa: E402
from pydantic import BaseModel, Field, PrivateAttr  # noqa: E402

from agents.kickoff import check, load_script, run_script  # noqa: E402
from agents.local_llm import LocalLlamaLLM, as_chat  # noqa: E402
from agents.roles import load_role_specs  # noqa: E402
from agents.runtime import build_runtime  # noqa: E402
from agents.usage import UsageLedger  # noqa: E402
from config.settings import load_settings  # noqa: E402
from storage.ingest import ingest_paths  # noqa: E402
from storage.knowledge_base import KnowledgeBase  # noqa: E402
from storage.store import Nearest, Stage  # noqa: E402
from tasks.schemas import Citation, TurnResult  # noqa: E402

RESULTS = ROOT / "bench" / "results"


class StockLocalLLM(LocalLlamaLLM):
    """The same SmolLM2, called as a plain chat endpoint: no schema, tools not rendered."""

    def supports_function_calling(self) -> bool:
        return False

    def call(self, messages: Any, tools: Any = None, callbacks: Any = None,
             available_functions: Any = None, from_task: Any = None, from_agent: Any = None,
             response_model: Any = None) -> Any:
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
    agents = {name: Agent(role=s["role"], goal=s["goal"], backstory=s["backstory"], llm=llm,
                          tools=[tool] if name == "retriever" else [], verbose=False)
              for name, s in specs.agents.items()}
    tasks = [
        Task(description=f"Rewrite the customer question as a search query: {question}",
             expected_output="A search query.", agent=agents["reformulator"]),
        Task(description="Search the knowledge base with the query and return the passages.",
             expected_output="Relevant passages.", agent=agents["retriever"]),
        Task(description=f"Do the passages answer: {question}? Say sufficient or insufficient.",
             expected_output="A verdict.", agent=agents["judge"]),
        Task(description=f"Answer the customer: {question}",
             expected_output="A short answer.", agent=agents["responder"]),
    ]
    calls_before = len(tool.hits)
    result = Crew(agents=list(agents.values()), tasks=tasks, process=Process.sequential,
                  verbose=False).kickoff()
    answer = str(result.raw)
    lowered = answer.lower()
    verdict = ("handoff" if re.search(r"\bhuman|agent will\b", lowered) else
               "idk" if re.search(r"don't know|do not know|could not find|no information",
                                  lowered) else "answered")
    searched = {s for hits in tool.hits[calls_before:] for s in hits}
    citations = [Citation(source_id=s, chunk_id=s) for s in sorted(searched)
                 if s.lower() in lowered]
    return TurnResult(session_id="stock", answer=answer, verdict=verdict, citations=citations)


def summarize(rows: list[dict[str, Any]]) -> dict[str, float]:
    return {
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
    parser.add_argument("--script", type=Path,
                        default=ROOT / "examples" / "kickoff" / "support-demo.yaml")
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/supportcrew-turn-cost"))
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
            ours[engine].append({"turn": f"{line['conversation_id']}#{line['turn_index']}",
                                 "llm_calls": line["trace"]["llm_calls"],
                                 "prompt_tokens": line["trace"]["prompt_tokens"],
                                 "seconds": line["trace"]["duration_ms"] / 1000,
                                 "tool_calls": len(retrieve_steps),
                                 "correct": not line["expect_failures"]})
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
            stock.append({"turn": f"{conversation.id}#{index}", "llm_calls": len(ledger.calls),
                          "prompt_tokens": ledger.prompt_tokens,
                          "seconds": time.perf_counter() - started,
                          "tool_calls": len(tool.hits) - before,
                          "correct": not check(turn.expect, result)})
    runtime.close()

    summary = {"crewai": summarize(ours["crewai"]), "autogen": summarize(ours["autogen"]),
               "stock": summarize(stock)}
    result = {"script": args.script.name, "summary": summary, "turns": {**ours, "stock": stock}}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "turn_cost.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [f"# Turn cost: {args.script.name}, SmolLM2-135M local, sequential", "",
             "| per turn | supportcrew on CrewAI | supportcrew on AutoGen | stock CrewAI crew "
             "| CrewAI/stock | AutoGen/stock |", "|---|---|---|---|---|---|"]
    for key in ("llm_calls_per_turn", "median_llm_calls", "prompt_tokens_per_turn",
                "seconds_per_turn", "tool_calls_per_turn", "correct"):
        a, g, b = summary["crewai"][key], summary["autogen"][key], summary["stock"][key]
        ratios = [f"{x / b:.2f}" if b else "-" for x in (a, g)]
        lines.append(f"| {key} | {a} | {g} | {b} | {ratios[0]} | {ratios[1]} |")
    lines.append(f"\n`correct` counts turns (of {len(stock)}) whose script expectations all "
                 "hold.\n")
    (RESULTS / "turn_cost.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()

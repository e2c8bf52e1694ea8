"""CrewAI and AutoGen run the same roles to the same results (scripted LLM test double)."""

from __future__ import annotations

import pytest

from agents.kickoff import load_script, run_script
from agents.runtime import TurnRuntime
from tests.conftest import REPO
from tests.helpers import answering_llm, scripted_runtime
from tests.scripted_llm import ScriptedLLM

pytestmark = pytest.mark.integration


def scripted() -> ScriptedLLM:
    return answering_llm(
        Reformulation=[{"standalone_query": "refunds for annual plans", "expansions": []}],
        text=["responder"], tools=[{"name": "none", "arguments": {}}])


def runtime_for(engine: str, process: str, settings, example_kb) -> TurnRuntime:
    return scripted_runtime(settings, example_kb, scripted(), engine=engine, process=process)


def outcomes(runtime: TurnRuntime) -> list[tuple]:
    script = load_script(REPO / "examples" / "kickoff" / "support-demo.yaml")
    return [(line["conversation_id"], line["turn_index"], line["verdict"],
             tuple(c["source_id"] for c in line["citations"]), tuple(line["expect_failures"]),
             line["trace"]["llm_calls"])
            for line in run_script(script, runtime)]


def test_both_engines_give_identical_verdicts_and_citations(settings, example_kb):
    crewai = outcomes(runtime_for("crewai", "sequential", settings, example_kb))
    autogen = outcomes(runtime_for("autogen", "sequential", settings, example_kb))
    assert [row[:5] for row in crewai] == [row[:5] for row in autogen]
    assert [row[5] for row in crewai] == [row[5] for row in autogen]  # same LLM calls


def test_autogen_selector_is_validated_and_falls_back(settings, example_kb):
    runtime = runtime_for("autogen", "hierarchical", settings, example_kb)
    from agents.turn import run_turn
    from tasks.schemas import TurnRequest

    result = run_turn(TurnRequest(session_id="p", message="How long does a refund take?",
                                  slots={"tier": "basic", "access_level": "customer"}), runtime)
    assert result.verdict == "answered" and result.citations
    notes = " ".join(result.trace.notes)
    assert "selector" in notes

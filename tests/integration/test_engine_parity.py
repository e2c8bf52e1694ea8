"""CrewAI and AutoGen run the same roles to the same results (scripted LLM test double)."""

from __future__ import annotations

import pytest

from agents.roles import load_role_specs
from storage.retrieval import QdrantRetriever
from tasks.evidence import EvidenceScorer
from tasks.kickoff import load_script, run_script
from tasks.runtime import TurnRuntime, build_engine
from tests.conftest import REPO
from tests.scripted_llm import ScriptedLLM

pytestmark = pytest.mark.integration
REFUND = ("Once a refund is approved, the money is returned to the original payment method "
          "within 5 to 7 business days.")


def scripted() -> ScriptedLLM:
    return ScriptedLLM(model="scripted").script(
        Reformulation=[{"standalone_query": "refunds for annual plans", "expansions": []}],
        Judgement=[{"verdict": "sufficient", "reason": "ok"}],
        DraftAnswer=[{"answer": REFUND, "passage_ids": [1], "handoff": False}],
        text=["responder"], tools=[{"name": "none", "arguments": {}}])


def runtime_for(engine: str, process: str, settings, example_kb) -> TurnRuntime:
    scorer = EvidenceScorer(example_kb.encoders, settings.evidence)
    return TurnRuntime(settings, QdrantRetriever(kb=example_kb),
                       build_engine(engine, scripted(), load_role_specs(), process), scorer)


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
    from tasks.schemas import TurnRequest
    from tasks.turn import run_turn

    result = run_turn(TurnRequest(session_id="p", message="How long does a refund take?",
                                  slots={"tier": "basic", "access_level": "customer"}), runtime)
    assert result.verdict == "answered" and result.citations
    notes = " ".join(result.trace.notes)
    assert "selector" in notes

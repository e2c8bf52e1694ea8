"""CrewAI and AutoGen run the same turn to the same results.

The test double computes every reply from the prompt it receives (``prompt_driven_llm``), and
each engine renders the prompts, runs the agents and follows the gates through its own
process (a Flow's routers, a GraphFlow's edges): an engine that loses an input, skips a step
or routes differently gets different answers, citations or steps, and this test fails.
"""

from __future__ import annotations

import pytest

from evaluation.kickoff import load_script, run_script
from tests.conftest import REPO
from tests.helpers import prompt_driven_llm, scripted_runtime
from tests.integration.test_turn import undecided

pytestmark = [pytest.mark.integration, pytest.mark.serial]  # both engines' steps within one turn's time
SCRIPT = REPO / "examples" / "kickoff" / "support-demo.yaml"
# CrewAI retries a task under its guardrail inside one "respond" step; AutoGen's responder
# speaks again ("revise"). Both record every support check and every model call.
ENGINE_SHAPED = {"respond", "revise"}


def outcomes(engine: str, settings, example_kb, process: str = "sequential") -> list[tuple]:
    runtime = scripted_runtime(settings, example_kb, prompt_driven_llm(), engine=engine, process=process)
    return [
        (
            line["conversation_id"],
            line["turn_index"],
            line["verdict"],
            line["answer"],
            tuple(c["source_id"] for c in line["citations"]),
            tuple(
                (
                    s["name"],
                    s["detail"].get("route", ""),
                    s["detail"].get("unsupported"),
                    s["detail"].get("delegated_to"),
                )
                for s in line["trace"]["steps"]
                if s["name"] not in ENGINE_SHAPED
            ),
            tuple(c["role"] for c in line["trace"]["calls"]),
        )
        for line in run_script(load_script(SCRIPT), runtime)
    ]


@pytest.mark.parametrize("evidence", ["calibrated", "always undecided"])
def test_both_engines_give_the_same_answers_citations_and_steps(settings, example_kb, evidence):
    turn_settings = settings if evidence == "calibrated" else undecided(settings)
    crewai = outcomes("crewai", turn_settings, example_kb)
    autogen = outcomes("autogen", turn_settings, example_kb)
    assert len(crewai) == 6
    for ours, theirs in zip(crewai, autogen, strict=True):
        assert ours == theirs
    verdicts = [row[2] for row in crewai]
    assert "answered" in verdicts and "handoff" in verdicts
    if evidence == "always undecided":  # the judge's prompt-driven verdicts decide here
        assert any("judge" in row[6] for row in crewai)


@pytest.mark.parametrize("evidence", ["calibrated", "always undecided"])
def test_both_managers_hand_the_same_steps_to_the_same_coworkers(settings, example_kb, evidence):
    """``process: hierarchical``: CrewAI's manager crew and AutoGen's selector team, both on the
    step table's policy, delegate the same steps and reach the same results, as sequential."""
    turn_settings = settings if evidence == "calibrated" else undecided(settings)
    crewai = outcomes("crewai", turn_settings, example_kb, "hierarchical")
    autogen = outcomes("autogen", turn_settings, example_kb, "hierarchical")
    sequential = outcomes("crewai", turn_settings, example_kb)
    for ours, theirs, plain in zip(crewai, autogen, sequential, strict=True):
        assert ours == theirs
        assert ours[:5] == plain[:5]  # verdict, answer, citations: the sequential process's
    searched = [row for row in crewai if any(step[0] == "retrieve" for step in row[5])]
    assert searched and all(
        "retriever" in next(step[3] for step in row[5] if step[0] == "manage") for row in searched
    )

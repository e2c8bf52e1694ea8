"""Every turn has a deadline: past it, evidence decides and the trace says what ran out.

A slow test double stands in for a model that takes too long (its replies sleep); wall time is
measured in bench/, not asserted here.
"""

from __future__ import annotations

import time

import pytest

from tests.helpers import REFUND, scripted_runtime
from tests.integration.test_turn import ask
from tests.scripted_llm import ScriptedLLM

pytestmark = [pytest.mark.integration, pytest.mark.serial]  # each turn has a few seconds
ENGINES = ["crewai", "autogen"]


def slow(seconds: float, reply: dict):
    def answer(_prompt: str) -> dict:
        time.sleep(seconds)
        return reply

    return answer


def search(prompt: str) -> dict:
    return {"name": "search_knowledge_base", "arguments": {"queries": ["refund time"]}}


def warm_up(settings, example_kb, engine):
    """One turn first, so a cold start (imports, first encodings) does not eat the deadline."""
    runtime = scripted_runtime(
        settings, example_kb, ScriptedLLM(model="scripted"), engine=engine, roles="evidence"
    )
    ask(runtime, "How long does a refund take?")


def with_timeout(settings, seconds: float):
    return settings.model_copy(update={"turn_timeout_s": seconds})


@pytest.mark.parametrize("engine", ENGINES)
def test_a_model_that_hangs_ends_the_turn_with_the_evidence_based_answer(settings, example_kb, engine):
    hanging = ScriptedLLM(model="scripted").script(
        tools=[search], DraftAnswer=[slow(8.0, {"answer": REFUND, "passage_ids": [1]})]
    )
    warm_up(settings, example_kb, engine)
    runtime = scripted_runtime(with_timeout(settings, 3.0), example_kb, hanging, engine=engine)
    result = ask(runtime, "How long does a refund take?")
    assert result.verdict == "answered"
    assert "5 to 7 business days" in result.answer
    assert [c.source_id for c in result.citations] == ["billing/refunds.md"]
    notes = " ".join(result.trace.notes)
    assert "deadline: the model calls' time (2.25 of 3 s) ran out during respond" in notes


@pytest.mark.parametrize("engine", ENGINES)
def test_roles_after_the_deadline_take_their_evidence_path(settings, example_kb, engine):
    def search_until_the_deadline(prompt: str) -> dict:  # a call cut short at the deadline
        from agents.deadline import expired

        while not expired():
            time.sleep(0.02)
        return search(prompt)

    sleepy_search = ScriptedLLM(model="scripted").script(
        tools=[search_until_the_deadline], DraftAnswer=[{"answer": REFUND, "passage_ids": [1]}]
    )
    warm_up(settings, example_kb, engine)
    runtime = scripted_runtime(with_timeout(settings, 1.0), example_kb, sleepy_search, engine=engine)
    result = ask(runtime, "How long does a refund take?")
    assert result.verdict == "answered" and "5 to 7 business days" in result.answer
    # the responder is never asked after the deadline: either it took its evidence path, or
    # (on a loaded machine) the turn was already ended from the evidence at the hard stop
    notes = result.trace.notes
    assert "deadline: respond took the evidence path" in notes or any(
        n.startswith("deadline: the model calls' time (0.75 of 1 s) ran out during") for n in notes
    ), notes
    assert not any(call.role == "responder" for call in result.trace.calls)


@pytest.mark.parametrize("engine", ENGINES)
def test_an_unanswerable_question_past_the_deadline_is_refused(settings, example_kb, engine):
    hanging = ScriptedLLM(model="scripted").script(
        tools=[lambda prompt: (time.sleep(3.0), search(prompt))[1]]
    )
    runtime = scripted_runtime(with_timeout(settings, 1.0), example_kb, hanging, engine=engine)
    result = ask(runtime, "Do you offer a student discount?")
    assert result.verdict == "idk" and not result.citations
    assert any(
        n.startswith("deadline: the model calls' time (0.75 of 1 s) ran out during retrieve")
        for n in result.trace.notes
    ), result.trace.notes


@pytest.mark.parametrize("engine", ENGINES)
def test_an_answerable_question_past_the_deadline_before_any_search_is_answered(
    settings, example_kb, engine
):
    """The outcome is the evidence's, not the machine's load: a model that holds the turn
    past its deadline before anything was searched still gets the evidence path's search."""
    hanging = ScriptedLLM(model="scripted").script(
        tools=[lambda prompt: (time.sleep(3.0), search(prompt))[1]]
    )
    runtime = scripted_runtime(with_timeout(settings, 1.0), example_kb, hanging, engine=engine)
    result = ask(runtime, "How long does a refund take?")
    assert result.verdict == "answered" and "5 to 7 business days" in result.answer
    assert [c.source_id for c in result.citations] == ["billing/refunds.md"]
    late = [s for s in result.trace.steps if s.name == "retrieve" and s.detail.get("late")]
    assert late and "deadline passed" in late[0].detail["searched_by"]


def test_progress_is_told_each_step_as_it_starts(settings, example_kb):
    from agents.turn import run_turn
    from tasks.schemas import TurnRequest

    runtime = scripted_runtime(settings, example_kb, ScriptedLLM(model="scripted"), roles="evidence")
    seen: list[str] = []
    result = run_turn(
        TurnRequest(
            session_id="p",
            message="How long does a refund take?",
            slots={"tier": "basic", "access_level": "customer"},
        ),
        runtime,
        on_step=seen.append,
    )
    assert result.verdict == "answered"
    assert seen[:1] == ["context"] and "retrieve" in seen and "evidence_gate" in seen
    assert seen.index("retrieve") < seen.index("evidence_gate") < seen.index("respond")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_framework_that_lingers_after_the_model_time_does_not_hold_the_turn(
    settings, example_kb, engine
):
    """A framework still inside a model step after the model calls' time (a call that does
    not stop, a manager retrying) is not waited for up to the deadline: the evidence path
    finishes the turn in the reserve before it, whatever the load makes the evidence cost."""
    lingering = ScriptedLLM(model="scripted").script(
        tools=[lambda prompt: (time.sleep(6.0), search(prompt))[1]]
    )
    warm_up(settings, example_kb, engine)
    runtime = scripted_runtime(with_timeout(settings, 4.0), example_kb, lingering, engine=engine)
    started = time.time()
    result = ask(runtime, "How long does a refund take?")
    assert result.verdict == "answered" and "5 to 7 business days" in result.answer
    assert any(
        n.startswith("deadline: the model calls' time (3 of 4 s) ran out during retrieve")
        for n in result.trace.notes
    ), result.trace.notes
    # the retriever's request, still running when the turn was taken over, is counted
    assert result.trace.llm_calls >= 1
    assert "1 model request(s) still in flight at the turn's end" in result.trace.notes
    late = [s for s in result.trace.steps if s.name == "retrieve" and s.detail.get("late")]
    # model calls end 1 s before the deadline; the evidence path starts half a second later
    assert late and late[0].at < started + 4.0, (late, started)

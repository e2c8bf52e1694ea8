"""The hierarchical processes: CrewAI's manager crew and AutoGen's SelectorGroupChat, on the
success path (a scripted manager/selector that delegates right) and the failure paths."""

from __future__ import annotations

import pytest

from tests.helpers import REFUND, managed_crew_llm, scripted_runtime
from tests.integration.test_turn import BASIC, SEARCH, ask, roles, steps, undecided
from tests.scripted_llm import ScriptedLLM

pytestmark = pytest.mark.integration
QUESTION = "How long does a refund take?"


def crewai_manager(settings, example_kb, llm):
    return scripted_runtime(settings, example_kb, llm, process="hierarchical")


def test_crewai_manager_that_delegates_right_owns_the_turn(settings, example_kb):
    result = ask(crewai_manager(settings, example_kb, managed_crew_llm()), QUESTION)
    assert result.verdict == "answered" and result.answer == REFUND, result.trace.notes
    [manage] = steps(result, "manage")
    assert manage.detail["delegated_to"] == ["reformulator", "retriever", "judge", "responder"]
    assert manage.detail["searches"] == 1
    assert steps(result, "manager_check")[0].detail["accepted"] is True
    assert not steps(result, "reformulate"), "the sequential path did not run"
    assert [s.name for s in result.trace.steps][-2:] == ["manager_check", "verify"]
    calls = roles(result)
    assert calls[0] == "manager" and "search" not in calls
    assert {"reformulator", "retriever", "judge", "responder"} <= set(calls)


def test_crewai_manager_that_gives_the_search_to_the_wrong_coworker_falls_back(settings, example_kb):
    llm = managed_crew_llm(delegate={"Knowledge base retriever": "Evidence judge"})
    result = ask(crewai_manager(settings, example_kb, llm), QUESTION)
    [manage] = steps(result, "manage")
    assert "retriever" not in manage.detail["delegated_to"] and manage.detail["searches"] == 0
    check = steps(result, "manager_check")[0].detail
    assert check == {"accepted": False, "why": "the retriever coworker never searched"}
    names = [s.name for s in result.trace.steps]
    assert names.index("manager_check") < names.index("retrieve")  # then the sequential path
    assert result.verdict == "answered" and "5 to 7 business days" in result.answer
    assert {"manager", "retriever", "responder"} <= set(roles(result))


def test_crewai_manager_whose_draft_the_evidence_does_not_support_falls_back(settings, example_kb):
    llm = managed_crew_llm(draft="Refunds take 90 days and cost a $50 fee.")
    result = ask(crewai_manager(settings, example_kb, llm), QUESTION)
    check = steps(result, "manager_check")[0].detail
    assert check["accepted"] is False and "unsupported" in check["why"]
    assert "90 days" not in result.answer and "5 to 7 business days" in result.answer


def test_crewai_manager_exception_falls_back_with_the_reason(settings, example_kb):
    llm = ScriptedLLM(model="scripted").script(
        tools=["{{{ not a call"], DraftAnswer=[{"answer": REFUND}]
    )
    result = ask(crewai_manager(settings, example_kb, llm), QUESTION)
    check = steps(result, "manager_check")[0].detail
    assert check["accepted"] is False
    assert any(n.startswith("manager: ") and "sequential path" in n for n in result.trace.notes)
    assert result.verdict == "answered"


def selector(settings, example_kb, choice, turn_settings=None):
    llm = ScriptedLLM(model="scripted").script(
        text=[choice],
        tools=[SEARCH],
        Reformulation=[{"standalone_query": "refund time"}],
        Judgement=[{"verdict": "sufficient", "reason": "ok"}],
        DraftAnswer=[{"answer": REFUND, "passage_ids": [1]}],
    )
    return scripted_runtime(
        turn_settings or settings, example_kb, llm, engine="autogen", process="hierarchical"
    )


def test_selector_follows_evidence_without_asking_the_model_when_it_can(settings, example_kb):
    result = ask(selector(settings, example_kb, "judge"), QUESTION)
    assert result.verdict == "answered" and result.answer == REFUND
    assert roles(result) == ["retriever", "responder"]  # no selector call, no judge call


def test_selector_lets_the_model_choose_only_when_evidence_is_undecided(settings, example_kb):
    result = ask(selector(settings, example_kb, "judge", undecided(settings)), QUESTION)
    assert roles(result) == ["retriever", "selector", "judge", "responder"]
    assert "selector: the model picked judge among ['judge', 'reformulator']" in result.trace.notes
    assert steps(result, "judge_gate")[0].detail["route"] == "answer"


def test_selector_model_choosing_a_new_query_runs_another_round(settings, example_kb):
    result = ask(selector(settings, example_kb, "reformulator", undecided(settings)), QUESTION)
    rounds = [s.detail["round"] for s in steps(result, "reformulate") if "skipped" not in s.detail]
    assert rounds == list(range(1, settings.max_rounds + 1))  # bounded by max_rounds ...
    assert len(steps(result, "evidence_gate")) == settings.max_rounds + 1
    assert roles(result).count("judge") == 1  # ... then only the judge was left to choose
    assert sum("new query instead of the judge" in n for n in result.trace.notes) == 2


def test_selector_model_picking_out_of_turn_is_traced_and_corrected(settings, example_kb):
    result = ask(selector(settings, example_kb, "responder", undecided(settings)), QUESTION)
    assert "responder was picked out of turn (route 'ask_judge'); it did nothing" in result.trace.notes
    assert any(
        n.startswith("selector: responder spoke") and n.endswith("corrected to judge")
        for n in result.trace.notes
    )
    assert roles(result) == ["retriever", "selector", "judge", "responder"]
    assert result.verdict == "answered"


@pytest.mark.parametrize("engine", ["crewai", "autogen"])
def test_hierarchical_unanswerable_question_is_still_refused(settings, example_kb, engine):
    llm = (
        managed_crew_llm()
        if engine == "crewai"
        else ScriptedLLM(model="scripted").script(tools=[SEARCH], text=["judge"])
    )
    runtime = scripted_runtime(settings, example_kb, llm, engine=engine, process="hierarchical")
    result = ask(runtime, "Do you offer a student discount?", slots=BASIC)
    assert result.verdict == "idk" and not result.citations

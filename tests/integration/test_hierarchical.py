"""The hierarchical processes: CrewAI's ``Process.hierarchical`` crew and AutoGen's
``SelectorGroupChat``, whose manager hands each step to a coworker in the step table's order.

With the table's policy (the default with the local model) the manager makes no model call;
with the model as manager (``manager: model``, here the scripted test double) the model picks
and a pick off the table is refused, traced and corrected. Retrieval, evidence and
verification are real (embedded Qdrant, ONNX models)."""

from __future__ import annotations

import time

import pytest

from agents.manage import POLICY
from tests.helpers import REFUND, managed_crew_llm, scripted_runtime
from tests.integration.test_turn import SEARCH, ask, roles, steps, undecided
from tests.scripted_llm import ScriptedLLM

pytestmark = pytest.mark.integration
QUESTION = "How long does a refund take?"
ENGINES = ["crewai", "autogen"]


def managed(settings, example_kb, llm, engine="crewai", manager="policy", roles_on="model"):
    turn_settings = settings.model_copy(update={"manager": manager})
    return scripted_runtime(
        turn_settings, example_kb, llm, engine=engine, process="hierarchical", roles=roles_on
    )


def manage_step(result):
    [step] = steps(result, "manage")
    return step.detail


def answering_roles():
    return ScriptedLLM(model="scripted").script(
        tools=[SEARCH],
        Reformulation=[{"standalone_query": "refund time"}],
        Judgement=[{"verdict": "sufficient", "reason": "ok"}],
        DraftAnswer=[{"answer": REFUND, "passage_ids": [1]}],
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_the_policy_manager_hands_each_step_to_its_coworker_without_a_model_call(
    settings, example_kb, engine
):
    result = ask(managed(settings, example_kb, answering_roles(), engine), QUESTION)
    assert result.verdict == "answered" and result.answer == REFUND, result.trace.notes
    detail = manage_step(result)
    assert detail["manager"] == POLICY and detail["completed"] is True
    assert detail["delegated_to"] == ["retriever", "responder"]
    assert {d["ran"] for d in detail["delegations"]} == {"model"}
    names = [s.name for s in result.trace.steps]
    assert names[:2] == ["context", "manage"]  # the manager's step, then the work it handed out
    assert names.index("retrieve") < names.index("evidence_gate") < names.index("respond")
    assert steps(result, "retrieve")[0].detail["searched_by"] == "retriever agent"
    assert roles(result) == ["retriever", "responder"]  # no manager or selector call


@pytest.mark.parametrize("engine", ENGINES)
def test_with_undecided_evidence_the_policy_hands_the_judge_its_step(settings, example_kb, engine):
    runtime = managed(undecided(settings), example_kb, answering_roles(), engine)
    result = ask(runtime, QUESTION)
    assert manage_step(result)["delegated_to"] == ["retriever", "judge", "responder"]
    assert roles(result) == ["retriever", "judge", "responder"]
    assert steps(result, "judge_gate")[0].detail["route"] == "answer"


@pytest.mark.parametrize("engine", ENGINES)
def test_roles_on_their_evidence_path_are_still_handed_their_steps(settings, example_kb, engine):
    """The shipped default with the local model: no model call at all, the retriever agent
    searches with its tool, the same answer as the sequential process."""
    llm = ScriptedLLM(model="scripted")  # never asked
    result = ask(managed(settings, example_kb, llm, engine, roles_on="evidence"), QUESTION)
    sequential = ask(
        scripted_runtime(settings, example_kb, llm, engine=engine, roles="evidence"), QUESTION
    )
    detail = manage_step(result)
    assert detail["delegated_to"] == ["retriever", "responder"]
    assert {d["ran"] for d in detail["delegations"]} == {"evidence path"}
    assert steps(result, "retrieve")[0].detail["searched_by"] == "retriever agent"
    assert result.trace.llm_calls == 0 and not llm.seen
    assert (result.verdict, result.answer) == (sequential.verdict, sequential.answer)
    assert [c.chunk_id for c in result.citations] == [c.chunk_id for c in sequential.citations]


@pytest.mark.parametrize("engine", ENGINES)
def test_an_unanswerable_question_is_searched_again_then_refused(settings, example_kb, engine):
    runtime = managed(settings, example_kb, answering_roles(), engine)
    result = ask(runtime, "Do you offer a student discount?")
    assert result.verdict == "idk" and not result.citations
    # each round the table's retry hands a new query to the reformulator, then the search
    again = ["reformulator", "retriever"] * settings.max_rounds
    assert manage_step(result)["delegated_to"] == ["retriever", *again]
    assert len(steps(result, "evidence_gate")) == settings.max_rounds + 1


@pytest.mark.parametrize("engine", ENGINES)
def test_a_retrieval_outage_inside_a_delegation_gives_the_connection_message(
    settings, example_kb, monkeypatch, engine
):
    runtime = managed(settings, example_kb, answering_roles(), engine)

    def down(*_args, **_kwargs):
        raise ConnectionError("qdrant unreachable")

    monkeypatch.setattr(runtime.retriever, "search_queries", down)
    result = ask(runtime, QUESTION)
    assert result.verdict == "error" and result.answer == settings.messages.connection_problem
    assert result.failure is not None and result.failure.kind == "outage"


# -- CrewAI, the model as manager --------------------------------------------------------------


def test_crewai_model_manager_that_delegates_right_owns_the_turn(settings, example_kb):
    result = ask(managed(settings, example_kb, managed_crew_llm(), manager="model"), QUESTION)
    assert result.verdict == "answered" and result.answer == REFUND, result.trace.notes
    detail = manage_step(result)
    assert detail["manager"] == "model: scripted" and detail["completed"] is True
    assert detail["delegated_to"] == ["retriever", "responder"]
    assert detail["off_table"] == 0 and [p["picked"] for p in detail["picks"]] == detail["delegated_to"]
    calls = roles(result)
    assert calls[0] == "manager" and {"retriever", "responder"} <= set(calls)


def test_crewai_model_manager_picking_the_wrong_coworker_is_refused_and_traced(settings, example_kb):
    llm = managed_crew_llm(delegate={"Knowledge base retriever": "Evidence judge"})
    result = ask(managed(settings, example_kb, llm, manager="model"), QUESTION)
    detail = manage_step(result)
    assert detail["completed"] is False and detail["delegated_to"] == []
    assert detail["off_table"] >= 1 and not any(p["kept"] for p in detail["picks"])
    assert "before handing the retrieve step to the retriever" in detail["why"]
    assert any(n.startswith("manager: ") and "finish it from there" in n for n in result.trace.notes)
    # the turn's own steps took over where the table stood: never quietly
    names = [s.name for s in result.trace.steps]
    assert names.index("manage") < names.index("retrieve")
    assert result.verdict == "answered" and "5 to 7 business days" in result.answer


def test_crewai_model_manager_whose_draft_is_unsupported_gets_one_revision(settings, example_kb):
    llm = managed_crew_llm(draft="Refunds take 90 days and cost a $50 fee.")
    result = ask(managed(settings, example_kb, llm, manager="model"), QUESTION)
    assert manage_step(result)["delegated_to"] == ["retriever", "responder", "responder"]
    assert steps(result, "revise")
    assert "90 days" not in result.answer and "5 to 7 business days" in result.answer


def test_crewai_model_manager_that_never_delegates_says_so(settings, example_kb):
    llm = ScriptedLLM(model="scripted").script(
        tools=["{{{ not a call"], DraftAnswer=[{"answer": REFUND, "passage_ids": [1]}]
    )
    result = ask(managed(settings, example_kb, llm, manager="model"), QUESTION)
    detail = manage_step(result)
    assert detail["completed"] is False and detail["delegated_to"] == []
    assert any(n.startswith("manager: ") for n in result.trace.notes)
    assert result.verdict == "answered"


# -- AutoGen, the model as selector -----------------------------------------------------------


def selector(settings, example_kb, choices, turn_settings=None):
    llm = ScriptedLLM(model="scripted").script(
        text=choices,
        tools=[SEARCH],
        Reformulation=[{"standalone_query": "refund time"}],
        Judgement=[{"verdict": "sufficient", "reason": "ok"}],
        DraftAnswer=[{"answer": REFUND, "passage_ids": [1]}],
    )
    return managed(turn_settings or settings, example_kb, llm, "autogen", manager="model")


def test_autogen_model_selector_picks_each_coworker_and_the_trace_shows_it(settings, example_kb):
    result = ask(selector(settings, example_kb, ["retriever", "responder"]), QUESTION)
    assert result.verdict == "answered" and result.answer == REFUND
    detail = manage_step(result)
    assert detail["manager"] == "model: scripted"
    assert detail["delegated_to"] == ["retriever", "responder"]
    assert [(p["picked"], p["kept"]) for p in detail["picks"]] == [
        ("retriever", True),
        ("responder", True),
    ]
    assert roles(result) == ["selector", "retriever", "selector", "responder"]


def test_autogen_model_selector_choosing_a_new_query_runs_another_round(settings, example_kb):
    picks = ["retriever", "reformulator", "retriever", "reformulator", "retriever", "judge", "responder"]
    runtime = selector(settings, example_kb, picks, undecided(settings))
    result = ask(runtime, QUESTION)
    rounds = [s.detail["round"] for s in steps(result, "reformulate") if "skipped" not in s.detail]
    assert rounds == list(range(1, settings.max_rounds + 1))  # bounded by max_rounds ...
    assert len(steps(result, "evidence_gate")) == settings.max_rounds + 1
    assert roles(result).count("judge") == 1  # ... then only the judge was left to choose
    assert sum("new query instead of the judge" in n for n in result.trace.notes) == 2


def test_autogen_model_selector_picking_out_of_turn_is_traced_and_corrected(settings, example_kb):
    result = ask(selector(settings, example_kb, ["retriever", "judge", "responder"]), QUESTION)
    assert "judge was picked out of turn (route 'answer'); it did nothing" in result.trace.notes
    assert any(
        n.startswith("selector: judge spoke") and n.endswith("corrected to responder")
        for n in result.trace.notes
    )
    detail = manage_step(result)
    assert detail["off_table"] == 1 and detail["delegated_to"] == ["retriever", "responder"]
    assert result.verdict == "answered" and result.answer == REFUND


@pytest.mark.serial
def test_autogen_selector_past_the_deadline_is_the_table(settings, example_kb, monkeypatch):
    monkeypatch.setattr("agents.autogen.engine.expired", lambda: True)
    result = ask(selector(settings, example_kb, ["judge"]), QUESTION)
    assert "selector" not in roles(result)
    assert manage_step(result)["delegated_to"][0] == "retriever"


@pytest.mark.serial
@pytest.mark.parametrize("engine", ENGINES)
def test_a_manager_still_at_work_at_the_deadline_says_so_in_the_trace(settings, example_kb, engine):
    """A coworker's model hangs: the turn ends at its deadline with the evidence-based answer,
    and its trace keeps the manage step as far as it got (never a quiet sequential run)."""

    def hang(_prompt: str) -> dict:
        time.sleep(8.0)
        return {"answer": REFUND, "passage_ids": [1]}

    llm = ScriptedLLM(model="scripted").script(tools=[SEARCH], DraftAnswer=[hang])
    ask(
        managed(settings, example_kb, ScriptedLLM(model="scripted"), engine, roles_on="evidence"),
        QUESTION,
    )
    runtime = managed(settings.model_copy(update={"turn_timeout_s": 3.0}), example_kb, llm, engine)
    result = ask(runtime, QUESTION)
    assert result.verdict == "answered" and "5 to 7 business days" in result.answer
    detail = manage_step(result)
    assert detail["completed"] is False and "deadline" in detail["why"]
    # the responder's model hung (or, on a loaded machine, the deadline came first)
    assert detail["delegated_to"][0] == "retriever"
    assert any("ran out during" in n for n in result.trace.notes), result.trace.notes


def test_autogen_selector_whose_model_fails_lets_the_table_pick(settings, example_kb):
    def gone(_prompt: str) -> str:
        raise RuntimeError("model server gone")

    result = ask(selector(settings, example_kb, [gone]), QUESTION)
    assert result.verdict == "answered" and result.answer == REFUND
    detail = manage_step(result)
    assert detail["delegated_to"] == ["retriever", "responder"] and detail["picks"] == []
    assert sum("the model could not choose" in n for n in result.trace.notes) == 2


def waits_out_its_time(_prompt: str):
    """A model that answers only when its time is up, as a real client then fails."""
    from agents.deadline import DeadlineExceeded, expired

    while not expired():
        time.sleep(0.02)
    raise DeadlineExceeded("no time left in the turn for a model call")


def slow_manager(engine: str):
    """The scripted test double as a manager that never picks in time; its coworkers are quick."""
    draft = [{"answer": REFUND, "passage_ids": [1]}]
    if engine == "autogen":  # the selector's choice is a text reply
        return ScriptedLLM(model="scripted").script(
            text=[waits_out_its_time], tools=[SEARCH], DraftAnswer=draft
        )
    llm = ScriptedLLM(model="scripted")

    def tools(prompt: str):
        offered = [t.get("function", t).get("name", "") for t in llm.last_tools]
        return waits_out_its_time(prompt) if any("elegate" in n for n in offered) else SEARCH

    return llm.script(tools=[tools], DraftAnswer=draft)


@pytest.mark.serial
@pytest.mark.parametrize("engine", ENGINES)
def test_a_model_manager_has_half_the_turn_then_the_table_goes_on(settings, example_kb, engine):
    llm = slow_manager(engine)
    warm = ScriptedLLM(model="scripted")  # a cold start would eat the deadline
    ask(managed(settings, example_kb, warm, engine, roles_on="evidence"), QUESTION)
    turn_settings = settings.model_copy(update={"turn_timeout_s": 10.0})
    result = ask(managed(turn_settings, example_kb, llm, engine, manager="model"), QUESTION)
    assert result.verdict == "answered" and "5 to 7 business days" in result.answer
    assert not any(n.startswith("deadline: the model calls") for n in result.trace.notes), [
        (s.name, s.ms, s.at, {k: v for k, v in s.detail.items() if k in ("why", "delegated_to")})
        for s in result.trace.steps
    ] + result.trace.notes
    retrieve = steps(result, "retrieve")[0].detail
    assert "late" not in retrieve  # searched in the turn's time, not at its deadline
    detail = manage_step(result)
    if engine == "crewai":  # the manager stopped; the flow's steps took the turn on
        assert detail["completed"] is False and "ran out before handing" in detail["why"]
    else:  # the selector's table picked every coworker
        assert detail["delegated_to"] == ["retriever", "responder"] and detail["picks"] == []
        assert "selector: the manager's time ran out; the table picks" in result.trace.notes

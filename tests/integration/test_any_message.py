"""Every message within the cap gets a turn that ends: answered, suggested, refused or handed
off, its session turn ``done``, by the deadline, on both engines. A message over the
cross-encoder's 128 word pieces once crashed the turn (the tokenizer's truncation raised)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given

from agents.turn import HARD_STOP_S, run_turn
from storage.memory import MemoryStore, Scope
from storage.qdrant.edge_store import EdgeStore
from tasks.schemas import TurnRequest
from tests.helpers import scripted_runtime
from tests.messages import CHARGED_TWICE, REAL_TURNS, customer_messages
from tests.scripted_llm import ScriptedLLM

pytestmark = [pytest.mark.integration, pytest.mark.serial]  # bounds each turn by its deadline
ENDED = {"answered", "suggest", "idk", "handoff"}
CUSTOMER = "c-any"
_sessions = itertools.count()


@pytest.fixture(scope="module", params=["crewai", "autogen"])
def runtime(request, settings, example_kb, tmp_path_factory):
    """The shipped roles (every role on its evidence path) with customer memory."""
    built = scripted_runtime(
        settings, example_kb, ScriptedLLM(model="scripted"), engine=request.param, roles="evidence"
    )
    store = EdgeStore(tmp_path_factory.mktemp("memory"))
    built.memory = MemoryStore(store, example_kb.encoders)
    yield built
    store.close()


def ended_and_stored(runtime, message: str):
    session = f"s{next(_sessions)}"
    request = TurnRequest(
        session_id=session,
        customer_id=CUSTOMER,
        message=message,
        slots={"tier": "basic", "access_level": "customer"},
    )
    result = run_turn(request, runtime)
    assert result.verdict in ENDED, (result.verdict, result.failure, result.trace.notes)
    deadline_ms = (runtime.settings.turn_timeout_s + HARD_STOP_S) * 1000
    assert result.trace.duration_ms <= deadline_ms + 1000
    [turn] = runtime.memory.session_turns(Scope(CUSTOMER), session)
    assert turn["status"] == "done" and turn["user"] == message
    return result


def test_a_customer_paragraph_over_the_models_budget_is_answered(runtime):
    result = ended_and_stored(runtime, CHARGED_TWICE)
    assert result.verdict == "answered"
    assert [c.source_id for c in result.citations][:1] == ["billing/refunds.md"]


@REAL_TURNS
@given(message=customer_messages())
def test_any_message_within_the_cap_ends_in_a_stored_outcome(runtime, message):
    ended_and_stored(runtime, message)

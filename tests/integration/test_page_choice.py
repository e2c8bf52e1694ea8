"""The page choice (tasks/page_choice.py): the answer decision chooses among candidate pages,
the page the conversation is about among them, and records each candidate in the trace."""

from __future__ import annotations

import pytest

from config.settings import PageChoiceModel, fitted_page_choice
from tasks.page_choice import FEATURES
from tasks.schemas import HistoryTurn
from tests.helpers import scripted_runtime
from tests.integration.test_turn import BASIC, ask, steps
from tests.scripted_llm import ScriptedLLM

pytestmark = pytest.mark.integration
ENTERPRISE = {"tier": "enterprise", "access_level": "customer"}


@pytest.fixture(params=["crewai", "autogen"])
def runtime(request, settings, example_kb):
    return scripted_runtime(
        settings, example_kb, ScriptedLLM(model="scripted"), engine=request.param, roles="evidence"
    )


def test_the_shipped_chooser_is_fitted_on_every_feature():
    model = fitted_page_choice()
    assert model.features == list(FEATURES) and len(model.weights) == len(FEATURES)
    assert "training/fit_decision.py" in model.fitted_on


def test_a_request_naming_a_page_is_answered_from_it_and_the_trace_lists_the_candidates(runtime):
    result = ask(runtime, "I would like to learn about SCIM provisioning", slots=ENTERPRISE)
    assert result.verdict == "answered"
    assert [c.source_id for c in result.citations] == ["sso/scim-provisioning.md"]
    gate = steps(result, "evidence_gate")[-1].detail
    chosen = max(gate["candidates"], key=lambda c: c["score"])
    assert chosen["page"] == "sso/scim-provisioning.md"
    assert set(FEATURES) <= set(chosen["features"])


def follow_up(runtime, message: str, opener: str, page: str):
    """``message`` after an opener answered from ``page``."""
    opened = HistoryTurn(user=opener, answer="(the answer)", sources=[page])
    return ask(runtime, message, slots=BASIC, history=[opened])


def test_a_follow_up_is_answered_from_the_conversations_page(runtime):
    result = follow_up(
        runtime,
        "is my data kept if it keeps failing?",
        "Hi, my card payment failed with PAY-102. What should I do?",
        "billing/failed-payments.md",
    )
    assert [c.source_id for c in result.citations] == ["billing/failed-payments.md"]
    gate = steps(result, "evidence_gate")[-1].detail
    on_page = [c for c in gate["candidates"] if c["page"] == "billing/failed-payments.md"]
    assert on_page and all(c["features"]["conversation"] == 1.0 for c in on_page)


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"features": ["title"], "mean": [0.1], "scale": [1.0], "weights": []}, "same length"),
        ({"features": ["title"], "mean": [0.1], "scale": [0.0], "weights": [1.0]}, "positive"),
    ],
)
def test_a_malformed_page_choice_model_is_named(fields, problem):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=problem):
        PageChoiceModel(**fields)


def test_a_follow_up_naming_another_page_leaves_the_conversations_page(runtime):
    result = follow_up(
        runtime, "And for annual plans?", "How long does a refund take?", "billing/refunds.md"
    )
    assert [c.source_id for c in result.citations] == ["billing/annual-plans.md"]

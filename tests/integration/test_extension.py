"""Adding a fifth agent with its own tool: one YAML entry per file and one method per engine.
What its tool returns joins the evidence and passes the same gates."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from crewai import Agent
from crewai.project import CrewBase, agent

from agents.autogen.agents import ToolEvidenceAgent
from agents.autogen.engine import AutoGenEngine
from agents.crewai.crews import RetrieveCrew
from agents.crewai.engine import CrewAIEngine
from agents.runtime import TurnRuntime
from agents.tools.evidence import EvidenceTool
from storage.retrieval.retriever import QdrantRetriever
from tasks.evidence import EvidenceScorer
from tests.conftest import REPO
from tests.helpers import model_roles, scripted_runtime
from tests.integration.test_turn import BASIC, ask, roles, steps
from tests.scripted_llm import ScriptedLLM

pytestmark = pytest.mark.integration
ORDERS = {
    ("c-100", "ORD-55812"): "Order ORD-55812 shipped on 3 May with DHL; the tracking "
    "number is DHL-7731 and delivery takes 2 business days."
}
QUESTION = "Where is my order ORD-55812? Has it shipped?"


class OrderStatusTool(EvidenceTool):
    name: str = "order_status"
    description: str = "Look up the customer's order by its id, e.g. ORD-55812."

    def _run(self, order_id: str) -> str:
        record = ORDERS.get((self.turn.slots.get("customer_id"), order_id.strip().upper()))
        if record is None:
            return "No such order for this customer."
        return self.add_evidence(f"orders/{order_id}", f"Order {order_id}", record)


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch) -> Path:
    """Our config plus one agent and one task (the YAML a user adds)."""
    import agents.roles

    for name in ("agents.yaml", "tasks.yaml"):
        shutil.copy(REPO / "config" / name, tmp_path / name)
    with (tmp_path / "agents.yaml").open("a") as out:
        yaml.safe_dump(
            {
                "order_desk": {
                    "role": "Order desk clerk",
                    "goal": "Look up the orders the customer asks about.",
                    "backstory": "You answer from the order system only.",
                }
            },
            out,
        )
    with (tmp_path / "tasks.yaml").open("a") as out:
        yaml.safe_dump(
            {
                "order_desk": {
                    "description": 'Look up any order the customer names in: "{message}"',
                    "expected_output": "The order's status.",
                }
            },
            out,
        )
    monkeypatch.setattr(agents.roles, "CONFIG_DIR", tmp_path)
    return tmp_path


def order_llm() -> ScriptedLLM:
    def tools(prompt: str) -> dict:
        if "Look up any order" in prompt:
            return {"name": "order_status", "arguments": {"order_id": "ORD-55812"}}
        return {"name": "search_knowledge_base", "arguments": {"queries": ["order status"]}}

    return ScriptedLLM(model="scripted").script(
        tools=[tools],
        DraftAnswer=[{"answer": "Order ORD-55812 shipped on 3 May with DHL.", "passage_ids": []}],
    )


def crewai_with_orders(config_dir: Path, llm, settings, example_kb) -> TurnRuntime:
    @CrewBase
    class RetrieveWithOrders(RetrieveCrew):
        agents_config = str(config_dir / "agents.yaml")
        tasks_config = str(config_dir / "tasks.yaml")

        @agent
        def order_desk(self) -> Agent:
            return self.role_agent("order_desk", tools=[OrderStatusTool(turn=self.turn)])

    runtime = scripted_runtime(settings, example_kb, llm)
    runtime.engine = CrewAIEngine(llm, retrieve_crew=RetrieveWithOrders)
    return runtime


def autogen_with_orders(config_dir: Path, llm, settings, example_kb) -> TurnRuntime:
    from agents.autogen.client import BaseLLMChatClient
    from agents.roles import load_role_specs

    class OrdersEngine(AutoGenEngine):
        def evidence_agents(self, services):
            return [ToolEvidenceAgent(services, "order_desk", OrderStatusTool(turn=services.state))]

    return TurnRuntime(
        model_roles(settings),
        QdrantRetriever(kb=example_kb),
        OrdersEngine(BaseLLMChatClient(llm), load_role_specs()),
        EvidenceScorer(example_kb.encoders, settings.evidence, example_kb.term_statistics),
    )


BUILDERS = {"crewai": crewai_with_orders, "autogen": autogen_with_orders}


@pytest.mark.parametrize("engine", BUILDERS)
def test_a_fifth_agent_adds_evidence_that_the_gates_check(config_dir, settings, example_kb, engine):
    llm = order_llm()
    runtime = BUILDERS[engine](config_dir, llm, settings, example_kb)
    result = ask(runtime, QUESTION, customer="c-100")
    assert result.verdict == "answered", result.trace.notes
    assert [c.source_id for c in result.citations] == ["orders/ORD-55812"]
    assert "DHL" in result.answer
    [retrieve] = steps(result, "retrieve")
    assert retrieve.detail["via"]["orders/ORD-55812#0"] == "order_status"
    assert sorted(roles(result)) == ["order_desk", "responder", "retriever"]


@pytest.mark.parametrize("engine", BUILDERS)
def test_the_fifth_agents_evidence_is_scoped_and_checked(config_dir, settings, example_kb, engine):
    llm = order_llm().script(
        DraftAnswer=[{"answer": "Order ORD-55812 shipped on 9 June.", "passage_ids": [1]}]
    )
    runtime = BUILDERS[engine](config_dir, llm, settings, example_kb)
    other = ask(runtime, QUESTION, customer="c-200")  # not this customer's order
    assert "orders/ORD-55812" not in [c.source_id for c in other.citations]
    assert "DHL" not in other.answer
    mine = ask(runtime, QUESTION, customer="c-100")
    assert "9 June" not in mine.answer  # a changed date is not supported by the record
    assert mine.citations and mine.citations[0].source_id == "orders/ORD-55812"


def test_the_default_crews_have_no_extra_agents():
    assert RetrieveCrew.evidence_agents() == []
    assert BASIC["access_level"] == "customer"

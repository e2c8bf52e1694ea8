"""The topology table is what both engines wire and what the README shows."""

from __future__ import annotations

import pytest
from autogen_agentchat.messages import TextMessage

from agents.autogen.agents import DecisionMessage
from agents.topology import EDGES, NODES, mermaid, next_node, routes_into
from tasks.schemas import GateDecision
from tests.conftest import REPO

# the Flow's method for each step of the table (the verifier is the respond task's guardrail)
FLOW_METHOD = {
    "reformulator": "reformulate",
    "retriever": "retrieve",
    "judge": "judge",
    "responder": "respond",
    "closer": "finish",
}


def test_every_edge_joins_two_steps_of_the_table_and_each_route_leads_one_way():
    assert all(e.source in NODES and e.target in NODES for e in EDGES)
    for node in NODES:
        routes = [e.route for e in EDGES if e.source == node]
        assert len(routes) == len(set(routes)), node
    assert next_node("evidence_gate", "ask_judge") == "judge"
    assert next_node("reformulator", None) == "retriever"
    assert next_node("closer", None) == "closer"


def test_the_crewai_flow_listens_on_the_routes_the_table_leads_into_each_step():
    from agents.crewai.flow import SupportTurnFlow

    methods = SupportTurnFlow.flow_definition().methods
    for node, method in FLOW_METHOD.items():
        listen = methods[method].listen
        triggers = set(listen["or"]) if isinstance(listen, dict) else {listen}
        unconditional = {
            FLOW_METHOD.get(e.source) for e in EDGES if e.target == node and e.route is None
        } - {None}
        assert triggers == set(routes_into(node)) | unconditional, (node, triggers)


@pytest.fixture
def graph():
    from agents.autogen.agents import TurnServices
    from agents.autogen.engine import AutoGenEngine, build_graph
    from agents.roles import load_role_specs
    from tasks.schemas import TurnRequest
    from tasks.state import TurnState

    state = TurnState.for_request(TurnRequest(session_id="s", message="m"))
    services = TurnServices(state=state, runtime=None, client=None, specs=load_role_specs())
    engine = AutoGenEngine.__new__(AutoGenEngine)  # the agents need no model client here
    return build_graph(engine.agents(services))


def test_the_autogen_graph_has_the_tables_edges_and_follows_their_routes(graph):
    def followed(source: str, route: str | None) -> set[str]:
        message = (
            DecisionMessage(content=GateDecision(gate=source, route=route), source=source)
            if route
            else TextMessage(content="done", source=source)
        )
        return {e.target for e in graph.nodes[source].edges if e.check_condition(message)}

    assert graph.get_start_nodes() == {"context"}
    for edge in EDGES:
        assert edge.target in followed(edge.source, edge.route), edge
        if edge.route:
            assert followed(edge.source, edge.route) == {edge.target}, edge


def test_the_readme_shows_the_tables_diagram():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert f"```mermaid\n{mermaid()}\n```" in readme

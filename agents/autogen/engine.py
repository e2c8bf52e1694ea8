"""The support turn on AutoGen agentchat: one team per turn, wired from ``agents/topology.py``.

``process: sequential`` is a ``GraphFlow`` built with ``DiGraphBuilder`` from the topology's
edges; the gate agents emit typed ``StructuredMessage[GateDecision]`` messages and the edges
follow their ``route`` (the diagram: ``agents/topology.py``, also in the README).

``process: hierarchical`` puts the same agents in a ``SelectorGroupChat`` whose
``selector_func`` returns the speaker the evidence policy dictates; only where evidence is
undecided does it return ``None`` and let the model choose among ``candidate_func``'s
candidates (judge, or a new query while rounds are left). A choice outside the candidates is
traced and corrected.

Usage::

    engine = AutoGenEngine(BaseLLMChatClient(llm), load_role_specs(), process="sequential")
    state = engine.run(TurnState.for_request(request), runtime)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from autogen_agentchat.conditions import MaxMessageTermination, SourceMatchTermination
from autogen_agentchat.teams import DiGraphBuilder, GraphFlow, SelectorGroupChat
from autogen_core.models import ChatCompletionClient

from agents.autogen.agents import (
    ClosingAgent,
    ContextAgent,
    DecisionMessage,
    EvidenceGateAgent,
    JudgeAgent,
    ReformulatorAgent,
    ResponderAgent,
    RetrieverAgent,
    TurnServices,
    VerifierAgent,
    decision_of,
)
from agents.autogen.client import BaseLLMChatClient
from agents.failures import TurnFailed
from agents.roles import RoleSpecs
from agents.runtime import TurnRuntime
from agents.topology import EDGES, ENTRY, next_node
from storage.coroutines import run_coroutine
from tasks.state import TurnState

MAX_MESSAGES = 40


def _on(routes: set[str]):
    def condition(message: Any) -> bool:
        decision = decision_of(message)
        return decision is not None and decision.route in routes

    return condition


def build_graph(agents: dict[str, Any]) -> Any:
    """The turn's ``DiGraph``: one edge per pair of steps in the topology, conditional on the
    routes that lead from one to the other."""
    builder = DiGraphBuilder()
    for agent in agents.values():
        builder.add_node(agent)
    routes: dict[tuple[str, str], set[str | None]] = {}
    for edge in EDGES:
        routes.setdefault((edge.source, edge.target), set()).add(edge.route)
    incoming = {target: sum(1 for _, t in routes if t == target) for _, target in routes}
    for (source, target), on in routes.items():
        condition = None if None in on else _on({r for r in on if r})
        activation: Literal["all", "any"] = "any" if incoming[target] > 1 else "all"
        builder.add_edge(
            agents[source], agents[target], condition=condition, activation_condition=activation
        )
    builder.set_entry_point(agents[ENTRY])
    return builder.build()


class EvidencePolicy:
    """``selector_func`` / ``candidate_func`` of the hierarchical team: evidence decides."""

    def __init__(self, state: TurnState, max_rounds: int) -> None:
        self.state = state
        self.max_rounds = max_rounds
        self.expected: list[str] = ["context"]

    def select(self, messages: Sequence[Any]) -> str | None:
        """The speaker evidence dictates; None (the model picks) only when it is undecided."""
        last = messages[-1] if messages else None
        source = getattr(last, "source", "user")
        if last is None or source == "user":
            speaker = "context"
        elif source not in self.expected:  # the model's pick (or AutoGen's fallback) was wrong
            speaker = self.expected[0]
            self.state.note(
                f"selector: {source} spoke, expected one of {self.expected}; corrected to {speaker}"
            )
            self.expected = [speaker]
            return speaker
        else:
            if len(self.expected) > 1:
                self.state.note(f"selector: the model picked {source} among {self.expected}")
            decision = decision_of(last)
            speaker = next_node(source, decision.route if decision else None)
        if speaker == "judge" and len(self.candidates(messages)) > 1:
            self.expected = self.candidates(messages)
            return None
        self.expected = [speaker]
        return speaker

    def candidates(self, messages: Sequence[Any]) -> list[str]:
        left = self.state.round_index < self.max_rounds
        return ["judge", "reformulator"] if left else ["judge"]


class AutoGenEngine:
    name = "autogen"

    def __init__(
        self, client: ChatCompletionClient, specs: RoleSpecs, process: str = "sequential"
    ) -> None:
        self.client = client
        self.specs = specs
        self.process = process
        self.selector_client = (
            client.for_role("selector") if isinstance(client, BaseLLMChatClient) else client
        )

    def agents(self, services: TurnServices) -> dict[str, Any]:
        """The turn's agents; a subclass may add evidence agents to the retriever's step."""
        return {
            "context": ContextAgent(services),
            "reformulator": ReformulatorAgent(services),
            "retriever": RetrieverAgent(services, extra=self.evidence_agents(services)),
            "evidence_gate": EvidenceGateAgent(services),
            "judge": JudgeAgent(services),
            "responder": ResponderAgent(services),
            "verifier": VerifierAgent(services),
            "closer": ClosingAgent(services),
        }

    def evidence_agents(self, services: TurnServices) -> list[Any]:
        """Agents whose tools add evidence beside the knowledge base (none by default)."""
        return []

    def team(self, services: TurnServices) -> Any:
        agents = self.agents(services)
        stop = MaxMessageTermination(MAX_MESSAGES)
        if self.process == "hierarchical":
            policy = EvidencePolicy(services.state, services.runtime.settings.max_rounds)
            return SelectorGroupChat(
                list(agents.values()),
                model_client=self.selector_client,
                selector_func=policy.select,
                candidate_func=policy.candidates,
                termination_condition=SourceMatchTermination(["closer"]) | stop,
                allow_repeated_speaker=True,
                custom_message_types=[DecisionMessage],
            )
        return GraphFlow(
            list(agents.values()),
            graph=build_graph(agents),
            termination_condition=stop,
            custom_message_types=[DecisionMessage],
        )

    def run(self, state: TurnState, runtime: TurnRuntime) -> TurnState:
        services = TurnServices(state=state, runtime=runtime, client=self.client, specs=self.specs)
        try:
            run_coroutine(self.team(services).run(task=state.message))
        except Exception as exc:
            raise TurnFailed(state, services.failure or exc) from exc
        return state

"""The support turn on AutoGen agentchat: one team per turn, wired from ``agents/topology.py``.

``process: sequential`` is a ``GraphFlow`` built with ``DiGraphBuilder`` from the topology's
edges; the gate agents emit typed ``StructuredMessage[GateDecision]`` messages and the edges
follow their ``route`` (the diagram: ``agents/topology.py``, also in the README).

``process: hierarchical`` puts the same agents in a ``SelectorGroupChat`` whose
``selector_func`` is the manager: with the step table's policy (the default with the embedded
model) it returns the speaker the table and the evidence dictate, without a model call; when
the model manages (``manager:``) it returns ``None`` at each hand-off to a role agent and the
model picks among ``candidate_func``'s (for half the time the turn has left, then the table
picks); a pick out of turn does nothing and is corrected. The run is the trace's ``manage``
step, with every hand-off (``agents/manage.py``).

Usage::

    engine = AutoGenEngine(BaseLLMChatClient(llm), load_role_specs(), process="sequential")
    state = engine.run(TurnState.for_request(request), runtime)
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any, Literal

from autogen_agentchat.conditions import MaxMessageTermination, SourceMatchTermination
from autogen_agentchat.teams import DiGraphBuilder, GraphFlow, SelectorGroupChat
from autogen_core.models import ChatCompletionClient, CreateResult, ModelInfo, RequestUsage

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
from agents.deadline import current_deadline, expired, time_left, turn_deadline
from agents.failures import TurnFailed
from agents.manage import MANAGER_SHARE, POLICY, Management, managing, path_of
from agents.roles import ROLES, RoleSpecs
from agents.runtime import TurnRuntime
from agents.topology import EDGES, ENTRY, next_node
from agents.usage import acting_as
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


def model_name(client: Any) -> str:
    """The model behind an AutoGen client (ours wraps a backend; autogen-ext's names it)."""
    backend = getattr(client, "_llm", None)
    named = getattr(backend, "model", None) or getattr(client, "_create_args", {}).get("model")
    return str(named or type(client).__name__)


class SelectorClient(ChatCompletionClient):
    """The selector's model client: a selection the model cannot make (it failed, or its reply
    was cut at the turn's deadline) is the table's, and the trace says so; the roles' own
    model calls are the roles' clients' business."""

    def __init__(self, inner: ChatCompletionClient, policy: EvidencePolicy) -> None:
        self.inner, self.policy = inner, policy

    async def create(self, messages: Sequence[Any], **kwargs: Any) -> CreateResult:
        try:
            with acting_as("selector"), turn_deadline(self.policy.until, current_deadline()[1]):
                return await self.inner.create(messages, **kwargs)
        except Exception as exc:  # the table picks; a cancelled turn still stops
            return CreateResult(
                finish_reason="stop",
                content=self.policy.model_failed(f"{type(exc).__name__}: {str(exc)[:160]}"),
                usage=RequestUsage(prompt_tokens=0, completion_tokens=0),
                cached=False,
            )

    def create_stream(self, messages: Sequence[Any], **kwargs: Any) -> Any:
        return self.inner.create_stream(messages, **kwargs)

    async def close(self) -> None:
        return None  # the engine's client outlives the turn's team

    def actual_usage(self) -> RequestUsage:
        return self.inner.actual_usage()

    def total_usage(self) -> RequestUsage:
        return self.inner.total_usage()

    def count_tokens(self, messages: Sequence[Any], **kwargs: Any) -> int:
        return self.inner.count_tokens(messages, **kwargs)

    def remaining_tokens(self, messages: Sequence[Any], **kwargs: Any) -> int:
        return self.inner.remaining_tokens(messages, **kwargs)

    @property
    def capabilities(self) -> Any:  # type: ignore[override]
        return self.inner.capabilities

    @property
    def model_info(self) -> ModelInfo:
        return self.inner.model_info


class EvidencePolicy:
    """``selector_func`` / ``candidate_func`` of the hierarchical team: its manager.

    The table's policy (the default with the embedded model) returns the speaker the step
    table and the evidence dictate, and never asks a model. The model manager (``manager:``)
    is asked at each hand-off to a role agent, among the four (or, where the evidence is
    undecided, between the judge and a new query); an agent it picks out of turn does nothing,
    and the next selection corrects the pick. Past the turn's deadline the table picks. Every
    hand-off and pick goes into the trace's ``manage`` step (``agents/manage.py``).
    """

    def __init__(self, services: TurnServices, management: Management) -> None:
        self.state = services.state
        self.services = services
        self.settings = services.runtime.settings
        self.management = management
        self.expected: list[str] = ["context"]
        self.asked = False  # the last speaker was the model's pick
        # a model manager's own calls end by a share of the time the turn has left
        left = time_left()
        self.until = time.monotonic() + MANAGER_SHARE * left if left < math.inf else None
        self.out_of_time = False

    def select(self, messages: Sequence[Any]) -> str | None:
        """The speaker evidence dictates; None (the model picks) where the model manages."""
        last = messages[-1] if messages else None
        source = getattr(last, "source", "user")
        if last is None or source == "user":
            return self._choose("context")
        if self.asked:  # the model's pick spoke (or, out of turn, did nothing)
            self.asked = False
            if self.management.picked(source, self.expected) and source in ROLES:
                self.management.handed(source, ran=path_of(self.settings, source))
        if source not in self.expected:  # the model's pick (or AutoGen's fallback) was wrong
            speaker = self.expected[0]
            self.state.note(
                f"selector: {source} spoke, expected one of {self.expected}; corrected to {speaker}"
            )
            return self._choose(speaker, ask=False)
        if len(self.expected) > 1:
            self.state.note(f"selector: the model picked {source} among {self.expected}")
        decision = decision_of(last)
        return self._choose(next_node(source, decision.route if decision else None))

    def _choose(self, speaker: str, ask: bool = True) -> str | None:
        """``speaker``, or None to let the model pick a role agent (it is expected to pick
        ``speaker``, or either choice where evidence is undecided)."""
        self.expected = [speaker]
        if speaker == "judge" and self.state.round_index < self.settings.max_rounds:
            self.expected = ["judge", "reformulator"]  # undecided: judge, or a new query
        if ask and speaker in ROLES and self.management.by_model and self._in_time():
            self.asked = True
            self.services.expected = list(self.expected)  # a pick out of turn does nothing
            return None
        self.expected = [speaker]
        self.services.expected = [speaker]
        if speaker in ROLES:
            self.management.handed(speaker, ran=path_of(self.settings, speaker))
        return speaker

    def _in_time(self) -> bool:
        """Whether the model may still pick: the turn's deadline and the manager's share of it."""
        if self.until is not None and time.monotonic() >= self.until:
            if not self.out_of_time:
                self.out_of_time = True
                self.state.note("selector: the manager's time ran out; the table picks")
            return False
        return not expired()

    def model_failed(self, error: str) -> str:
        """The table's pick when the model could not choose (traced)."""
        self.state.note(f"selector: the model could not choose ({error}); the table picks")
        self.asked = False  # the table's pick, not the model's
        return str(self._choose(self.expected[0], ask=False))

    def candidates(self, messages: Sequence[Any]) -> list[str]:
        """What the model picks among: the judge or a new query where the evidence is
        undecided, else the four role agents."""
        return list(self.expected) if len(self.expected) > 1 else list(ROLES)


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

    def team(self, services: TurnServices, management: Management | None = None) -> Any:
        agents = self.agents(services)
        stop = MaxMessageTermination(MAX_MESSAGES)
        if self.process == "hierarchical":
            policy = EvidencePolicy(services, management or Management(POLICY))
            return SelectorGroupChat(
                list(agents.values()),
                model_client=SelectorClient(self.selector_client, policy),
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
            if self.process == "hierarchical":
                self._managed(services)
            else:
                run_coroutine(self.team(services).run(task=state.message))
        except Exception as exc:
            raise TurnFailed(state, services.failure or exc) from exc
        return state

    def _managed(self, services: TurnServices) -> None:
        """The selector team's run as the turn's ``manage`` step."""
        state, settings = services.state, services.runtime.settings
        with managing(state, settings, model_name(self.selector_client)) as management:
            run_coroutine(self.team(services, management).run(task=state.message))
            if state.result is not None:
                management.finished()
            else:
                management.stopped(f"the team stopped on route {state.route!r} without a result")

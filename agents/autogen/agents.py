"""The agents of the AutoGen support team (``agents/autogen/engine.py``), one per turn.

Model-backed roles (reformulator, retriever, judge, responder) wrap an ``AssistantAgent``
built from ``config/agents.yaml``: structured output through ``output_content_type``, the
retriever with the turn's search tool as its only tool. Every agent runs its step of
``agents/steps.py`` (written once for both engines); gate agents (context, evidence gate,
judge, verifier) emit the step's typed ``StructuredMessage[GateDecision]``, whose ``route`` the
graph's edges or the selector follow (``agents/topology.py``).

Usage::

    services = TurnServices(state=state, runtime=runtime, client=client, specs=specs)
    gate = EvidenceGateAgent(services)
    response = await gate.on_messages([], CancellationToken())   # GateDecision(route="answer")
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from autogen_agentchat.agents import AssistantAgent, BaseChatAgent
from autogen_agentchat.base import Response
from autogen_agentchat.messages import BaseChatMessage, StructuredMessage, TextMessage
from autogen_core import CancellationToken
from autogen_core.models import ChatCompletionClient
from pydantic import BaseModel

from agents.autogen.tools import AutoGenToolAdapter
from agents.failures import tolerated
from agents.roles import RoleSpecs
from agents.runtime import TurnRuntime
from agents.steps import TurnSteps
from agents.tools.evidence import EvidenceTool
from agents.usage import acting_as, record_call
from config.settings import ROLE_NAMES
from tasks.prompts import role_inputs
from tasks.role_output import RoleFailed, parse_output
from tasks.schemas import DraftAnswer, GateDecision, Judgement, Passage, Reformulation
from tasks.state import TurnState

DecisionMessage = StructuredMessage[GateDecision]


def decision_of(message: Any) -> GateDecision | None:
    content = getattr(message, "content", None)
    return content if isinstance(content, GateDecision) else None


@dataclass
class TurnServices:
    """What the turn's agents share: this turn's state, the runtime, the model client."""

    state: TurnState
    runtime: TurnRuntime
    client: ChatCompletionClient
    specs: RoleSpecs
    steps: TurnSteps = field(init=False)
    attempts: dict[str, int] = field(default_factory=dict)
    failure: BaseException | None = None
    # who may act now, as a hierarchical team's manager decided (None: whoever is picked)
    expected: list[str] | None = None

    def __post_init__(self) -> None:
        self.steps = TurnSteps(self.state, self.runtime)


class _TurnAgent(BaseChatAgent):
    """A participant of the turn's team; subclasses implement :meth:`act`."""

    name_: str = ""

    def __init__(
        self, services: TurnServices, name: str | None = None, description: str | None = None
    ) -> None:
        name = name or self.name_
        spec = services.specs.agents.get(name, {})
        super().__init__(name, description or spec.get("goal") or self.__doc__ or name)
        self.services = services

    @property
    def state(self) -> TurnState:
        return self.services.state

    @property
    def steps(self) -> TurnSteps:
        return self.services.steps

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (TextMessage, DecisionMessage)

    def ready(self) -> bool:
        """Whether the turn is at this agent's step (a selector may pick it out of turn)."""
        return True

    async def on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        if not self.ready() or (
            self.services.expected is not None and self.name not in self.services.expected
        ):
            self.state.note(
                f"{self.name} was picked out of turn (route {self.state.route!r}); it did nothing"
            )
            return Response(chat_message=TextMessage(content="not my turn", source=self.name))
        try:
            outcome = await self.act(cancellation_token)
        except Exception as exc:  # AutoGen re-raises it as text; the engine wants the object
            self.services.failure = exc
            raise
        if isinstance(outcome, GateDecision):
            return Response(chat_message=DecisionMessage(content=outcome, source=self.name))
        return Response(chat_message=TextMessage(content=str(outcome), source=self.name))

    async def act(self, cancellation_token: CancellationToken) -> GateDecision | str:
        raise NotImplementedError

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        return None


class _ModelRole(_TurnAgent):
    """A role whose output comes from the model: an ``AssistantAgent`` asked once per call."""

    task = ""
    output: type[BaseModel] | None = None

    def assistant(self, tools: list[Any] | None = None) -> AssistantAgent:
        spec = self.services.specs.agents[self.name]
        return AssistantAgent(
            self.name,
            model_client=self.services.client,
            system_message=f"You are the {spec['role']}. {spec['goal']}\n{spec['backstory']}",
            output_content_type=None if tools else self.output,
            tools=tools,
            reflect_on_tool_use=False,
        )

    @property
    def uses_model(self) -> bool:
        """Whether this role takes the model's path (``roles:``); tool agents always do."""
        return self.task not in ROLE_NAMES or self.steps.uses_model(self.task)

    async def ask(self, cancellation_token: CancellationToken, tools: list[Any] | None = None) -> Any:
        """The role's typed output (or the tool summary), None when unusable (traced) or when
        the role takes the evidence path."""
        if not self.uses_model:
            return None
        prompt = self.services.specs.describe(self.task, role_inputs(self.task, self.state))
        response = None
        with tolerated(self.state, self.task):
            with acting_as(self.name):
                response = await self.assistant(tools).on_messages(
                    [TextMessage(content=prompt, source="user")], cancellation_token
                )
            self._record_remote_usage(response)
        if response is None:
            return None
        content = getattr(response.chat_message, "content", None)
        if self.output is None or isinstance(content, self.output):
            return content
        try:
            return parse_output(str(content), self.output)
        except RoleFailed as exc:
            self.state.note(f"{self.task} failed ({exc})")
            return None

    def _record_remote_usage(self, response: Response) -> None:
        """autogen-ext's clients report usage on messages; ours record it themselves."""
        if getattr(self.services.client, "records_usage", False):
            return
        for message in [*(response.inner_messages or []), response.chat_message]:
            usage = getattr(message, "models_usage", None)
            if usage is not None:
                with acting_as(self.name):
                    record_call(usage.prompt_tokens, usage.completion_tokens, 0.0, "autogen")


class ToolEvidenceAgent(_ModelRole):
    """An agent added to the retrieval step: its ``agents.yaml`` entry, the task named like
    it in ``tasks.yaml``, and one evidence tool whose records join the passages."""

    def __init__(self, services: TurnServices, name: str, tool: EvidenceTool) -> None:
        super().__init__(services, name=name)
        self.task = name
        self.tool = tool

    async def evidence(self, cancellation_token: CancellationToken) -> list[Passage]:
        await self.ask(cancellation_token, tools=[AutoGenToolAdapter(self.tool)])
        return list(self.tool.found)

    async def act(self, cancellation_token: CancellationToken) -> str:
        return f"{len(await self.evidence(cancellation_token))} records"


class ContextAgent(_TurnAgent):
    """Loads the customer's context and decides whether the message needs a rewrite."""

    name_ = "context"

    def ready(self) -> bool:
        return not self.steps.opened

    async def act(self, cancellation_token: CancellationToken) -> GateDecision:
        self.steps.open()
        return self.steps.intake() or self.steps.plan()


class ReformulatorAgent(_ModelRole):
    name_ = "reformulator"
    task = "reformulate"
    output = Reformulation

    def ready(self) -> bool:
        return self.state.route in (None, "retry", "ask_judge") and self.state.result is None

    async def act(self, cancellation_token: CancellationToken) -> str:
        if self.state.route == "ask_judge":  # the selector chose a new query over the judge
            self.state.round_index += 1
            self.state.note("selector chose a new query instead of the judge")
        if self.steps.plan().route == "as_is":
            return "no rewrite needed"
        with self.steps.reformulation() as call:
            call.output = await self.ask(cancellation_token) if call.uses_model else None
        return "; ".join(self.state.queries) or "no rewrite"


class RetrieverAgent(_ModelRole):
    """Holds one tool, the turn's bound search; extra agents add evidence of their own."""

    name_ = "retriever"
    task = "retrieve"

    def __init__(self, services: TurnServices, extra: list[Any] | None = None) -> None:
        super().__init__(services)
        self.extra = extra or []

    async def act(self, cancellation_token: CancellationToken) -> str:
        with self.steps.retrieval() as search:
            tool = AutoGenToolAdapter(search.tool)
            if search.uses_model:
                await self.ask(cancellation_token, tools=[tool])
            elif self.services.expected is not None:  # handed the step by the manager: the
                # agent runs its tool on the customer's words (the round's queries are bound)
                await tool.run_json({"queries": [self.state.message]}, cancellation_token)
            for helper in self.extra:
                search.extra.extend(await helper.evidence(cancellation_token))
        return f"{len(self.state.passages)} passages"


class EvidenceGateAgent(_TurnAgent):
    """Evidence decides: answer, retry, refuse, or ask the judge."""

    name_ = "evidence_gate"

    async def act(self, cancellation_token: CancellationToken) -> GateDecision:
        return self.steps.evidence_gate()


class JudgeAgent(_ModelRole):
    name_ = "judge"
    task = "judge"
    output = Judgement

    def ready(self) -> bool:
        return self.state.route == "ask_judge"

    async def act(self, cancellation_token: CancellationToken) -> GateDecision:
        return self.steps.judge(await self.ask(cancellation_token))


class ResponderAgent(_ModelRole):
    name_ = "responder"
    task = "respond"
    output = DraftAnswer

    def ready(self) -> bool:
        return self.state.route == "answer" and self.state.result is None

    async def act(self, cancellation_token: CancellationToken) -> str:
        attempt = self.services.attempts.get("respond", 0)
        with self.steps.drafting("respond" if attempt == 0 else "revise", attempt=attempt) as call:
            call.output = await self.ask(cancellation_token) if call.uses_model else None
        self.services.attempts["respond"] = attempt + 1
        return self.state.draft.answer if self.state.draft else "(no usable draft)"


class VerifierAgent(_TurnAgent):
    """The responder's guardrail: one revision with the unsupported sentences named."""

    name_ = "verifier"

    def ready(self) -> bool:
        return (
            self.state.route == "answer"
            and "respond" in self.services.attempts
            and self.state.result is None
        )

    async def act(self, cancellation_token: CancellationToken) -> GateDecision:
        draft = self.state.draft
        if draft is not None:
            decision = self.steps.check_draft(draft)
            if decision.route == "revise" and self.services.attempts.get("respond", 0) < 2:
                self.state.revision_note = decision.reason
                return decision
        result = self.steps.answer(draft)
        return GateDecision(gate="verifier", route="done", reason=result.verdict)


class ClosingAgent(_TurnAgent):
    """Ends the turn: the verified answer, or the refusal / hand-off message."""

    name_ = "closer"

    def ready(self) -> bool:
        return self.state.result is not None or self.state.route in ("refuse", "handoff")

    async def act(self, cancellation_token: CancellationToken) -> str:
        return self.steps.close().answer

"""The agents of the AutoGen support team (``agents/autogen/engine.py``), one per turn.

Model-backed roles (reformulator, retriever, judge, responder) wrap an ``AssistantAgent``
built from ``config/agents.yaml``: structured output through ``output_content_type``, the
retriever with the turn's search tool as its only tool. Gate agents (context, evidence gate,
verifier, closer) call the shared gates in ``tasks/gates.py`` and emit a typed
``StructuredMessage[Decision]`` that the graph's edges or the selector follow.

Usage::

    services = TurnServices(state=state, runtime=runtime, client=client, specs=specs)
    gate = EvidenceGateAgent(services)
    response = await gate.on_messages([], CancellationToken())   # Decision(route="answer")
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

from autogen_agentchat.agents import AssistantAgent, BaseChatAgent
from autogen_agentchat.base import Response
from autogen_agentchat.messages import BaseChatMessage, StructuredMessage, TextMessage
from autogen_core import CancellationToken
from autogen_core.tools import BaseTool as AutoGenTool
from pydantic import BaseModel

from agents.steps import (
    EVIDENCE_PATH,
    bind_search_tool,
    is_outage,
    load_context,
    record_retrieval,
    role_inputs,
    role_uses_model,
)
from agents.tools.evidence import EvidenceTool
from agents.tools.search import KnowledgeBaseSearchTool
from agents.usage import acting_as, record_call
from config.settings import ROLE_NAMES
from tasks.gates import (
    answer_result,
    closing_result,
    evidence_route,
    intake_route,
    judge_route,
    merge_rewrite,
    plan_rewrite,
    revision_request,
    support_check,
)
from tasks.role_output import RoleFailed, parse_output
from tasks.schemas import DraftAnswer, Judgement, Passage, Reformulation
from tasks.state import TurnState


def run_sync(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine from sync code, also when an event loop is already running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    context = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(context.run, asyncio.run, coroutine).result()


class Decision(BaseModel):
    """Where the turn goes next, and why (emitted by gate agents)."""

    route: str
    reason: str = ""

    @staticmethod
    def message_type() -> type[StructuredMessage[Decision]]:
        return StructuredMessage[Decision]


def decision_of(message: Any) -> Decision | None:
    content = getattr(message, "content", None)
    return content if isinstance(content, Decision) else None


@dataclass
class TurnServices:
    """What the turn's agents share: this turn's state, the runtime, the model client."""

    state: TurnState
    runtime: Any
    client: Any
    specs: Any
    tool: KnowledgeBaseSearchTool | None = None
    attempts: dict[str, int] = field(default_factory=dict)
    failure: BaseException | None = None


class _TurnAgent(BaseChatAgent):
    """A participant of the turn's team; subclasses implement :meth:`act`."""

    name_: str = ""

    def __init__(self, services: TurnServices, name: str | None = None,
                 description: str | None = None) -> None:
        name = name or self.name_
        spec = services.specs.agents.get(name, {})
        super().__init__(name, description or spec.get("goal") or self.__doc__ or name)
        self.services = services

    @property
    def state(self) -> TurnState:
        return self.services.state

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (TextMessage, Decision.message_type())

    def ready(self) -> bool:
        """Whether the turn is at this agent's step (a selector may pick it out of turn)."""
        return True

    async def on_messages(self, messages: Sequence[BaseChatMessage],
                          cancellation_token: CancellationToken) -> Response:
        if not self.ready():
            self.state.note(f"{self.name} was picked out of turn (route "
                            f"{self.state.route!r}); it did nothing")
            return Response(chat_message=TextMessage(content="not my turn", source=self.name))
        try:
            outcome = await self.act(cancellation_token)
        except Exception as exc:  # AutoGen re-raises it as text; the engine wants the object
            self.services.failure = exc
            raise
        if isinstance(outcome, Decision):
            return Response(chat_message=StructuredMessage[Decision](content=outcome,
                                                                     source=self.name))
        return Response(chat_message=TextMessage(content=str(outcome), source=self.name))

    async def act(self, cancellation_token: CancellationToken) -> Decision | str:
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
            self.name, model_client=self.services.client,
            system_message=f"You are the {spec['role']}. {spec['goal']}\n{spec['backstory']}",
            output_content_type=None if tools else self.output, tools=tools,
            reflect_on_tool_use=False)

    @property
    def uses_model(self) -> bool:
        """Whether this role takes the model's path (``roles:``); tool agents always do."""
        return self.task not in ROLE_NAMES or role_uses_model(
            self.state, self.services.runtime.settings, self.task)

    async def ask(self, cancellation_token: CancellationToken, tools: list[Any] | None = None
                  ) -> Any:
        """The role's typed output (or the tool summary), None when unusable (traced) or when
        the role takes the evidence path."""
        if not self.uses_model:
            return None
        prompt = self.services.specs.describe(self.task, role_inputs(self.task, self.state))
        try:
            with acting_as(self.name):
                response = await self.assistant(tools).on_messages(
                    [TextMessage(content=prompt, source="user")], cancellation_token)
            self._record_remote_usage(response)
        except Exception as exc:
            if is_outage(exc):
                raise
            self.state.note(f"{self.task} failed ({type(exc).__name__}: {str(exc)[:160]})")
            return None
        content = response.chat_message.content
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


class CrewToolAdapter(AutoGenTool[BaseModel, str]):
    """A CrewAI ``BaseTool`` (the search tool, an ``EvidenceTool``) as an AutoGen tool."""

    def __init__(self, tool: Any) -> None:
        super().__init__(args_type=tool.args_schema, return_type=str, name=tool.name,
                         description=tool.description)
        self.tool = tool

    async def run(self, args: BaseModel, cancellation_token: CancellationToken) -> str:
        return str(self.tool.run(**args.model_dump()))


class ToolEvidenceAgent(_ModelRole):
    """An agent added to the retrieval step: its ``agents.yaml`` entry, the task named like
    it in ``tasks.yaml``, and one evidence tool whose records join the passages."""

    def __init__(self, services: TurnServices, name: str, tool: EvidenceTool) -> None:
        super().__init__(services, name=name)
        self.task = name
        self.tool = tool

    async def evidence(self, cancellation_token: CancellationToken) -> list[Passage]:
        await self.ask(cancellation_token, tools=[CrewToolAdapter(self.tool)])
        return list(self.tool.found)

    async def act(self, cancellation_token: CancellationToken) -> str:
        return f"{len(await self.evidence(cancellation_token))} records"


class ContextAgent(_TurnAgent):
    """Loads the customer's context and decides whether the message needs a rewrite."""

    name_ = "context"

    def ready(self) -> bool:
        return self.services.tool is None

    async def act(self, cancellation_token: CancellationToken) -> Decision:
        load_context(self.state, self.services.runtime)
        self.services.tool = bind_search_tool(self.state, self.services.runtime)
        if intake_route(self.state) == "handoff":
            return Decision(route="handoff", reason="the customer asked for a person")
        return _plan(self.state)


def _plan(state: TurnState) -> Decision:
    if plan_rewrite(state):
        return Decision(route="rewrite", reason=state.rewrite_reason)
    state.skip("reformulate", state.rewrite_reason, round=state.round_index)
    state.queries, state.advisory = [], {}
    return Decision(route="as_is", reason=state.rewrite_reason)


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
        if not plan_rewrite(self.state):
            self.state.skip("reformulate", self.state.rewrite_reason, round=self.state.round_index)
            return "no rewrite needed"
        with self.state.step("reformulate", round=self.state.round_index) as info:
            if not self.uses_model:
                info["decided_by"] = EVIDENCE_PATH.format(role=self.task)
            info.update(merge_rewrite(self.state, await self.ask(cancellation_token)))
        return "; ".join(self.state.queries) or "no rewrite"


class RetrieverAgent(_ModelRole):
    """Holds one tool, the turn's bound search; extra agents add evidence of their own."""

    name_ = "retriever"
    task = "retrieve"

    def __init__(self, services: TurnServices, extra: list[Any] | None = None) -> None:
        super().__init__(services)
        self.extra = extra or []

    async def act(self, cancellation_token: CancellationToken) -> str:
        tool = self.services.tool
        assert tool is not None, "the context agent binds the search tool first"
        tool.bind_round(self.state.queries, self.state.advisory)
        before = len(tool.calls)

        with self.state.step("retrieve", round=self.state.round_index) as info:
            await self.ask(cancellation_token, tools=[CrewToolAdapter(tool)])
            extra = []
            for helper in self.extra:
                extra.extend(await helper.evidence(cancellation_token))
            record_retrieval(self.state, tool, before, info,
                             "" if self.uses_model else EVIDENCE_PATH.format(role=self.task),
                             extra_passages=extra)
        return f"{len(self.state.passages)} passages"


class EvidenceGateAgent(_TurnAgent):
    """Evidence decides: answer, retry, refuse, handoff, or ask the judge."""

    name_ = "evidence_gate"

    async def act(self, cancellation_token: CancellationToken) -> Decision:
        runtime = self.services.runtime
        route = evidence_route(self.state, runtime.scorer, runtime.settings)
        return Decision(route=route, reason=self.state.trace.steps[-1].detail["decided_by"])


class JudgeAgent(_ModelRole):
    name_ = "judge"
    task = "judge"
    output = Judgement

    def ready(self) -> bool:
        return self.state.route == "ask_judge"

    async def act(self, cancellation_token: CancellationToken) -> Decision:
        judgement = await self.ask(cancellation_token)
        route = judge_route(self.state, judgement, self.services.runtime.settings)
        return Decision(route=route, reason=self.state.trace.steps[-1].detail["decided_by"])


class ResponderAgent(_ModelRole):
    name_ = "responder"
    task = "respond"
    output = DraftAnswer

    def ready(self) -> bool:
        return self.state.route == "answer" and self.state.result is None

    async def act(self, cancellation_token: CancellationToken) -> str:
        attempt = self.services.attempts.get("respond", 0)
        with self.state.step("respond" if attempt == 0 else "revise", attempt=attempt) as info:
            if not self.uses_model:
                info["decided_by"] = EVIDENCE_PATH.format(role=self.task)
            self.state.draft = await self.ask(cancellation_token)
        self.services.attempts["respond"] = self.services.attempts.get("respond", 0) + 1
        return self.state.draft.answer if self.state.draft else "(no usable draft)"


class VerifierAgent(_TurnAgent):
    """The responder's guardrail: one revision with the unsupported sentences named."""

    name_ = "verifier"

    def ready(self) -> bool:
        return self.state.route == "answer" and "respond" in self.services.attempts \
            and self.state.result is None

    async def act(self, cancellation_token: CancellationToken) -> Decision:
        runtime, draft = self.services.runtime, self.state.draft
        if draft is not None:
            ok, unsupported = support_check(self.state, runtime.scorer, draft.answer)
            if not ok and self.services.attempts.get("respond", 0) < 2:
                self.state.revision_note = revision_request(unsupported)
                return Decision(route="revise", reason=f"{len(unsupported)} unsupported")
        self.state.result = answer_result(self.state, runtime.scorer, runtime.settings, draft)
        return Decision(route="done", reason=self.state.result.verdict)


class ClosingAgent(_TurnAgent):
    """Ends the turn: the verified answer, or the refusal / hand-off message."""

    name_ = "closer"

    def ready(self) -> bool:
        return self.state.result is not None or self.state.route in ("refuse", "handoff")

    async def act(self, cancellation_token: CancellationToken) -> str:
        if self.state.result is None:
            self.state.skip("respond", f"route {self.state.route}: no grounded answer")
            self.state.result = closing_result(self.state, self.services.runtime.settings)
        return self.state.result.answer

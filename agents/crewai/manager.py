"""``process: hierarchical`` on CrewAI: a ``Process.hierarchical`` crew whose manager hands each
step of the turn to the coworker the step table (``agents/topology.py``) names.

- The manager (:class:`SupportManager`, the crew's ``manager_agent``) holds one tool, CrewAI's
  "Delegate work to coworker" bound to this turn (:class:`TurnDelegation`). A delegation runs
  the coworker's step of ``agents/steps.py``: the step opens, the coworker executes its task
  from ``tasks.yaml`` (CrewAI's ``Agent.execute_task``, as CrewAI's own delegation does), the
  gate after it reads the evidence, and the manager is told what the evidence says and which
  step the table takes next.
- Who picks: the table's own policy (:class:`StepTablePolicy`, a CrewAI ``BaseLLM`` that makes
  no model call; the default with the embedded model), or the model (``manager:``). A pick
  off the table does nothing: the manager is told which coworker the step needs, and the
  trace counts it.
- A coworker whose role is on the evidence path (``roles:``) works with its
  :class:`RolePolicy`: the retriever calls its bound search tool, the others leave their step
  to the evidence path. A role on the model path uses the turn's model.
- A model manager's own calls have half the time the turn has left (``MANAGER_SHARE``); a
  delegated step has the turn's. When the manager ends before the table reaches the closer
  (it stopped, failed, or ran out of iterations or of its time), the ``manage`` step says why
  and the flow's own steps finish the turn from where the table stands
  (:meth:`ManagedTurn.route_onward`).

Usage::

    route = run_managed_turn(flow)     # "done" | "refuse" | ...: where the table goes on
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any, ClassVar

from crewai import Agent, Task
from crewai.llms.base_llm import BaseLLM
from crewai.tools.agent_tools.delegate_work_tool import DelegateWorkTool
from crewai.utilities.i18n import I18N_DEFAULT
from pydantic import BaseModel, Field, PrivateAttr

from agents.crewai.crews import MANAGER_ROLE, ManagedSupportCrew, release
from agents.deadline import budget, current_deadline, turn_deadline
from agents.failures import is_outage, tolerated
from agents.manage import COWORKER_TASK, EVIDENCE, LATE, MANAGER_SHARE, Management, managing
from agents.roles import ROLES
from agents.tools.search import TOOL_NAME
from agents.topology import next_node
from agents.usage import acting_as
from tasks.gates import model_role
from tasks.prompts import role_inputs
from tasks.role_output import parse_output
from tasks.schemas import DraftAnswer, Judgement, Reformulation

MANAGER_MAX_RPM = 30  # a model manager's requests per minute
EVIDENCE_REPLY = "(evidence path: no model call; the step decides from the evidence)"
# the route that leads into each coworker's step: where the flow goes on when the manager stops
ROUTE_INTO = {
    "reformulator": "rewrite",
    "retriever": "as_is",
    "judge": "ask_judge",
    "responder": "answer",
}
OUTPUTS: dict[str, type[BaseModel] | None] = {
    "reformulator": Reformulation,
    "retriever": None,
    "judge": Judgement,
    "responder": DraftAnswer,
}


def manager_iterations(max_rounds: int) -> int:
    """The manager's ``max_iter``: the longest walk of the table (reformulate, retrieve and
    judge in every round, a draft and its revision) and the final answer."""
    return 3 * (max_rounds + 1) + 3


class ManagedTurn:
    """Where the step table stands in a managed turn, and the step each delegation runs."""

    def __init__(self, flow: Any, management: Management) -> None:
        self.steps, self.state = flow.steps, flow.state
        # the turn's own deadline: a delegated step has it, whatever the manager's time is
        self.deadline = current_deadline()
        self.management = management
        self.coworkers: dict[str, Any] = {}  # role key -> the crew's agent (:meth:`staff`)
        self.tasks: dict[str, Any] = {}  # tasks.yaml
        self.failure: BaseException | None = None  # raised by the flow once the crew ended
        self.error = ""  # the last coworker's failure, traced by its step
        self.drafts = 0
        self.node, self.route = "context", self.steps.plan().route  # rewrite | as_is

    def staff(self, coworkers: dict[str, Any], tasks: dict[str, Any]) -> None:
        """The crew's coworkers (by role key) and task specs."""
        self.coworkers, self.tasks = coworkers, tasks

    def coworker_named(self, text: str) -> str:
        """The role key of the coworker ``text`` names (matched as CrewAI's delegation does:
        whitespace and case ignored), or "" for none."""
        wanted = " ".join(text.split()).replace('"', "").casefold()
        return next((n for n, a in self.coworkers.items() if a.role.casefold() == wanted), "")

    # -- the table --------------------------------------------------------------------------
    @property
    def next(self) -> str:
        """The table's next step: a coworker, or the closer."""
        return next_node(self.node, self.route)

    def next_coworker(self) -> str | None:
        """The coworker the table hands the next step to; None when the turn is done (or
        stopped)."""
        if self.failure is not None:
            return None
        target = self.next
        return target if target in ROLES else None

    def _advance(self, node: str, route: str | None) -> None:
        self.node, self.route = node, route
        if route == "retry" and self.steps.plan().route == "as_is":
            self.node, self.route = "context", "as_is"  # another round, nothing to rephrase

    def route_onward(self) -> str:
        """The route into the table's next step, for the flow to go on from (the closer's
        route once the turn is done)."""
        target = self.next
        return ROUTE_INTO[target] if target in ROUTE_INTO else str(self.route)

    def outcome(self) -> str:
        """What the manager answers once the table reached the closer."""
        result = self.state.result
        if self.failure is not None:
            return f"The turn stopped: {type(self.failure).__name__}."
        if result is not None:
            return f"{result.verdict}: {result.answer}"
        return f"The turn ends on route {self.route!r}."

    def task_for(self, coworker: str) -> str:
        """The coworker's task, as ``tasks.yaml`` words it for this turn."""
        task = COWORKER_TASK[coworker]
        return str(self.tasks[task]["description"]).format(**role_inputs(task, self.state)).strip()

    def role_text(self, coworker: str) -> str:
        return str(self.coworkers[coworker].role)

    # -- a delegation -----------------------------------------------------------------------
    def delegate(self, coworker: str, task: str, context: str) -> str:
        """Run the step ``coworker`` is handed, when the table is at that step."""
        if self.failure is not None:
            return self.outcome()
        name = self.coworker_named(coworker)
        expected = self.next_coworker()
        if expected is None:
            return f"The turn is done; give this as your final answer: {self.outcome()}"
        kept = self.management.picked(name or coworker, [expected]) if self.management.by_model else True
        if not kept or name != expected:
            return (
                f"{coworker!r} is not the coworker for this step: the turn is at its "
                f"{COWORKER_TASK[expected]} step, which goes to {self.role_text(expected)}."
            )
        # the coworker's task is its own (tasks.yaml, this turn's inputs); a model manager's
        # words go along as context (the policy's are that task already)
        note = f"The manager asks: {task}\n{context}".strip() if self.management.by_model else ""
        try:
            with turn_deadline(*self.deadline):
                return self._run(expected, note)
        except BaseException as exc:  # the flow raises it after the crew: outage, deadline, bug
            self.failure = exc
            return f"The {COWORKER_TASK[expected]} step stopped: {type(exc).__name__}."

    def _work(self, coworker: str, uses_model: bool, note: str = "") -> Any:
        """The coworker executes its task (as CrewAI's delegation does), on its model or its
        evidence-path policy; a model role past the deadline does not run."""
        agent = self.coworkers[coworker]
        on_policy = isinstance(agent.llm, RolePolicy)
        if not uses_model and not on_policy:
            self.management.handed(coworker, ran=LATE)
            return None
        self.management.handed(coworker, ran="model" if uses_model else EVIDENCE)
        task, typed = COWORKER_TASK[coworker], OUTPUTS[coworker] if uses_model else None
        work = Task(
            description=self.task_for(coworker),
            expected_output=str(self.tasks[task]["expected_output"]),
            agent=agent,
            output_pydantic=typed,
        )
        output = None
        with tolerated(self.state, task) as failure:
            with acting_as(coworker):
                result = agent.execute_task(work, context=note or None)
            output = parse_output(result, typed) if typed is not None else None
        self.error = failure.error
        return output

    def _run(self, coworker: str, note: str) -> str:
        if coworker == "reformulator":
            with self.steps.reformulation() as call:
                call.output = self._work(coworker, call.uses_model, note)
            self._advance("reformulator", None)
            queries = self.state.queries or [self.state.message]
            return f"Queries for the search: {queries}. {self._next()}"
        if coworker == "retriever":
            with self.steps.retrieval() as search:
                self._work(coworker, search.uses_model, note)
                search.error = self.error
            decision = self.steps.evidence_gate()
            self._advance("evidence_gate", decision.route)
            return (
                f"{len(self.state.passages)} passages found. The evidence gate: {decision.route} "
                f"({decision.reason}). {self._next()}"
            )
        if coworker == "judge":
            judgement = self._work(coworker, self.steps.uses_model("judge"), note)
            decision = self.steps.judge(judgement)
            self._advance("judge", decision.route)
            return f"The judge's verdict routes to {decision.route} ({decision.reason}). {self._next()}"
        return self._respond(note)

    def _respond(self, note: str) -> str:
        """The responder's draft, then the verifier: one revision with the unsupported
        sentences named, else the verified draft or the extractive answer."""
        name = "respond" if self.drafts == 0 else "revise"
        with self.steps.drafting(name, attempt=self.drafts) as call:
            call.output = self._work("responder", call.uses_model, note)
        self.drafts += 1
        draft = self.state.draft
        if draft is not None:
            decision = self.steps.check_draft(draft)
            if decision.route == "revise" and self.drafts < 2:
                self.state.revision_note = decision.reason
                self._advance("verifier", "revise")
                return f"The draft needs a revision: {decision.reason}. {self._next()}"
        self.steps.answer(draft)
        self._advance("verifier", "done")
        return f"The answer is verified. {self._next()}"

    def _next(self) -> str:
        coworker = self.next_coworker()
        if coworker is None:
            return f"The turn is done; give this as your final answer: {self.outcome()}"
        task, role = COWORKER_TASK[coworker], self.role_text(coworker)
        return f"Next by the step table: the {task} step, for {role}."


class TurnDelegation(DelegateWorkTool):
    """CrewAI's "Delegate work to coworker", bound to one turn: a delegation runs the
    coworker's step of the turn (:meth:`ManagedTurn.delegate`)."""

    turn: Any = Field(default=None, exclude=True)

    def _run(self, task: str, context: str, coworker: str | None = None, **kwargs: Any) -> str:
        return str(self.turn.delegate(self._get_coworker(coworker, **kwargs) or "", task, context))


class SupportManager(Agent):
    """The crew's ``manager_agent``: its one tool is the turn's delegation (not CrewAI's
    default pair of delegate and ask-question tools)."""

    _delegation: Any = PrivateAttr(default=None)

    def get_delegation_tools(self, agents: Sequence[Any]) -> list[Any]:
        return [self._delegation]


def _tool_call(
    tools: list[Any] | None, name: str, arguments: dict[str, Any]
) -> list[dict[str, Any]] | None:
    """An OpenAI-style call of the offered tool named like ``name``, as CrewAI's native tool
    calling expects it (None when no such tool is offered)."""
    for tool in tools or []:
        offered = str(tool.get("function", tool).get("name", ""))
        if name in offered:
            return [
                {
                    "id": "call_policy",
                    "type": "function",
                    "function": {"name": offered, "arguments": json.dumps(arguments)},
                }
            ]
    return None


class _Policy(BaseLLM):
    """A CrewAI ``BaseLLM`` that makes no model call: a policy in an agent's seat."""

    records_usage: bool = True  # nothing to record: no request is made
    turn: Any = Field(default=None, exclude=True)

    def supports_function_calling(self) -> bool:
        return True

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 1_000_000

    def get_input_tokens_count(
        self, messages: Any, tools: Any = None, response_model: Any = None
    ) -> int:
        return 0  # nothing is sent anywhere

    async def acall(self, *args: Any, **kwargs: Any) -> Any:
        return self.call(*args, **kwargs)

    def call(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> Any:
        """CrewAI's call: the policy's ``respond``, its tool call run here when CrewAI hands
        over the functions (it asks the LLM to run the tool itself)."""
        answer = self.respond(messages, tools)
        if isinstance(answer, list) and available_functions:
            function = available_functions[answer[0]["function"]["name"]]
            return str(function(**json.loads(answer[0]["function"]["arguments"])))
        return answer

    def respond(self, messages: Any, tools: Any) -> Any:
        """The policy's reply: an OpenAI-style tool call (a list) or the text to return."""
        raise NotImplementedError


class StepTablePolicy(_Policy):
    """The manager's policy: delegate the step the table names next, with the coworker's task
    from ``tasks.yaml``; once the table reaches the closer, the turn's outcome."""

    name_: ClassVar[str] = "policy/step-table"

    def respond(self, messages: Any, tools: Any) -> Any:
        turn: ManagedTurn = self.turn
        coworker = turn.next_coworker()
        if coworker is not None:
            call = _tool_call(
                tools,
                "delegate",
                {
                    "task": turn.task_for(coworker),
                    "context": f"The step table: {turn.node} -> {turn.route or 'next'}.",
                    "coworker": turn.role_text(coworker),
                },
            )
            if call is not None:
                return call
        return turn.outcome()


class RolePolicy(_Policy):
    """A coworker's evidence path in its agent's seat (``roles:`` evidence): the retriever
    calls its bound search tool once (the customer's words; the round's queries are bound);
    the other roles leave their step to the evidence path."""

    name_: ClassVar[str] = "policy/evidence-path"

    def respond(self, messages: Any, tools: Any) -> Any:
        searched = isinstance(messages, list) and any(m.get("role") == "tool" for m in messages)
        call = None if searched else _tool_call(tools, TOOL_NAME, {"queries": [self.turn.state.message]})
        return EVIDENCE_REPLY if call is None else call


def run_managed_turn(flow: Any) -> str:
    """Run the manager's crew over the turn; the route the flow goes on from (the closer's
    once the manager finished the turn)."""
    state, settings, llm = flow.state, flow.runtime.settings, flow.setup.llm
    with managing(state, settings, str(getattr(llm, "model", "the model"))) as management:
        turn = ManagedTurn(flow, management)
        by_model = management.by_model
        instance = ManagedSupportCrew(
            llm,
            tools={"retriever": [flow.steps.tool]},
            turn=state,
            llms={
                name: llm
                if model_role(settings, COWORKER_TASK[name])
                else RolePolicy(model=RolePolicy.name_, turn=turn)
                for name in ROLES
            },
        )
        try:
            coworkers = {name: getattr(instance, name)() for name in ROLES}
            turn.staff(coworkers, instance.tasks_config)
            manager = SupportManager(
                role=MANAGER_ROLE,
                goal="Hand each step of the support turn to the one coworker whose role fits it.",
                backstory="You run a customer-support crew and never do the work yourself.",
                llm=llm if by_model else StepTablePolicy(model=StepTablePolicy.name_, turn=turn),
                allow_delegation=True,
                max_iter=manager_iterations(settings.max_rounds),
                max_retry_limit=0,  # a failed manager is not rerun from the first step
                max_rpm=MANAGER_MAX_RPM if by_model else None,
                verbose=False,
            )
            manager._delegation = TurnDelegation(
                agents=list(coworkers.values()),
                turn=turn,
                description=I18N_DEFAULT.tools("delegate_work").format(  # type: ignore[union-attr]
                    coworkers=", ".join(agent.role for agent in coworkers.values())
                ),
            )
            instance.manager_agent = manager
            instance.max_rpm = MANAGER_MAX_RPM if by_model else None
            failure = ""
            # a model manager has a share of the turn's time for its own calls; then the
            # table's steps take the rest (so the search, at least, has time)
            share = MANAGER_SHARE if by_model else 1.0
            try:
                with acting_as("manager"), budget(share) as ends:
                    instance.crew().kickoff(inputs=role_inputs("manage", state))
            except Exception as exc:  # the manager's own failure is traced, never fatal
                if turn.failure is None and is_outage(exc):
                    raise
                failure = f"failed ({type(exc).__name__}: {str(exc)[:160]})"
                if time.monotonic() >= ends:
                    failure = f"its time ({share:.0%} of what the turn had left) ran out"
        finally:
            release(instance)
        pending = turn.next_coworker()
        if turn.failure is not None:
            management.stopped(f"the {turn.next} step stopped ({type(turn.failure).__name__})")
        elif pending is None:
            management.finished()
        else:
            management.stopped(
                f"{failure or 'it ended'} before handing the {COWORKER_TASK[pending]} step to the "
                f"{pending}; the turn's own steps finish it from there"
            )
    if turn.failure is not None:
        raise turn.failure
    return turn.route_onward()

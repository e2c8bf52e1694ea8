"""The support turn on CrewAI: a ``Flow`` of ``@CrewBase`` crews wired from ``agents/topology.py``.

Each method runs its step of ``agents/steps.py`` (written once for both engines) and returns
the step's route; the listeners take their routes from the topology table (the diagram is in
``agents/topology.py`` and the README). ``@start`` ``context`` -> ``@router`` ``open_route``
(handoff | rewrite | as_is | manage) -> ``reformulate`` -> ``@router`` ``retrieve`` (the
evidence gate: answer | retry | refuse | ask_judge) -> ``@router`` ``judge`` -> ``respond`` (its
guardrail is the verifier's support check) | ``finish`` (the closer).

With ``process: hierarchical`` the ``@start`` context routes to ``delegate_turn`` first: one
``Process.hierarchical`` crew whose manager hands each step to a coworker in the order of the
same table (``agents/crewai/manager.py``); each delegation runs that step here and its gate.
When the manager ends before the turn is done, the flow's own steps finish it from where the
table stands, and the trace's ``manage`` step says why.

Usage::

    flow = SupportTurnFlow.for_turn(runtime, CrewSetup(llm, "sequential", RetrieveCrew))
    flow.kickoff(inputs={"request": request})
    flow.state.result          # TurnResult
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from crewai.flow.flow import Flow, FlowState, listen, or_, router, start
from pydantic import PrivateAttr

from agents.crewai.crews import JudgeCrew, ReformulateCrew, RespondCrew, release
from agents.failures import tolerated
from agents.runtime import TurnRuntime
from agents.steps import Search, TurnSteps
from agents.tools.evidence import evidence_found
from agents.topology import routes_into
from agents.usage import acting_as
from tasks.prompts import role_inputs
from tasks.role_output import RoleFailed, parse_output
from tasks.schemas import DraftAnswer, Judgement, Reformulation
from tasks.state import TurnState


@dataclass(frozen=True)
class CrewSetup:
    """What the flow's crews are built with (the engine's choices): the CrewAI LLM, the
    process, and the crew class of the retrieve step."""

    llm: Any
    process: str
    retrieve_crew: Any


class TurnFlowState(FlowState, TurnState):
    """The turn's state as a Flow state, defined once (given a plain model, CrewAI would
    define a new state class for every turn's Flow)."""


class SupportTurnFlow(Flow[TurnFlowState]):
    """One customer turn. Build one per turn with :meth:`for_turn`; its state is the turn's."""

    _runtime: TurnRuntime | None = PrivateAttr(default=None)
    _setup: CrewSetup | None = PrivateAttr(default=None)
    _steps: TurnSteps | None = PrivateAttr(default=None)
    # the customer's memory is supportcrew's own (Qdrant, scoped): no CrewAI Memory (and its
    # LanceDB storage) is built for every turn's Flow, the way CrewAI's own inner flows skip it
    _skip_auto_memory: bool = PrivateAttr(default=True)

    @classmethod
    def for_turn(cls, runtime: TurnRuntime, setup: CrewSetup) -> SupportTurnFlow:
        flow = cls(suppress_flow_events=True)
        flow._runtime, flow._setup = runtime, setup
        return flow

    @property
    def steps(self) -> TurnSteps:
        if self._steps is None:
            raise RuntimeError("the turn's steps start with the context step")
        return self._steps

    @property
    def setup(self) -> CrewSetup:
        if self._setup is None:
            raise RuntimeError("build the flow with SupportTurnFlow.for_turn")
        return self._setup

    @property
    def runtime(self) -> TurnRuntime:
        if self._runtime is None:
            raise RuntimeError("build the flow with SupportTurnFlow.for_turn")
        return self._runtime

    # ---- running a crew -----------------------------------------------------------------
    def _kickoff(self, crew_class: type, role: str, inputs: dict[str, str], **crew_kwargs: Any) -> Any:
        instance = crew_class(self.setup.llm, **crew_kwargs)
        try:
            with acting_as(role):
                return instance.crew().kickoff(inputs=inputs)
        finally:
            release(instance)

    def _role(
        self, crew_class: type, role: str, task: str, output_model: type[Any], **crew_kwargs: Any
    ) -> Any:
        """A role's typed output, or None when the model gave nothing usable (traced)."""
        output = None
        with tolerated(self.state, task):
            result = self._kickoff(crew_class, role, role_inputs(task, self.state), **crew_kwargs)
            output = parse_output(result, output_model)
        return output

    # ---- the flow: the steps, in the topology's order --------------------------------------
    @start()
    def context(self) -> None:
        self._steps = TurnSteps(self.state, self.runtime)
        self.steps.open()

    @router(context)
    def open_route(self) -> str:
        decision = self.steps.intake()
        if decision is not None:
            return decision.route
        if self.setup.process == "hierarchical":
            return "manage"
        return self.steps.plan().route

    @router("manage")
    def delegate_turn(self) -> str:
        """The hierarchical crew's turn: its manager hands each step to a coworker in the
        table's order; the route onward is the closer's once it finished (else the route into
        the step it did not hand over, which the flow's own steps take from there)."""
        from agents.crewai.manager import run_managed_turn

        return run_managed_turn(self)

    @listen(or_(*routes_into("reformulator")))
    def reformulate(self) -> None:
        if self.state.route == "retry" and self.steps.plan().route == "as_is":
            return
        with self.steps.reformulation() as call:
            if call.uses_model:
                call.output = self._role(ReformulateCrew, "reformulator", "reformulate", Reformulation)

    @router(or_(reformulate, *routes_into("retriever")))
    def retrieve(self) -> str:
        with self.steps.retrieval() as search:
            if search.uses_model:
                self._search_with_crew(search)
        return self.steps.evidence_gate().route

    def _search_with_crew(self, search: Search) -> None:
        """The retrieval crew's turn: its retriever searches with the bound tool, added agents
        find evidence of their own; a failure is noted and the step searches directly."""
        instance = self.setup.retrieve_crew(
            self.setup.llm, turn=self.state, tools={"retriever": [search.tool]}
        )
        try:
            with tolerated(self.state, "retrieve") as failure:
                crew = instance.crew()
                with acting_as("retriever"):
                    crew.kickoff(inputs=role_inputs("retrieve", self.state))
                search.extra = evidence_found(crew.agents)
        finally:
            release(instance)
        search.error = failure.error

    @router(or_(*routes_into("judge")))
    def judge(self) -> str:
        judgement = self._role(JudgeCrew, "judge", "judge", Judgement)
        return self.steps.judge(judgement).route

    @listen(or_(*routes_into("responder")))
    def respond(self) -> None:
        def guardrail(output: Any):  # CrewAI rejects a string return annotation
            try:
                draft = parse_output(output, DraftAnswer)
            except RoleFailed as exc:
                return False, str(exc)
            decision = self.steps.check_draft(draft)
            return (True, output) if decision.route == "done" else (False, decision.reason)

        with self.steps.drafting() as call:
            if call.uses_model:
                call.output = self._role(
                    RespondCrew, "responder", "respond", DraftAnswer, guardrail=guardrail
                )
                call.info["draft"] = "kept by the guardrail" if call.output else "none usable"
        self.steps.answer(call.output)

    @listen(or_(*routes_into("closer")))
    def finish(self) -> None:
        self.steps.close()

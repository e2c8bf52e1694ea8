"""The support turn on CrewAI: a ``Flow`` of ``@CrewBase`` crews, routed by the evidence gates.

```
@start context ──► plan ──(rewrite)──► reformulate ─┐
                    └──(as_is)──────────────────────┴► retrieve ──► @router evidence_gate
   evidence_gate: answer ──► respond (guardrail = support check) ──► finish
                  ask_judge ──► @router judge ──► answer | retry | refuse | handoff
                  retry ──► plan (next round, bounded by max_rounds)
                  refuse | handoff ──► finish
```

With ``process: hierarchical`` the ``@start`` context routes to ``delegate_turn`` first: one
``Process.hierarchical`` crew whose manager delegates the whole turn to the four coworkers.
Its retrieval and draft pass the same gates; when the manager fails (it does with a small
local model), the flow continues on the sequential path and the trace says where and why.

Usage::

    flow = SupportTurnFlow.for_turn(runtime, engine)
    flow.kickoff(inputs={"request": request})
    flow.state.result          # TurnResult
"""

from __future__ import annotations

from typing import Any

from crewai.flow.flow import Flow, FlowState, listen, or_, router, start
from pydantic import PrivateAttr

from agents.crewai.crews import (
    JudgeCrew,
    ReformulateCrew,
    RespondCrew,
    release,
)
from agents.steps import (
    EVIDENCE_PATH,
    bind_search_tool,
    is_outage,
    load_context,
    record_retrieval,
    role_inputs,
    role_uses_model,
)
from agents.tools.evidence import evidence_found
from agents.usage import acting_as
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
from tasks.schemas import DraftAnswer, Judgement, Reformulation
from tasks.state import TurnState


class TurnFlowState(FlowState, TurnState):
    """The turn's state as a Flow state, defined once (given a plain model, CrewAI would
    define a new state class for every turn's Flow)."""


class SupportTurnFlow(Flow[TurnFlowState]):
    """One customer turn. Build one per turn with :meth:`for_turn`; its state is the turn's."""

    _runtime: Any = PrivateAttr(default=None)
    _engine: Any = PrivateAttr(default=None)
    _tool: Any = PrivateAttr(default=None)
    # the customer's memory is supportcrew's own (Qdrant, scoped): no CrewAI Memory (and its
    # LanceDB storage) is built for every turn's Flow, the way CrewAI's own inner flows skip it
    _skip_auto_memory: bool = PrivateAttr(default=True)

    @classmethod
    def for_turn(cls, runtime: Any, engine: Any) -> SupportTurnFlow:
        flow = cls(suppress_flow_events=True)
        flow._runtime, flow._engine = runtime, engine
        return flow

    # ---- running a crew -----------------------------------------------------------------
    def _kickoff(self, crew_class: type, role: str, inputs: dict[str, str], **crew_kwargs: Any
                 ) -> Any:
        instance = crew_class(self._engine.llm, **crew_kwargs)
        try:
            with acting_as(role):
                return instance.crew().kickoff(inputs=inputs)
        finally:
            release(instance)

    def _role(self, crew_class: type, role: str, task: str, output_model: type[Any],
              **crew_kwargs: Any) -> Any:
        """A role's typed output, or None when the model gave nothing usable (traced)."""
        try:
            result = self._kickoff(crew_class, role, role_inputs(task, self.state), **crew_kwargs)
            return parse_output(result, output_model)
        except Exception as exc:
            if is_outage(exc):
                raise
            self.state.note(f"{task} failed ({type(exc).__name__}: {str(exc)[:160]})")
            return None

    # ---- the flow -------------------------------------------------------------------------
    @start()
    def context(self) -> None:
        load_context(self.state, self._runtime)
        self._tool = bind_search_tool(self.state, self._runtime)

    @router(context)
    def choose_process(self) -> str:
        if intake_route(self.state) == "handoff":
            return "handoff"
        return "manage" if self._engine.process == "hierarchical" else "sequential"

    @router("manage")
    def delegate_turn(self) -> str:
        """The hierarchical crew's turn, accepted only when its work passes the gates."""
        from agents.crewai.manager import run_managed_turn

        return run_managed_turn(self, self._tool)

    @router(or_("sequential", "retry", "fallback"))
    def plan(self) -> str:
        if plan_rewrite(self.state):
            return "rewrite"
        self.state.skip("reformulate", self.state.rewrite_reason, round=self.state.round_index)
        self.state.queries, self.state.advisory = [], {}
        return "as_is"

    def _uses_model(self, role: str) -> bool:
        return role_uses_model(self.state, self._runtime.settings, role)

    @listen("rewrite")
    def reformulate(self) -> None:
        with self.state.step("reformulate", round=self.state.round_index) as info:
            rewrite = None
            if self._uses_model("reformulate"):
                rewrite = self._role(ReformulateCrew, "reformulator", "reformulate", Reformulation)
            else:
                info["decided_by"] = EVIDENCE_PATH.format(role="reformulate")
            info.update(merge_rewrite(self.state, rewrite))

    @router(or_(reformulate, "as_is"))
    def retrieve(self) -> str:
        self._tool.bind_round(self.state.queries, self.state.advisory)
        before, error, extra = len(self._tool.calls), "", []
        if not self._uses_model("retrieve"):
            with self.state.step("retrieve", round=self.state.round_index) as info:
                record_retrieval(self.state, self._tool, before, info,
                                 EVIDENCE_PATH.format(role="retrieve"))
            return evidence_route(self.state, self._runtime.scorer, self._runtime.settings)
        instance = self._engine.retrieve_crew(self._engine.llm, turn=self.state,
                                              tools={"retriever": [self._tool]})
        with self.state.step("retrieve", round=self.state.round_index) as info:
            try:
                crew = instance.crew()
                with acting_as("retriever"):
                    crew.kickoff(inputs=role_inputs("retrieve", self.state))
                extra = evidence_found(crew.agents)
            except Exception as exc:
                if is_outage(exc):
                    raise
                error = f"{type(exc).__name__}: {str(exc)[:160]}"
                self.state.note(f"retrieve failed ({error})")
            finally:
                release(instance)
            record_retrieval(self.state, self._tool, before, info, error, extra)
        return evidence_route(self.state, self._runtime.scorer, self._runtime.settings)

    @router("ask_judge")
    def judge(self) -> str:
        judgement = self._role(JudgeCrew, "judge", "judge", Judgement)
        return judge_route(self.state, judgement, self._runtime.settings)

    @listen("answer")
    def respond(self) -> None:
        def guardrail(output: Any):  # CrewAI rejects a string return annotation
            try:
                draft = parse_output(output, DraftAnswer)
            except RoleFailed as exc:
                return False, str(exc)
            ok, unsupported = support_check(self.state, self._runtime.scorer, draft.answer)
            if ok:
                return True, output
            return False, revision_request(unsupported)

        with self.state.step("respond") as info:
            draft = None
            if self._uses_model("respond"):
                draft = self._role(RespondCrew, "responder", "respond", DraftAnswer,
                                   guardrail=guardrail)
                info["draft"] = "kept by the guardrail" if draft else "none usable"
            else:
                info["decided_by"] = EVIDENCE_PATH.format(role="respond")
        self.state.draft = draft
        self.state.result = answer_result(self.state, self._runtime.scorer,
                                          self._runtime.settings, draft)

    @listen(or_("refuse", "handoff"))
    def finish(self) -> None:
        self.state.skip("respond", f"route {self.state.route}: no grounded answer")
        self.state.result = closing_result(self.state, self._runtime.settings)


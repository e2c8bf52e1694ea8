"""``process: hierarchical`` on CrewAI: a manager delegates the whole turn, evidence accepts.

The ``ManagedSupportCrew`` runs the four tasks under a manager agent (bounded by
``max_iter`` and ``max_rpm``). Its work is accepted only when the retriever coworker searched
with the bound tool, the evidence gate finds the passages sufficient, and the responder's
draft passes the support check. Anything else — an exception, a task done by the wrong
coworker, an unsupported draft — sends the flow down the sequential path, and the trace says
where and why (CrewAI's manager is known not to delegate reliably, crewAI #4783).

Usage::

    route = run_managed_turn(flow)     # "accepted" | "fallback"
"""

from __future__ import annotations

from typing import Any

from agents.crewai.crews import ManagedSupportCrew, ManagerOffTrack, release
from agents.crewai.events import agents_at_work
from agents.failures import is_outage
from agents.roles import ROLES
from agents.steps import record_retrieval
from agents.usage import acting_as
from tasks.prompts import role_inputs
from tasks.role_output import RoleFailed, parse_output
from tasks.schemas import DraftAnswer

PENDING_PASSAGES = "(the passages the retriever coworker finds; see the context)"


def _inputs(flow: Any) -> dict[str, str]:
    state = flow.state
    inputs: dict[str, str] = {}
    for task in ("reformulate", "retrieve", "judge", "respond"):
        inputs.update(role_inputs(task, state))
    inputs["passages"] = PENDING_PASSAGES
    return inputs


def _fallback(flow: Any, why: str) -> str:
    state = flow.state
    state.note(f"manager: {why}; finishing the turn on the sequential path")
    with state.step("manager_check") as info:
        info.update(accepted=False, why=why)
    state.round_index, state.retrieval, state.route, state.queries = 0, None, None, []
    return "fallback"


def run_managed_turn(flow: Any) -> str:
    """Run the manager's crew and accept its answer only through the evidence gates."""
    state, steps = flow.state, flow.steps
    tool = steps.tool
    instance = ManagedSupportCrew(flow.setup.llm, tools={"retriever": [tool]}, turn=state)
    roles = {instance.agents_config[name]["role"]: name for name in ROLES}
    before = len(tool.calls)
    with state.step("manage") as info:
        try:
            with acting_as("manager"), agents_at_work() as worked:
                output = instance.crew().kickoff(inputs=_inputs(flow))
        except ManagerOffTrack as exc:
            output, failure = None, str(exc)
        except Exception as exc:  # the manager's failure is traced, never fatal
            if is_outage(exc):
                raise
            output, failure = None, f"failed ({type(exc).__name__}: {str(exc)[:160]})"
        else:
            failure = ""
        finally:
            release(instance)
        delegated = [roles[role] for role in dict.fromkeys(worked) if role in roles]
        info.update(delegated_to=delegated, searches=len(tool.calls) - before)
    if failure:
        return _fallback(flow, failure)
    if len(tool.calls) == before or "retriever" not in delegated:
        return _fallback(flow, "the retriever coworker never searched")
    with state.step("retrieve", round=0, by="the manager's retriever coworker") as info:
        record_retrieval(state, tool, before, info)
    route = steps.evidence_gate().route
    if route != "answer":
        return _fallback(flow, f"the evidence gate routes to {route!r}, not 'answer'")
    if "responder" not in delegated:
        return _fallback(flow, "the responder coworker never drafted the answer")
    try:
        draft = parse_output(output, DraftAnswer)
    except RoleFailed as exc:
        return _fallback(flow, f"no usable draft ({exc})")
    checked = steps.check_draft(draft)
    if checked.route != "done":
        return _fallback(flow, f"{len(checked.unsupported)} unsupported sentence(s) in the draft")
    with state.step("manager_check") as info:
        info.update(accepted=True, why="searched, evidence sufficient, draft supported")
    steps.answer(draft)
    return "accepted"

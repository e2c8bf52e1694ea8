"""The manager of ``process: hierarchical``, written once for both engines: what it did, as
the trace's ``manage`` step.

Both managers hand the turn's steps to the role agents in the order of the step table
(``agents/topology.py``), the one the sequential process follows: CrewAI's
``Process.hierarchical`` manager through its delegation tool (``agents/crewai/manager.py``),
AutoGen's ``SelectorGroupChat`` through its ``selector_func`` (``agents/autogen/engine.py``).
The manager is the table's own policy (no model call) unless ``manager:`` makes it the model
(``Settings.model_manages``); a model's pick off the table is refused, traced and corrected.

The ``manage`` step is the first step of the turn after the context, whatever ran inside it::

    {"name": "manage", "detail": {"manager": "policy: the step table, no model call",
     "delegated_to": ["retriever", "responder"], "delegations": [...], "completed": true}}

A manager that ends before the table reaches the closer (it stopped, failed, ran out of
iterations or of time) leaves ``completed: false`` and its reason in ``why`` and in the
notes; the engine's own steps finish the turn from where the table stands.

Usage::

    with managing(state, settings, model_name) as manager:
        manager.handed("retriever", ran="evidence path")      # one per delegation
        manager.picked("judge", expected=["responder"])       # a model's pick, off the table
        manager.finished()                                    # the table reached the closer
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from agents.deadline import expired
from agents.roles import ROLES
from config.settings import Settings
from tasks.gates import model_role
from tasks.schemas import Step
from tasks.state import TurnState

POLICY = "policy: the step table, no model call"
# a model manager's own calls end by this share of the time its turn had left when it began;
# the table picks after that, so the turn's own steps (the search, at least) keep their time
MANAGER_SHARE = 0.5
# what a manage step says when the turn's result was made while the manager worked
UNFINISHED = "the turn ended (its deadline, or a cancel) before the manager finished"
EVIDENCE = "evidence path"
LATE = "evidence path (the deadline passed)"
# the task each coworker is handed (``config/tasks.yaml``)
COWORKER_TASK = dict(zip(ROLES, ("reformulate", "retrieve", "judge", "respond"), strict=True))


@dataclass
class Management:
    """What one turn's manager did: each hand-off, each pick the model made, how it ended."""

    manager: str
    delegations: list[dict[str, Any]] = field(default_factory=list)
    picks: list[dict[str, Any]] = field(default_factory=list)
    completed: bool = False
    why: str = ""
    live: Step | None = None  # the trace's manage step while the manager works

    def _sync(self) -> None:
        if self.live is not None:
            self.live.detail = self.detail()

    @property
    def by_model(self) -> bool:
        return self.manager != POLICY

    @property
    def delegated_to(self) -> list[str]:
        """The coworkers handed a step, in order (a second round or a revision repeats one)."""
        return [d["to"] for d in self.delegations]

    def handed(self, coworker: str, ran: str, **detail: Any) -> None:
        """A step handed to ``coworker``; ``ran``: "model", "evidence path" or why it did not."""
        self.delegations.append(
            {"to": coworker, "task": COWORKER_TASK.get(coworker, coworker), "ran": ran, **detail}
        )
        self._sync()

    def picked(self, picked: str, expected: list[str]) -> bool:
        """The model's pick; False (and traced) when the table expected another coworker."""
        kept = picked in expected
        self.picks.append({"picked": picked, "expected": list(expected), "kept": kept})
        self._sync()
        return kept

    def finished(self) -> None:
        self.completed, self.why = True, ""

    def stopped(self, why: str) -> None:
        """The manager ended before the table reached the closer."""
        self.completed, self.why = False, why

    def detail(self) -> dict[str, Any]:
        detail: dict[str, Any] = {
            "manager": self.manager,
            "delegated_to": self.delegated_to,
            "delegations": self.delegations,
            "completed": self.completed,
        }
        if self.by_model:
            detail["picks"] = self.picks
            detail["off_table"] = sum(not p["kept"] for p in self.picks)
        if self.why:
            detail["why"] = self.why
        return detail


def path_of(settings: Settings, coworker: str) -> str:
    """How a coworker handed a step works: "model", or "evidence path" (``roles:``, or the
    turn's deadline passed)."""
    if not model_role(settings, COWORKER_TASK[coworker]):
        return EVIDENCE
    return LATE if expired() else "model"


def manager_name(settings: Settings, model: str) -> str:
    """How the trace names the manager: the table's policy, or the model by name."""
    return f"model: {model}" if settings.model_manages() else POLICY


@contextmanager
def managing(state: TurnState, settings: Settings, model: str) -> Iterator[Management]:
    """The ``manage`` step around the manager's work, placed before the steps it ran.

    The step is in the trace from the start and follows each hand-off, so a turn that its
    deadline ends while the manager works (the result is then made from the live state) shows
    what the manager had handed out, with ``completed: false``.
    """
    management = Management(manager_name(settings, model))
    management.why = UNFINISHED
    live = Step(name="manage", detail=management.detail(), at=round(time.time(), 4))
    management.live = live
    steps = state.trace.steps
    start = len(steps)
    steps.append(live)
    try:
        with state.step("manage") as info:
            try:
                yield management
            finally:
                if management.why == UNFINISHED:
                    management.why = ""
                info.update(management.detail())
    finally:
        management.live = None
        steps[:] = [step for step in steps if step is not live]
        if steps and steps[-1].name == "manage":
            manage = steps.pop()
            at = start  # the manager's step before the work it handed out (after the context)
            while at < len(steps) and steps[at].name in ("context", "intake"):
                at += 1
            if management.delegations or not management.completed:
                steps.insert(at, manage)
            # else the turn ended at intake (a hand-off, a courtesy), before any step a manager
            # hands out: CrewAI's manager never runs then, so neither engine records one
    if not management.completed:
        state.note(f"manager: {management.why or 'it did not finish the turn'}")

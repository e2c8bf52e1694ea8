"""Run the four roles on CrewAI: one task at a time, sequential or under a manager.

The turn orchestration (``tasks/turn.py``) asks this engine for one role's typed output at a
time. ``process: sequential`` runs the role's task as a ``Process.sequential`` crew.
``process: hierarchical`` hands the task to a ``Process.hierarchical`` crew whose manager must
delegate it to the right coworker; CrewAI's manager is known not to delegate reliably
(crewAI #4783), so the delegated step is validated (the right agent did it, the output parses)
and, when the manager fails, the turn finishes on the sequential path and the trace says so.

Usage::

    engine = CrewAIEngine(llm, load_role_specs(), process="sequential")
    judgement = engine.run_role("judge", {"question": "...", "passages": "..."}, Judgement)
"""

from __future__ import annotations

import json
import time
import warnings
from typing import Any

from crewai import Agent, Crew, Process, Task
from pydantic import BaseModel, ValidationError

from agents.roles import TASKS, RoleSpecs
from agents.usage import acting_as, record_call

MANAGER_MAX_ITER = 2


class RoleFailed(RuntimeError):
    """A role produced no usable output."""


def parse_output(result: Any, output_model: type[BaseModel]) -> BaseModel:
    """A role's typed output from a framework result, its raw text, or JSON inside text."""
    if isinstance(getattr(result, "pydantic", None), output_model):
        return result.pydantic
    raw = getattr(result, "raw", result)
    try:
        return output_model.model_validate_json(str(raw))
    except ValidationError:
        pass
    try:
        text = str(raw)
        return output_model.model_validate(json.loads(text[text.index("{"): text.rindex("}") + 1]))
    except (ValueError, ValidationError) as exc:
        raise RoleFailed(f"unusable {output_model.__name__}: {str(raw)[:200]}") from exc


class CrewAIEngine:
    name = "crewai"

    def __init__(self, llm: Any, specs: RoleSpecs, process: str = "sequential",
                 tools: dict[str, list[Any]] | None = None) -> None:
        self.llm = llm
        self.specs = specs
        self.process = process
        self.tools = tools or {}
        self.manager_failed = False
        self.notes: list[str] = []

    def agent(self, role: str, on_step: Any = None) -> Agent:
        spec = self.specs.agents[role]
        with warnings.catch_warnings():  # a step callback only blocks CrewAI checkpointing
            warnings.simplefilter("ignore", UserWarning)
            return Agent(role=spec["role"], goal=spec["goal"], backstory=spec["backstory"],
                         llm=self.llm, tools=self.tools.get(role, []), allow_delegation=False,
                         max_iter=1, verbose=False, step_callback=on_step)

    def _task(self, task: str, inputs: dict[str, str], output_model: type[BaseModel],
              agent: Agent | None) -> Task:
        return Task(description=self.specs.describe(task, inputs),
                    expected_output=self.specs.tasks[task]["expected_output"],
                    agent=agent, output_pydantic=output_model)

    def run_role(self, task: str, inputs: dict[str, str], output_model: type[BaseModel]
                 ) -> BaseModel:
        role = TASKS[task]
        if self.process == "hierarchical" and not self.manager_failed:
            try:
                return self._run_hierarchical(task, role, inputs, output_model)
            except Exception as exc:  # the manager's failure is recorded, never fatal
                self.manager_failed = True
                self.notes.append(f"manager failed on {task} ({type(exc).__name__}: "
                                  f"{str(exc)[:120]}); finishing the turn sequentially")
        return self._run_sequential(task, role, inputs, output_model)

    def _measured_kickoff(self, crew: Crew, role: str) -> Any:
        own_counts = getattr(self.llm, "records_usage", False)
        before = None if own_counts else self.llm.get_token_usage_summary()
        started = time.perf_counter()
        with acting_as(role):
            result = crew.kickoff()
        if before is not None:  # CrewAI's LLM: this kickoff's delta of the instance's counters
            after = self.llm.get_token_usage_summary()
            requests = max(after.successful_requests - before.successful_requests, 1)
            ms = (time.perf_counter() - started) * 1000 / requests
            with acting_as(role):
                record_call(after.prompt_tokens - before.prompt_tokens,
                            after.completion_tokens - before.completion_tokens, ms, "crewai")
                for _ in range(requests - 1):
                    record_call(0, 0, ms, "crewai")
        return result

    def _run_sequential(self, task: str, role: str, inputs: dict[str, str],
                        output_model: type[BaseModel]) -> BaseModel:
        agent = self.agent(role)
        crew = Crew(agents=[agent], tasks=[self._task(task, inputs, output_model, agent)],
                    process=Process.sequential, verbose=False)
        return parse_output(self._measured_kickoff(crew, role), output_model)

    def _run_hierarchical(self, task: str, role: str, inputs: dict[str, str],
                          output_model: type[BaseModel]) -> BaseModel:
        worked: list[str] = []
        agents = [self.agent(name, on_step=lambda _step, name=name: worked.append(name))
                  for name in self.specs.agents]
        manager = Agent(role="Support manager",
                        goal="Delegate each task to the one coworker whose role fits it.",
                        backstory="You run a customer-support crew and never do the work "
                                  "yourself.", llm=self.llm, allow_delegation=True,
                        max_iter=MANAGER_MAX_ITER, verbose=False)
        crew = Crew(agents=agents, tasks=[self._task(task, inputs, output_model, None)],
                    process=Process.hierarchical, manager_agent=manager, verbose=False)
        result = self._measured_kickoff(crew, "manager")
        if role not in worked:
            raise RoleFailed(f"the manager did not delegate {task} to the {role} "
                             f"(coworkers that worked: {sorted(set(worked)) or 'none'})")
        self.notes.append(f"manager delegated {task} to the {role}")
        return parse_output(result, output_model)

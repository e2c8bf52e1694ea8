"""The support crews, written the way CrewAI users write crews: ``@CrewBase`` classes whose
agents and tasks come from ``config/agents.yaml`` and ``config/tasks.yaml``.

One crew per step of the turn's ``Flow`` (``agents/crewai/flow.py``): reformulate, retrieve,
judge, respond; and, for ``process: hierarchical``, one ``Process.hierarchical`` crew whose
manager hands each step of the turn to one of the four coworkers (``agents/crewai/manager.py``).
Inputs reach the task descriptions through ``kickoff(inputs=...)``; the flow builds the crews
for each turn (the retriever's search tool is bound to that turn's enforced slots) and releases
them afterwards.

Adding an agent with its own tool to the retrieval step takes one entry in each YAML file
(the task named like the agent) and one ``@agent`` method on a subclass of ``RetrieveCrew``;
what its tool returns joins the evidence and passes the same gates::

    @CrewBase
    class RetrieveWithOrders(RetrieveCrew):
        @agent
        def order_desk(self) -> Agent:
            return self.role_agent("order_desk", tools=[OrderStatusTool(self.turn)])

Usage::

    crew = JudgeCrew(llm).crew()
    output = crew.kickoff(inputs={"question": "...", "passages": "..."})
    release(crew_instance)      # after the turn: CrewAI memoizes @agent/@task per instance
"""

# @CrewBase adds agents/tasks to the class and @agent/@task wrap methods in objects whose
# types do not describe a bound call: mypy cannot follow them here
# mypy: disable-error-code="call-arg, attr-defined"

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from crewai import Agent, Crew, Process, Task
from crewai.project import CrewBase, agent, crew, task
from crewai.project.utils import cache as _memo_cache

from agents.crewai.tools import crewai_tool
from agents.roles import CONFIG_DIR, ROLES
from tasks.schemas import DraftAnswer, Judgement, Reformulation

MANAGER_ROLE = "Support manager"
# absolute, so a crew subclassed in another package still reads our YAML (CrewAI resolves
# relative paths against the module that defines the class)
AGENTS_CONFIG = str(CONFIG_DIR / "agents.yaml")
TASKS_CONFIG = str(CONFIG_DIR / "tasks.yaml")


class SupportAgents:
    """The four role agents of ``config/agents.yaml``, shared by every support crew.

    ``tools`` maps an agent's name to the tools it holds for this turn, ``llms`` to a model
    of its own (the turn's ``llm`` otherwise); ``step_callback`` sees every step of every agent.
    """

    agents_config: Any = AGENTS_CONFIG
    tasks_config: Any = TASKS_CONFIG

    def __init__(
        self,
        llm: Any,
        tools: dict[str, list[Any]] | None = None,
        step_callback: Callable[[str], None] | None = None,
        guardrail: Callable[[Any], tuple[bool, Any]] | None = None,
        turn: Any = None,
        llms: dict[str, Any] | None = None,
    ) -> None:
        self.llm = llm
        self.llms = llms or {}
        self.turn = turn  # this turn's TurnState: what added agents' tools scope by
        self.tools = tools or {}
        self.on_step = step_callback
        self.guardrail = guardrail

    def role_agent(self, name: str, tools: list[Any] | None = None) -> Agent:
        """An agent from its ``agents.yaml`` entry, on the turn's model, with its tools."""
        on_step = self.on_step
        callback = (lambda _step, name=name: on_step(name)) if on_step else None
        with warnings.catch_warnings():  # a step callback only blocks CrewAI checkpointing
            warnings.simplefilter("ignore", UserWarning)
            held = tools if tools is not None else self.tools.get(name, [])
            return Agent(
                config=self.agents_config[name],
                llm=self.llms.get(name, self.llm),
                tools=[crewai_tool(t) for t in held],
                allow_delegation=False,
                max_iter=1,
                max_retry_limit=0,
                verbose=False,
                step_callback=callback,
            )

    @agent
    def reformulator(self) -> Agent:
        return self.role_agent("reformulator")

    @agent
    def retriever(self) -> Agent:
        return self.role_agent("retriever")

    @agent
    def judge(self) -> Agent:
        return self.role_agent("judge")

    @agent
    def responder(self) -> Agent:
        return self.role_agent("responder")

    def role_task(self, name: str, agent_: Agent | None, **extra: Any) -> Task:
        with warnings.catch_warnings():  # callbacks only block CrewAI checkpointing
            warnings.simplefilter("ignore", UserWarning)
            return Task(config=self.tasks_config[name], agent=agent_, **extra)

    @crew
    def crew(self) -> Crew:
        """The crew's own tasks, in order, each by its agent (overridden where that differs)."""
        return Crew(agents=self.agents, tasks=self.tasks, process=Process.sequential, verbose=False)


@CrewBase
class ReformulateCrew(SupportAgents):
    """Rewrite the latest message as a standalone query (only when it needs it)."""

    @task
    def reformulate(self) -> Task:
        return self.role_task("reformulate", self.reformulator(), output_pydantic=Reformulation)


@CrewBase
class RetrieveCrew(SupportAgents):
    """The retriever searches with the turn's bound tool; extra agents add their evidence."""

    @task
    def retrieve(self) -> Task:
        return self.role_task("retrieve", self.retriever())

    @crew
    def crew(self) -> Crew:
        agents, tasks = [self.retriever()], [self.retrieve()]
        for name in self.evidence_agents():  # an added agent runs the task named like it
            helper = getattr(self, name)()
            agents.append(helper)
            tasks.append(self.role_task(name, helper))
        return Crew(agents=agents, tasks=tasks, process=Process.sequential, verbose=False)

    @classmethod
    def evidence_agents(cls) -> list[str]:
        """Agents a subclass adds to the retrieval step, by method name."""
        return [
            n for n in dir(cls) if n not in ROLES and getattr(getattr(cls, n, None), "is_agent", False)
        ]


@CrewBase
class JudgeCrew(SupportAgents):
    """Runs only when the evidence gate is undecided."""

    @task
    def judge_task(self) -> Task:
        return self.role_task("judge", self.judge(), output_pydantic=Judgement)


@CrewBase
class RespondCrew(SupportAgents):
    """Drafts the answer; the task's guardrail is the evidence support check."""

    @task
    def respond(self) -> Task:
        return self.role_task(
            "respond",
            self.responder(),
            output_pydantic=DraftAnswer,
            guardrail=self.guardrail,
            guardrail_max_retries=1,
        )


@CrewBase
class ManagedSupportCrew(SupportAgents):
    """``process: hierarchical``: one task, the turn, owned by a manager that hands each step
    to the coworker the step table names (``agents/crewai/manager.py`` builds the manager and
    its delegation tool; ``llms`` gives each coworker the model, or its evidence-path policy)."""

    manager_agent: Agent | None = None
    max_rpm: int | None = None

    @task
    def manage(self) -> Task:
        return self.role_task("manage", None)

    @crew
    def crew(self) -> Crew:
        coworkers = [self.reformulator(), self.retriever(), self.judge(), self.responder()]
        return Crew(
            agents=coworkers,
            tasks=self.tasks,
            process=Process.hierarchical,
            manager_agent=self.manager_agent,
            max_rpm=self.max_rpm,
            verbose=False,
        )


def release(instance: Any) -> None:
    """Drop CrewAI's memoized agents/tasks/crew of a per-turn crew instance.

    ``@agent``, ``@task`` and ``@crew`` memoize into one process-wide cache keyed by the
    instance's ``id``: without this, every turn's objects stay alive, and a later instance
    that reuses the address would get an earlier turn's agents (and their bound tools).
    """
    marker = f"('__instance__', {id(instance)})"
    with _memo_cache._lock.w_locked():
        for key in [k for k in _memo_cache._cache if marker in k]:
            del _memo_cache._cache[key]

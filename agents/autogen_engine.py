"""Run the four roles on AutoGen agentchat: the same specs, outputs and turn as on CrewAI.

``process: sequential`` runs each role's task in a ``RoundRobinGroupChat`` of that role's
``AssistantAgent`` (structured output via ``output_content_type``), ended by the agent's
reply. ``process: hierarchical`` puts all four agents in a ``SelectorGroupChat`` whose model
picks the speaker; small models are known to fail speaker selection (autogen #6944, #5453), so
the choice is validated, the rounds bounded, and on a wrong choice the turn finishes on the
sequential path with a note in the trace.

Usage::

    engine = AutoGenEngine(BaseLLMChatClient(llm), load_role_specs(), process="sequential")
    judgement = engine.run_role("judge", {"question": "...", "passages": "..."}, Judgement)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.messages import StructuredMessage
from autogen_agentchat.teams import RoundRobinGroupChat, SelectorGroupChat
from pydantic import BaseModel

from agents.autogen_client import BaseLLMChatClient
from agents.crewai_engine import RoleFailed, parse_output
from agents.roles import TASKS, RoleSpecs
from agents.usage import acting_as, record_call

SELECTOR_MAX_MESSAGES = 3


def run_sync(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine from sync code, also when an event loop is already running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _system_message(spec: dict[str, str]) -> str:
    return f"You are the {spec['role']}. {spec['goal']}\n{spec['backstory']}"


class AutoGenEngine:
    name = "autogen"

    def __init__(self, client: Any, specs: RoleSpecs, process: str = "sequential") -> None:
        self.client = client
        self.specs = specs
        self.process = process
        self.manager_failed = False
        self.notes: list[str] = []

    def agent(self, role: str, output_model: type[BaseModel] | None) -> AssistantAgent:
        return AssistantAgent(role, model_client=self.client,
                              system_message=_system_message(self.specs.agents[role]),
                              description=self.specs.agents[role]["goal"],
                              output_content_type=output_model)

    def run_role(self, task: str, inputs: dict[str, str], output_model: type[BaseModel]
                 ) -> BaseModel:
        role = TASKS[task]
        prompt = (f"{self.specs.describe(task, inputs)}\n\nExpected output: "
                  f"{self.specs.tasks[task]['expected_output']}")
        if self.process == "hierarchical" and not self.manager_failed:
            try:
                return run_sync(self._selector(role, prompt, output_model))
            except Exception as exc:  # the selector's failure is recorded, never fatal
                self.manager_failed = True
                self.notes.append(f"selector failed on {task} ({type(exc).__name__}: "
                                  f"{str(exc)[:120]}); finishing the turn sequentially")
        return run_sync(self._round_robin(role, prompt, output_model))

    async def _round_robin(self, role: str, prompt: str, output_model: type[BaseModel]
                           ) -> BaseModel:
        team = RoundRobinGroupChat([self.agent(role, output_model)],
                                   termination_condition=MaxMessageTermination(2),
                                   custom_message_types=[StructuredMessage[output_model]])
        with acting_as(role):
            result = await team.run(task=prompt)
            self._record_remote_usage(result.messages)
        return _structured(result.messages, role, output_model)

    def _record_remote_usage(self, messages: list[Any]) -> None:
        """Clients other than ours report usage on the messages; count those calls."""
        if isinstance(self.client, BaseLLMChatClient):
            return
        for message in messages:
            usage = getattr(message, "models_usage", None)
            if usage is not None:
                record_call(usage.prompt_tokens, usage.completion_tokens, 0.0, "autogen")

    async def _selector(self, role: str, prompt: str, output_model: type[BaseModel]
                        ) -> BaseModel:
        agents = [self.agent(name, output_model if name == role else None)
                  for name in self.specs.agents]
        team = SelectorGroupChat(agents, model_client=self.client,
                                 termination_condition=MaxMessageTermination(2),
                                 max_turns=SELECTOR_MAX_MESSAGES, allow_repeated_speaker=True,
                                 custom_message_types=[StructuredMessage[output_model]])
        with acting_as("manager"):
            result = await team.run(task=prompt)
            self._record_remote_usage(result.messages)
        speakers = [m.source for m in result.messages[1:]]
        if role not in speakers:
            raise RoleFailed(f"the selector chose {speakers or 'nobody'} instead of the {role}")
        self.notes.append(f"selector chose the {role}")
        return _structured(result.messages, role, output_model)


def _structured(messages: list[Any], role: str, output_model: type[BaseModel]) -> BaseModel:
    for message in reversed(messages):
        if getattr(message, "source", None) != role:
            continue
        if isinstance(message, StructuredMessage) and isinstance(message.content, output_model):
            return message.content
        return parse_output(getattr(message, "content", ""), output_model)
    raise RoleFailed(f"the {role} did not answer")

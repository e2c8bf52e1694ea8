"""Framework-free tools (the turn's knowledge-base search) as CrewAI tools.

Usage::

    agent = Agent(config=..., tools=[crewai_tool(search)])   # search: KnowledgeBaseSearch
"""

from __future__ import annotations

from typing import Any

from crewai.tools import BaseTool
from pydantic import BaseModel, Field


class CrewAITool(BaseTool):
    """One framework-free tool (``name``, ``description``, ``args_schema``, ``run``) for a
    CrewAI agent; its result is the agent's answer (no second model call)."""

    name: str
    description: str
    args_schema: type[BaseModel]
    result_as_answer: bool = True
    core: Any = Field(default=None, exclude=True)

    def _run(self, **kwargs: Any) -> str:
        return str(self.core.run(**kwargs))


def crewai_tool(tool: Any) -> BaseTool:
    """``tool`` as a CrewAI tool (a CrewAI tool is given back as it is)."""
    if isinstance(tool, BaseTool):
        return tool
    return CrewAITool(
        name=tool.name, description=tool.description, args_schema=tool.args_schema, core=tool
    )

"""Tools (the turn's knowledge-base search, an evidence tool) as AutoGen tools.

Usage::

    assistant = AssistantAgent("retriever", model_client=client, tools=[AutoGenToolAdapter(search)])
"""

from __future__ import annotations

from typing import Any

from autogen_core import CancellationToken
from autogen_core.tools import BaseTool
from pydantic import BaseModel


class AutoGenToolAdapter(BaseTool[BaseModel, str]):  # type: ignore[type-var]  # str as FunctionTool
    """Any tool with ``name``, ``description``, ``args_schema`` and ``run(**args)``."""

    def __init__(self, tool: Any) -> None:
        super().__init__(
            args_type=tool.args_schema, return_type=str, name=tool.name, description=tool.description
        )
        self.tool = tool

    async def run(self, args: BaseModel, cancellation_token: CancellationToken) -> str:
        return str(self.tool.run(**args.model_dump()))

"""Role and task specs from ``config/agents.yaml`` and ``config/tasks.yaml`` (CrewAI's shape).

CrewAI's ``@CrewBase`` crews read the same files themselves; AutoGen's agents are built from
these specs. ``build_engine`` checks them at start (``agents/build.py``).

Usage::

    specs = load_role_specs()
    specs.agents["judge"]["role"], specs.describe("judge", {"question": ..., "passages": ...})
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from config.settings import ROLE_NAMES, ConfigError, read_yaml_mapping

CONFIG_DIR = Path(__file__).resolve().parent.parent / "config"
ROLES = ("reformulator", "retriever", "judge", "responder")
TASKS = dict(zip(ROLE_NAMES, ROLES, strict=True))  # each role's task, as ``roles:`` names it


@dataclass(frozen=True)
class RoleSpecs:
    agents: dict[str, dict[str, str]]
    tasks: dict[str, dict[str, str]]

    def describe(self, task: str, inputs: dict[str, str]) -> str:
        """The task's description filled with ``inputs``, and what it should produce."""
        try:
            text = self.tasks[task]["description"].format(**inputs)
        except KeyError as exc:
            raise ConfigError(f"tasks.yaml: {task}.description uses unknown placeholder {exc}") from None
        return f"{text.strip()}\n\nExpected output: {self.tasks[task]['expected_output']}"


def load_role_specs(config_dir: Path | None = None) -> RoleSpecs:
    config_dir = config_dir or CONFIG_DIR
    return RoleSpecs(
        agents=read_yaml_mapping(config_dir / "agents.yaml"),
        tasks=read_yaml_mapping(config_dir / "tasks.yaml"),
    )

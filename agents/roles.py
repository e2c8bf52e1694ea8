"""Role and task specs from ``config/agents.yaml`` and ``config/tasks.yaml`` (CrewAI's shape).

Usage::

    specs = load_role_specs()
    specs.agents["judge"]["role"], specs.tasks["judge"]["description"].format(**inputs)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from config.settings import ConfigError, read_yaml_mapping

CONFIG_DIR = Path(__file__).resolve().parent.parent / "config"
ROLES = ("reformulator", "retriever", "judge", "responder")
TASKS = {"reformulate": "reformulator", "retrieve": "retriever", "judge": "judge",
         "respond": "responder"}


@dataclass(frozen=True)
class RoleSpecs:
    agents: dict[str, dict[str, str]]
    tasks: dict[str, dict[str, str]]

    def describe(self, task: str, inputs: dict[str, str]) -> str:
        try:
            return self.tasks[task]["description"].format(**inputs)
        except KeyError as exc:
            raise ConfigError(f"tasks.yaml: {task}.description uses unknown placeholder {exc}"
                              ) from None


def load_role_specs(config_dir: Path = CONFIG_DIR) -> RoleSpecs:
    agents = read_yaml_mapping(config_dir / "agents.yaml")
    tasks = read_yaml_mapping(config_dir / "tasks.yaml")
    for role in ROLES:
        spec = agents.get(role)
        if not isinstance(spec, dict) or not all(
                isinstance(spec.get(k), str) for k in ("role", "goal", "backstory")):
            raise ConfigError(f"agents.yaml: {role} needs text role, goal and backstory")
    for task, role in TASKS.items():
        spec = tasks.get(task)
        if not isinstance(spec, dict) or not all(
                isinstance(spec.get(k), str) for k in ("description", "expected_output")):
            raise ConfigError(f"tasks.yaml: {task} needs text description and expected_output")
        if spec.get("agent", role) != role:
            raise ConfigError(f"tasks.yaml: {task}.agent must be {role}")
    return RoleSpecs(agents=agents, tasks=tasks)

"""Telemetry of CrewAI, AutoGen and OpenTelemetry stays off unless the user turns it on.

Call :func:`apply_telemetry_policy` before importing crewai or autogen.
"""

from __future__ import annotations

import os

OFF_SWITCHES = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "OTEL_SDK_DISABLED": "true",
    "AUTOGEN_DISABLE_RUNTIME_TRACING": "true",
    "ANONYMIZED_TELEMETRY": "False",
}
# offline always: model files come from PyPI packages, never from a hub at run time
OFFLINE = {"HF_HUB_OFFLINE": "1"}


def apply_telemetry_policy(enabled: bool = False) -> None:
    """Set the off switches (respecting values the user already exported) unless enabled;
    the offline switch always. Called where a process starts (main.py, tests, bench), never
    on import of a library module."""
    for name, value in {**OFFLINE, **({} if enabled else OFF_SWITCHES)}.items():
        os.environ.setdefault(name, value)

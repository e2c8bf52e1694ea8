"""Benchmarks: each module a script, run from the repository root as a module
(``python -m bench.<name>``). Python then puts the root first on the import path, so a script
imports this checkout's packages, and its helpers as ``bench._common``, with no path edit.

A bench run is where its process starts: importing this package sets the telemetry and offline
switches (:func:`config.telemetry.apply_telemetry_policy`) before a script imports CrewAI or
AutoGen.

Usage::

    python -m bench.retrieval --fresh
    python -m bench.service --baseline-repo /tmp/before   # the earlier checkout's own server
"""

from config.telemetry import apply_telemetry_policy

apply_telemetry_policy()

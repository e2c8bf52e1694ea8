"""The turn and what runs it: the engine-neutral steps (``steps.py``), the topology both engines
wire (``topology.py``), the turn's entry point (``turn.py``) and its runtime; one room per engine
(``crewai/``, ``autogen/``), the LLM backends (``llm/``) and the agents' tools (``tools/``).

Usage::

    from agents.build import build_runtime
    from agents.turn import run_turn
"""

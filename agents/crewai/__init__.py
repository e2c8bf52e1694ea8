"""The turn on CrewAI: a ``Flow`` of ``@CrewBase`` crews that wires the engine-neutral steps.

Usage::

    from agents.crewai.engine import CrewAIEngine
    engine = CrewAIEngine(llm, process="sequential")
"""

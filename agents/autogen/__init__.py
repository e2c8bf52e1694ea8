"""The turn on AutoGen agentchat: a ``GraphFlow`` or ``SelectorGroupChat`` whose agents wire the
engine-neutral steps. Runs without crewai installed.

Usage::

    from agents.autogen.engine import AutoGenEngine
    engine = AutoGenEngine(client, load_role_specs(), process="sequential")
"""

"""The CrewAI engine: each turn is a new ``SupportTurnFlow`` (``agents/crewai/flow.py``).

Usage::

    engine = CrewAIEngine(llm, process="hierarchical")
    state = engine.run(TurnState.for_request(request), runtime)
"""

from __future__ import annotations

from typing import Any

from agents.crewai.crews import RetrieveCrew
from agents.crewai.events import flush_events, listen_to_crewai_llm_calls
from agents.crewai.flow import CrewSetup, SupportTurnFlow
from agents.crewai.llm import crewai_llm
from agents.failures import TurnFailed
from agents.runtime import TurnRuntime
from tasks.state import TurnState


class CrewAIEngine:
    name = "crewai"

    def __init__(self, llm: Any, process: str = "sequential", retrieve_crew: Any = None) -> None:
        self.llm = crewai_llm(llm)
        self.process = process
        listen_to_crewai_llm_calls()
        self.retrieve_crew = retrieve_crew or RetrieveCrew

    def run(self, state: TurnState, runtime: TurnRuntime) -> TurnState:
        flow = SupportTurnFlow.for_turn(runtime, CrewSetup(self.llm, self.process, self.retrieve_crew))
        try:
            flow.kickoff(inputs=state.model_dump())
            if not getattr(self.llm, "records_usage", False):
                flush_events()  # a remote model's usage arrives through events
        except Exception as exc:
            raise TurnFailed(TurnState.model_validate(flow.state.model_dump()), exc) from exc
        return TurnState.model_validate(flow.state.model_dump())

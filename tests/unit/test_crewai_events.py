"""CrewAI's events reach the ledger of the turn that caused them, and only that one."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from crewai.events import crewai_event_bus
from crewai.events.types.llm_events import LLMCallCompletedEvent, LLMCallType

from agents.crewai.events import flush_events, listen_to_crewai_llm_calls
from agents.usage import UsageLedger, acting_as


class RemoteLLM:
    """Stands for a CrewAI provider LLM, which reports usage only on events."""

    model = "openai/test"


class OwnBackend(RemoteLLM):
    records_usage = True


def call_completed(source: object, prompt_tokens: int) -> None:
    crewai_event_bus.emit(
        source,
        LLMCallCompletedEvent(
            response="ok",
            call_type=LLMCallType.LLM_CALL,
            model="openai/test",
            call_id="c1",
            usage={"prompt_tokens": prompt_tokens, "completion_tokens": 3},
        ),
    )


def turn(prompt_tokens: int) -> list[tuple[str, int, int]]:
    with UsageLedger.activate() as ledger, acting_as("judge"):
        call_completed(RemoteLLM(), prompt_tokens)
        call_completed(OwnBackend(), 999)  # records itself: not counted twice
        flush_events()
    return [(c.role, c.prompt_tokens, c.completion_tokens) for c in ledger.calls]


def test_remote_usage_events_are_recorded_in_their_own_turns_ledger():
    listen_to_crewai_llm_calls()
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(turn, [11, 22, 33]))
    assert results == [[("judge", 11, 3)], [("judge", 22, 3)], [("judge", 33, 3)]]
    with UsageLedger.activate() as outside:
        pass
    call_completed(RemoteLLM(), 5)  # no turn active: recorded nowhere
    flush_events()
    assert outside.calls == []

"""Turns own their state: concurrent turns keep their traces apart, per-turn crews are
released, and a broken role spec fails at start, not mid-turn."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from agents.turn import run_turn
from config.settings import ConfigError
from tasks.schemas import TurnRequest
from tests.helpers import scripted_runtime
from tests.integration.test_turn import BASIC
from tests.scripted_llm import ScriptedLLM

pytestmark = pytest.mark.integration
QUESTIONS = {
    "c-a": "How long does a refund take?",
    "c-b": "How do I export all my files?",
    "c-c": "Do you offer a student discount?",
}


def echo_llm() -> ScriptedLLM:
    """Searches the task's own words and drafts nothing usable: each trace shows its turn."""

    def search(prompt: str) -> dict:
        words = prompt.split("search tool for:", 1)[-1].strip().splitlines()[0]
        return {"name": "search_knowledge_base", "arguments": {"queries": [words[:120]]}}

    return ScriptedLLM(model="scripted").script(tools=[search], DraftAnswer=["-"], Reformulation=["-"])


def turn(runtime, customer: str):
    return run_turn(
        TurnRequest(
            session_id=f"s-{customer}", customer_id=customer, message=QUESTIONS[customer], slots=BASIC
        ),
        runtime,
    )


def signature(result) -> tuple:
    return (
        result.verdict,
        result.answer,
        [c.chunk_id for c in result.citations],
        [
            (s.name, s.detail.get("route"), tuple(s.detail.get("queries", ())))
            for s in result.trace.steps
        ],
        [(c.role, c.prompt_tokens, c.completion_tokens) for c in result.trace.calls],
        result.trace.prompt_tokens,
        result.trace.notes,
    )


@pytest.mark.parametrize("engine", ["crewai", "autogen"])
def test_three_parallel_turns_keep_their_own_traces(settings, example_kb, engine):
    runtime = scripted_runtime(settings, example_kb, echo_llm(), engine=engine)
    alone = {customer: signature(turn(runtime, customer)) for customer in QUESTIONS}
    with ThreadPoolExecutor(max_workers=3) as pool:
        together = dict(
            zip(QUESTIONS, pool.map(lambda c: signature(turn(runtime, c)), QUESTIONS), strict=True)
        )
    for customer, question in QUESTIONS.items():
        assert together[customer] == alone[customer], customer
        searched = [q for step in together[customer][3] for q in step[2]]
        assert searched and all(q == question or q in question for q in searched), searched
    assert len({sig[5] for sig in together.values()}) == 3  # token totals differ per turn


def test_per_turn_crews_are_released_from_crewais_memo_cache(settings, example_kb):
    from crewai.project.utils import cache

    runtime = scripted_runtime(settings, example_kb, echo_llm())
    turn(runtime, "c-a")
    size = len(cache._cache)
    for _ in range(3):
        turn(runtime, "c-b")
    assert len(cache._cache) == size
    assert not any("__instance__" in key for key in cache._cache)


def test_a_bad_placeholder_in_tasks_yaml_fails_at_start(tmp_path, monkeypatch):
    import shutil

    import agents.roles
    from agents.build import build_engine
    from tests.conftest import REPO

    for name in ("agents.yaml", "tasks.yaml"):
        shutil.copy(REPO / "config" / name, tmp_path / name)
    text = (tmp_path / "tasks.yaml").read_text().replace("{passages}", "{pasages}", 1)
    (tmp_path / "tasks.yaml").write_text(text)
    monkeypatch.setattr(agents.roles, "CONFIG_DIR", tmp_path)
    for engine in ("crewai", "autogen"):
        with pytest.raises(
            ConfigError,
            match=r"judge\.description uses unknown placeholder"
            r"\(s\) \['pasages'\]",
        ):
            build_engine(engine, echo_llm(), "sequential")


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        ("reformulator:\n  role: x\n", "agents.yaml: reformulator needs text role, goal"),
        ("{not yaml", "agents.yaml"),
    ],
)
def test_a_broken_agents_yaml_fails_at_start(tmp_path, monkeypatch, broken, message):
    import shutil

    import agents.roles
    from agents.build import build_engine
    from tests.conftest import REPO

    shutil.copy(REPO / "config" / "tasks.yaml", tmp_path / "tasks.yaml")
    (tmp_path / "agents.yaml").write_text(broken)
    monkeypatch.setattr(agents.roles, "CONFIG_DIR", tmp_path)
    with pytest.raises(ConfigError, match=message):
        build_engine("crewai", echo_llm(), "sequential")


def test_unknown_engine_and_process_are_refused():
    from agents.build import build_engine

    with pytest.raises(ValueError, match="engine 'langgraph'"):
        build_engine("langgraph", echo_llm(), "sequential")
    with pytest.raises(ValueError, match="process 'round-robin'"):
        build_engine("crewai", echo_llm(), "round-robin")

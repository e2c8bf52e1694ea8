"""Scripted kickoff runs: conversations from YAML through ``run_turn``, checked, as JSON lines.

Script format::

    conversations:
      - id: refund-basic
        customer_id: c-001
        slots: {tier: basic, access_level: customer, product: cloud}
        turns:
          - user: "How long does a refund take?"
            expect: {verdict: answered, cites: [billing/refunds.md]}
          - user: "And for annual plans?"
          - user: "bye"
            expect: {contains: [Goodbye], closes: true}
          - closing: no          # the customer answers "Did we solve your problem today?"
            expect: {offers_person: true}

``expect`` keys: ``verdict`` (answered | suggest | idk | handoff | error), ``cites`` (source ids
that must be cited), ``not_cites`` (source ids that must not be), ``contains`` (text the answer holds),
``queries_contain`` (text some search query held, e.g. an order id recalled from memory),
``closes`` (the reply ends the conversation: the chat asks its closing question),
``offers_person`` (the reply offers a person). A ``closing`` step (yes or no) is the
customer's answer to the closing question; what they read then
(``tasks.polite_replies.closing_reply``) is checked with ``contains`` and ``offers_person``.

Usage::

    script = load_script(Path("examples/kickoff/support-demo.yaml"))
    for line in run_script(script, runtime): ...
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agents.runtime import TurnRuntime
from agents.turn import run_turn
from config.settings import ConfigError, SlotRule, read_yaml_mapping
from storage.memory import Scope, ScopeError
from storage.retrieval.filters import SlotError, build_filters
from tasks.memory_context import close_session, scope_of
from tasks.polite_replies import ClosingReply, closing_reply
from tasks.schemas import HistoryTurn, TurnRequest, TurnResult, Verdict


class Expectation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdict: Verdict | None = None
    cites: list[str] = Field(default_factory=list)
    not_cites: list[str] = Field(default_factory=list)
    contains: list[str] = Field(default_factory=list)
    queries_contain: list[str] = Field(default_factory=list)
    closes: bool | None = None
    offers_person: bool | None = None


class ScriptTurn(BaseModel):
    """A customer message (``user``), or the customer's answer to the closing question
    (``closing``: yes or no)."""

    model_config = ConfigDict(extra="forbid")

    user: str | None = Field(None, min_length=1, max_length=8000)
    closing: bool | None = None
    expect: Expectation | None = None

    @model_validator(mode="after")
    def _one_step(self) -> ScriptTurn:
        if (self.user is None) == (self.closing is None):
            raise ValueError("a turn is either a customer message (user) or a closing answer (closing)")
        if self.closing is not None and self.expect is not None:
            asked = self.expect.model_dump(exclude_defaults=True, exclude={"contains", "offers_person"})
            if asked:
                raise ValueError(
                    "a closing answer is checked by contains and offers_person only, "
                    f"not {sorted(asked)}"
                )
        return self


class Conversation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    customer_id: str | None = None
    slots: dict[str, str] = Field(default_factory=dict)
    turns: list[ScriptTurn] = Field(min_length=1)


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")

    conversations: list[Conversation] = Field(min_length=1)


def load_script(path: Path) -> Script:
    """The script at ``path``, checked whole before any turn runs: every problem is one
    ConfigError naming the file and the field (a customer id memory would refuse too)."""
    data = read_yaml_mapping(path, "kickoff script")
    try:
        script = Script(**data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"{path}: {problems}") from None
    ids = [c.id for c in script.conversations]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ConfigError(f"{path}: duplicate conversation ids {duplicates}")
    for conversation in script.conversations:
        try:
            if conversation.customer_id:
                Scope(conversation.customer_id, conversation.slots.get("tenant", ""))
        except ScopeError as exc:
            raise ConfigError(f"{path}: conversation {conversation.id!r}: {exc}") from None
    return script


def check_script_slots(script: Script, rules: Mapping[str, SlotRule], path: Path) -> None:
    """A :class:`ConfigError` naming the conversation, the slot, its value and the values it
    takes, when the rules (as the runtime applies them) refuse a conversation's slots."""
    for conversation in script.conversations:
        try:
            build_filters(rules, conversation.slots)
        except SlotError as exc:
            raise ConfigError(f"{path}: conversation {conversation.id!r}: {exc}") from None


def check(expect: Expectation | None, result: TurnResult) -> list[str]:
    """The expectations a result fails, as readable lines (empty when all hold)."""
    if expect is None:
        return []
    failures = []
    cited = {c.source_id for c in result.citations}
    if expect.verdict and result.verdict != expect.verdict:
        failures.append(f"verdict {result.verdict!r}, expected {expect.verdict!r}")
    failures += [f"{s} not cited" for s in expect.cites if s not in cited]
    failures += [f"{s} cited but must not be" for s in expect.not_cites if s in cited]
    failures += lacking(expect, result.answer)
    searched = " ".join(result.trace.queries)
    failures += [
        f"no search named {t!r}" for t in expect.queries_contain if t.lower() not in searched.lower()
    ]
    if expect.closes is not None and result.closes != expect.closes:
        failures.append(f"closes {result.closes}, expected {expect.closes}")
    return failures + offered(expect, result.offers_handoff)


def lacking(expect: Expectation, answer: str) -> list[str]:
    """The ``contains`` texts ``answer`` lacks, as failures."""
    return [f"answer lacks {t!r}" for t in expect.contains if t.lower() not in answer.lower()]


def offered(expect: Expectation, offers_person: bool) -> list[str]:
    """A failure when the reply's offer of a person is not the expected one."""
    if expect.offers_person is None or offers_person == expect.offers_person:
        return []
    return [f"offers a person: {offers_person}, expected {expect.offers_person}"]


def check_closing(expect: Expectation | None, reply: ClosingReply) -> list[str]:
    """The expectations a closing answer's reply fails (empty when all hold)."""
    if expect is None:
        return []
    return lacking(expect, reply.answer) + offered(expect, reply.offers_person)


def closing_line(
    conversation: Conversation, index: int, turn: ScriptTurn, reply: ClosingReply
) -> dict[str, Any]:
    """A closing answer's line, shaped like a turn's (no search, no model call)."""
    said = "yes" if turn.closing else "no"
    return {
        "conversation_id": conversation.id,
        "turn_index": index,
        "user": f"(Did we solve your problem today?) {said}",
        "closing": turn.closing,
        "expect": turn.expect.model_dump(exclude_defaults=True) if turn.expect else None,
        "answer": reply.answer,
        "verdict": "closing answer",
        "handoff": False,
        "offers_person": reply.offers_person,
        "citations": [],
        "trace": {"llm_calls": 0, "duration_ms": 0},
        "expect_failures": check_closing(turn.expect, reply),
    }


def turn_line(
    conversation: Conversation, index: int, turn: ScriptTurn, result: TurnResult, failures: list[str]
) -> dict[str, Any]:
    trace = result.trace
    return {
        "conversation_id": conversation.id,
        "turn_index": index,
        "user": turn.user,
        "expect": turn.expect.model_dump(exclude_defaults=True) if turn.expect else None,
        "answer": result.answer,
        "verdict": result.verdict,
        "handoff": result.handoff,
        "kind": result.kind,
        "closes": result.closes,
        "offers_person": result.offers_handoff,
        "citations": [c.model_dump() for c in result.citations],
        "trace": trace.model_dump(
            include={
                "llm_calls",
                "prompt_tokens",
                "completion_tokens",
                "duration_ms",
                "calls",
                "steps",
                "notes",
            }
        ),
        "expect_failures": failures,
    }


def run_script(
    script: Script, runtime: TurnRuntime, run_id: str | None = None
) -> Iterator[dict[str, Any]]:
    """Run every conversation as a new session (``kickoff-<conversation>-<run>``); customer
    memory (entities, long-term memories) carries over between conversations and runs."""
    run_id = run_id or uuid.uuid4().hex[:8]
    for conversation in script.conversations:
        history: list[HistoryTurn] = []
        request = None
        for index, turn in enumerate(conversation.turns):
            if turn.user is None:  # the closing answer: what the customer reads, no turn
                reply = closing_reply(runtime.settings.messages, bool(turn.closing))
                yield closing_line(conversation, index, turn, reply)
                continue
            request = TurnRequest(
                session_id=f"kickoff-{conversation.id}-{run_id}",
                customer_id=conversation.customer_id,
                message=turn.user,
                slots=conversation.slots,
                history=list(history),
            )
            result = run_turn(request, runtime)
            history.append(
                HistoryTurn(
                    user=turn.user,
                    answer=result.answer,
                    sources=[c.source_id for c in result.citations],
                    offered_handoff=result.offers_handoff,
                )
            )
            yield turn_line(conversation, index, turn, result, check(turn.expect, result))
        if request is not None:
            close_session(runtime.memory, scope_of(request), request.session_id)

"""The terminal chat driven in a pseudo-terminal (pexpect), as a person would use it."""

from __future__ import annotations

import sys

import pexpect
import pytest

from storage.memory import MEMORIES, SESSIONS, Scope
from storage.qdrant.edge_store import EdgeStore
from tests.conftest import REPO

pytestmark = pytest.mark.integration


ENV = {
    "TERM": "xterm",
    "PATH": "/usr/bin:/bin",
    "HF_HUB_OFFLINE": "1",
    "CREWAI_DISABLE_TELEMETRY": "true",
    "OTEL_SDK_DISABLED": "true",
    "PROMPT_TOOLKIT_NO_CPR": "1",
    "NO_COLOR": "1",
}


def spawn(tmp_path, *extra: str, timeout: int = 120) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable,
        ["-m", "tests.chat_harness", str(tmp_path), *extra],
        cwd=str(REPO),
        encoding="utf-8",
        timeout=timeout,
        dimensions=(40, 160),
        env=ENV,
    )


def quit_chat(child: pexpect.spawn) -> None:
    """Ctrl-D at a ready prompt, as a customer ends the chat: the caller has seen the prompt
    drawn after a command's own output. (A Ctrl-D typed ahead while a command still runs
    reaches a terminal in line mode, where it is an end of input that the prompt's switch to
    raw mode may drop: the customer presses it again, as in any shell.)"""
    child.sendeof()
    child.expect("bye", timeout=15)
    child.expect(pexpect.EOF)


def stored(tmp_path, collection: str) -> list[dict]:
    """The chat customer's records of ``collection``, read after the chat has exited."""
    store = EdgeStore(tmp_path / "qdrant")
    try:
        return [r.payload for r in store.scroll(collection, Scope("c-chat").condition())]
    finally:
        store.close()


def stored_turns(tmp_path) -> list[dict]:
    """The chat customer's stored turns."""
    return stored(tmp_path, SESSIONS)


def test_chat_answers_takes_commands_and_stores_the_session(tmp_path):
    child = spawn(tmp_path)
    try:
        child.expect("you>")
        child.sendline("/help")
        child.expect("unslot")
        child.expect("you>")
        child.sendline("/slot colour=red")
        child.expect("unknown slot 'colour'")
        child.expect("you>")
        child.sendline("/slot product=cloud")
        child.expect("product")
        child.expect("you>")
        child.sendline("x" * 8_100)  # over the message limit: refused here, the chat goes on
        child.expect("not sent")
        child.expect("at most 8000 characters")
        child.expect("you>")
        child.sendline("How long does a refund take?")
        child.expect("answered")
        child.expect("5 to 7 business days")
        child.expect(r"\[1\] Refunds")
        child.expect("LLM calls")
        child.expect("you>")
        child.sendline("/trace")
        child.expect("llm_calls")
        child.expect("you>")
        child.sendline("/memory")
        child.expect("entities")
        child.expect("you>")
        quit_chat(child)
    finally:
        child.close(force=True)
    turns = stored_turns(tmp_path)
    assert [t["user"] for t in turns] == ["How long does a refund take?"]
    assert turns[0]["status"] == "done" and turns[0]["slots"]["product"] == "cloud"
    # the session ended answered: the customer's next session remembers it
    [remembered] = stored(tmp_path, MEMORIES)
    assert remembered["summary"] == "How long does a refund take?"
    assert remembered["sources"] == ["billing/refunds.md"]
    assert (tmp_path / "history").read_text().count("How long does a refund take?") == 1


@pytest.mark.serial
def test_ctrl_c_cancels_the_turn_and_the_next_message_is_answered(tmp_path):
    """The responder would take 120 s; Ctrl-C stops the turn, and the next command is served
    long before that (pexpect's 90 s timeout would fail the test otherwise)."""
    child = spawn(tmp_path, "--slow", timeout=90)
    try:
        child.expect("you>")
        child.sendline("/slots")  # the prompt reads input before the question goes in
        child.expect("tier")
        child.expect("you>")
        child.sendline("How long does a refund take?")
        child.expect("writing the answer")  # the step in progress is shown while waiting
        child.sendintr()
        child.expect("cancelled")
        child.expect("you>")
        child.sendline("/slot product=cloud")
        child.expect("'product': 'cloud'")  # the command's output, not the echo of the line
        child.expect("you>")
        quit_chat(child)
    finally:
        child.close(force=True)
    turns = stored_turns(tmp_path)
    assert [t["user"] for t in turns] == ["How long does a refund take?"]
    assert turns[0]["status"] == "done"  # the stopped turn is stored, not left pending

"""The terminal chat driven in a pseudo-terminal (pexpect), as a person would use it."""

from __future__ import annotations

import sys

import pexpect
import pytest

from storage.memory import Scope
from storage.qdrant.edge_store import EdgeStore
from tests.conftest import REPO

pytestmark = pytest.mark.integration


def test_chat_answers_takes_commands_and_stores_the_session(tmp_path):
    child = pexpect.spawn(sys.executable, ["-m", "tests.chat_harness", str(tmp_path)],
                          cwd=str(REPO), encoding="utf-8", timeout=120,
                          dimensions=(40, 160), env={"TERM": "xterm", "PATH": "/usr/bin:/bin",
                                                     "HF_HUB_OFFLINE": "1",
                                                     "CREWAI_DISABLE_TELEMETRY": "true",
                                                     "OTEL_SDK_DISABLED": "true",
                                                     "PROMPT_TOOLKIT_NO_CPR": "1", "NO_COLOR": "1"})
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
        child.sendeof()
        child.expect("bye")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    store = EdgeStore(tmp_path / "qdrant")
    try:
        from storage.memory import SESSIONS

        turns = [r.payload for r in store.scroll(SESSIONS, Scope("c-chat").condition())]
        assert [t["user"] for t in turns] == ["How long does a refund take?"]
        assert turns[0]["status"] == "done" and turns[0]["slots"]["product"] == "cloud"
    finally:
        store.close()
    assert (tmp_path / "history").read_text().count("How long does a refund take?") == 1

"""``main.py chat`` as a person starts it (shipped defaults, no --customer), in a real
pseudo-terminal of 80 and 40 columns: whole answers on screen, follow-ups answered from the
conversation, Ctrl-C cancels a turn."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from tests.conftest import EXAMPLE_KB, REPO

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
REFUND_ANSWER = (
    "Once a refund is approved, the money is returned to the original payment "
    "method within 5 to 7 business days."
)
PAYPAL = "Refunds to PayPal usually arrive within 2 business days."
_FRAME = re.compile(r"[│╭╮╰╯─┃━]+")
_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\r")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("chat-data")
    subprocess.run(
        [sys.executable, "main.py", "--data-dir", str(folder), "ingest", str(EXAMPLE_KB)],
        cwd=REPO,
        check=True,
        capture_output=True,
        env={**ENV, "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"},
    )
    return folder


def start_chat(data_dir: Path, columns: int) -> tuple[pexpect.spawn, str]:
    """The chat started in a pseudo-terminal of ``columns``, and the header it printed."""
    child = pexpect.spawn(
        sys.executable,
        [
            "main.py",
            "--data-dir",
            str(data_dir),
            "chat",
            "--slot",
            "tier=basic",
            "--slot",
            "access_level=customer",
        ],
        cwd=str(REPO),
        encoding="utf-8",
        timeout=120,
        dimensions=(50, columns),
        env=ENV,
    )
    child.expect("supportcrew chat")
    child.expect("you>")
    return child, _ESCAPE.sub("", child.before)


def screen_text(raw: str) -> str:
    """What the panel showed, frame and line breaks taken out (wrapped words joined)."""
    text = _FRAME.sub(" ", _ESCAPE.sub("", raw))
    return " ".join(text.split())


def ask(child: pexpect.spawn, message: str) -> str:
    child.sendline(message)
    child.expect(r"LLM calls")
    shown = screen_text(child.before)
    child.expect("you>")
    return shown


@pytest.mark.parametrize("columns", [80, 40])
def test_whole_answers_and_follow_ups_without_a_customer(data_dir, columns):
    child, header = start_chat(data_dir, columns)
    # the header breaks between its parts, never inside the session or customer id
    assert re.search(r"^anonymous customer anon-[0-9a-f]{12}\b", header, re.MULTILINE), header
    assert re.search(r"session chat-[0-9a-f]{12}\b", header), header
    assert all(len(line.rstrip()) <= columns for line in header.splitlines()), header
    try:
        shown = ask(child, "How long does a refund take?")
        assert "answered" in shown
        assert REFUND_ANSWER in shown and PAYPAL in shown  # every sentence, none cropped
        follow_up = ask(child, "And to PayPal?")
        assert "answered" in follow_up and PAYPAL in follow_up
        child.sendline("/memory")
        child.expect("customer anon-")
        child.expect("you>")
        goodbye = ask(child, "bye")  # a goodbye, not the thanks reply
        assert "goodbye" in goodbye and "Goodbye, and thanks for contacting us." in goodbye
        assert "Happy to help" not in goodbye
    finally:
        child.sendeof()
        child.expect(pexpect.EOF)


def test_ctrl_c_cancels_a_turn_and_the_chat_goes_on(data_dir):
    child, _header = start_chat(data_dir, 80)
    try:
        child.sendline("How long does a refund take?")
        child.sendintr()
        child.expect(["cancelled", "LLM calls"])  # a 0.3 s turn may finish first
        child.expect("you>")
        assert "answered" in ask(child, "How long does a refund take?")  # the chat goes on
    finally:
        child.sendeof()
        child.expect(pexpect.EOF)

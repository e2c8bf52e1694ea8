"""Terminal chat over ``run_turn``: prompt_toolkit input with history, rich output.

Slash commands: /slots, /slot key=value, /unslot key, /trace, /memory, /reset, /help, /quit.
Ctrl-C cancels the turn in progress (the user's message is already stored), Ctrl-D exits.

Usage::

    ChatLoop(runtime, customer_id="c-001", slots={"tier": "pro"}).run()
"""

from __future__ import annotations

import concurrent.futures
import json
import signal
import threading
import uuid
from pathlib import Path
from typing import Any, TypeVar

from prompt_toolkit import PromptSession
from prompt_toolkit.history import FileHistory
from pydantic import ValidationError
from rich.console import Console
from rich.panel import Panel

from agents.progress import progress_label
from agents.turn import run_turn
from storage.memory import Scope
from storage.qdrant.store import StoreError
from storage.retrieval.filters import SlotError, build_filters
from tasks.gates import NOTHING_ASKED
from tasks.memory_context import close_session
from tasks.schemas import TurnRequest, TurnResult
from terminal.safe_text import visible

T = TypeVar("T")
VERDICT_STYLES = {
    "answered": "green",
    "suggest": "cyan",
    "idk": "yellow",
    "handoff": "blue",
    "error": "red",
}

HELP = """[bold]/slots[/] show slots · [bold]/slot key=value[/] set one · [bold]/unslot key[/] \
drop one · [bold]/trace[/] last turn's trace · [bold]/memory[/] what is remembered · \
[bold]/reset[/] new session · [bold]/help[/] · [bold]/quit[/] (or Ctrl-D). Ctrl-C cancels a turn."""


def wait_interruptibly(future: concurrent.futures.Future[T], poll_s: float = 0.2) -> T:
    """The future's result, waited for in short slices: a wait with no timeout is woken by
    Ctrl-C only when the signal happens to reach the main thread, so a turn could go on
    uncancelled for as long as it runs."""
    while True:
        try:
            return future.result(timeout=poll_s)
        except concurrent.futures.TimeoutError:
            continue


def let_ctrl_c_through() -> None:
    """Ctrl-C reaches the chat however it was started: a parent that ignored or blocked SIGINT
    (a shell's background job, a harness, a library that set it at C level) hands that on to
    its children, and the chat would never see Ctrl-C. Python's own handler is installed again
    and the signal unblocked (from the main thread; elsewhere nothing is done)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def answer_panel(result: TurnResult) -> Panel:
    """A turn's answer and its sources as a panel whose text wraps at any width (a long URL
    folds); the text is shown as it is, never read as markup, control characters visible.

    >>> from tasks.schemas import TurnResult
    >>> answer_panel(TurnResult(session_id="s", answer="[bold]x", verdict="idk")).title
    'idk'
    """
    lines = [result.answer]
    for number, citation in enumerate(result.citations, start=1):
        lines.append(f"[{number}] {citation.title} {citation.url or citation.source_id}")
    text = visible("\n".join(lines))
    text.overflow = "fold"
    style = VERDICT_STYLES.get(result.verdict, "white")
    return Panel(text, title=panel_title(result), border_style=style)


def panel_title(result: TurnResult) -> str:
    """The verdict of a searched message; what the message was for the polite reply to a
    greeting, thanks, no to the offer or contact details (nothing was searched: not an "idk").

    >>> from tasks.schemas import TurnResult
    >>> panel_title(TurnResult(session_id="s", answer="Happy to help.", verdict="idk", kind="courtesy"))
    'courtesy'
    >>> panel_title(TurnResult(session_id="s", answer="...", verdict="handoff", kind="accept"))
    'handoff'
    """
    return result.kind if result.kind in NOTHING_ASKED else result.verdict


def header_lines(parts: list[str], width: int, between: str = " · ") -> list[str]:
    """The chat's header in lines of at most ``width`` characters, broken only between its
    parts (a session or customer id is never cut; a part wider than ``width`` stands alone).

    >>> header_lines(["supportcrew chat", "session chat-1", "customer anon-2"], 40)
    ['supportcrew chat · session chat-1', 'customer anon-2']
    >>> header_lines(["a", "b"], 80)
    ['a · b']
    """
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + len(between) + len(part) <= width:
            lines[-1] += between + part
        else:
            lines.append(part)
    return lines


class ChatLoop:
    """One terminal conversation. Without ``customer_id`` the session gets an anonymous
    customer id of its own (``anon-...``): its turns are stored and follow-ups read them; a
    customer id also brings memory across sessions."""

    def __init__(
        self,
        runtime: Any,
        customer_id: str | None,
        slots: dict[str, str],
        history_file: Path | None = None,
        console: Console | None = None,
    ) -> None:
        self.runtime = runtime
        self.anonymous = not customer_id
        self.customer_id = customer_id or f"anon-{uuid.uuid4().hex[:12]}"
        self.slots = dict(slots)
        self.session_tenant = self.slots.get("tenant", "")  # where this session's turns went
        self.session_id = self._new_session_id()
        self.console = console or Console()
        self.prompt: Any = PromptSession(
            history=FileHistory(str(history_file)) if history_file else None
        )
        self.last: TurnResult | None = None
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)

    @staticmethod
    def _new_session_id() -> str:
        return f"chat-{uuid.uuid4().hex[:12]}"

    def _check_slots(self, slots: dict[str, str]) -> None:
        build_filters(self.runtime.settings.slots, slots)

    # -- commands ----------------------------------------------------------------------------
    def command(self, line: str) -> bool:
        """Run a slash command; False means quit."""
        name, _, arg = line[1:].partition(" ")
        arg = arg.strip()
        if name in ("quit", "exit"):
            return False
        if name == "help":
            self.console.print(HELP)
        elif name == "slots":
            self.console.print(self.slots or "(no slots: public view)")
        elif name == "slot":
            key, sep, value = arg.partition("=")
            if not sep or not key.strip():
                self.console.print("[red]usage:[/] /slot key=value")
                return True
            candidate = {**self.slots, key.strip(): value.strip()}
            try:
                self._check_slots(candidate)
            except SlotError as exc:
                self.console.print(f"[red]{exc}[/]")
                return True
            self.slots = candidate
            self.console.print(f"slots: {self.slots}")
        elif name == "unslot":
            self.slots.pop(arg, None)
            self.console.print(f"slots: {self.slots}")
        elif name == "trace":
            trace = self.last.trace.model_dump(mode="json") if self.last else "(no turn yet)"
            self.console.print_json(json.dumps(trace)) if self.last else self.console.print(trace)
        elif name == "memory":
            self._show_memory()
        elif name == "reset":
            self.close()
            self.session_id = self._new_session_id()
            self.last = None
            self.console.print(f"new session {self.session_id}")
        else:
            self.console.print(f"[red]unknown command /{name}[/]; /help lists them")
        return True

    def _show_memory(self) -> None:
        memory = self.runtime.memory
        who = f"customer {self.customer_id}" + (
            " (anonymous: this session only; --customer ID keeps memory across sessions)"
            if self.anonymous
            else ""
        )
        self.console.print(visible(who))
        if memory is None:
            self.console.print("(memory is off)")
            return
        data = memory.export(Scope(self.customer_id, self.slots.get("tenant", "")))
        entities = ", ".join(f"{e['type']} {e['value']}" for e in data["entities"]) or "-"
        self.console.print(visible(f"entities: {entities}"))
        for item in data["memories"]:
            self.console.print(visible(f"- {item['summary'][:100]} → {item['resolution'][:100]}"))

    # -- turns ------------------------------------------------------------------------------
    def close(self) -> None:
        """The session ends (``/quit``, ``/reset``, end of input): answered or handed off, it
        is remembered for the customer's next session, as the pilot and kickoff remember."""
        if self.anonymous:  # an anonymous id never comes back
            return
        try:
            scope = Scope(self.customer_id, self.session_tenant)
            close_session(self.runtime.memory, scope, self.session_id)
        except StoreError as exc:  # an outage: the chat goes on, the session is not remembered
            self.console.print(visible(f"this session could not be remembered: {exc}"), style="yellow")

    def ask(self, message: str) -> TurnResult | None:
        try:
            request = TurnRequest(
                session_id=self.session_id,
                customer_id=self.customer_id,
                message=message,
                slots=self.slots,
            )
            self.session_tenant = self.slots.get("tenant", "")
        except ValidationError as exc:  # too long, say: refused here, the chat goes on
            said = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            self.console.print(visible(f"not sent ({len(message):,} characters): {said}"), style="red")
            return None
        cancel = threading.Event()
        future = None
        try:
            with self.console.status("the crew is working…") as status:

                def show_step(step: str) -> None:
                    status.update(f"{progress_label(step)}…")

                future = self._pool.submit(run_turn, request, self.runtime, show_step, cancel)
                result = wait_interruptibly(future)
        except KeyboardInterrupt:
            # the turn stops for real: model calls end and it finishes within a second with
            # what the evidence gives (stored, not shown), so the next message is not blocked
            cancel.set()
            if future is not None:
                future.result()
            self.console.print("[yellow]cancelled[/] (your message and the stopped turn are stored)")
            return None
        self.last = result
        self.show(result)
        return result

    def show(self, result: TurnResult) -> None:
        # a soft-wrapping console would crop the panel's lines instead of wrapping them
        self.console.print(answer_panel(result), soft_wrap=False)
        trace = result.trace
        self.console.print(
            f"[dim]{trace.llm_calls} LLM calls · {trace.prompt_tokens} prompt "
            f"tokens · {trace.duration_ms / 1000:.1f} s[/]"
        )

    def run(self) -> None:
        let_ctrl_c_through()
        who = (
            f"anonymous customer {self.customer_id}"
            if self.anonymous
            else f"customer {self.customer_id}"
        )
        parts = ["supportcrew chat", f"session {self.session_id}", who, "/help for commands"]
        for line in header_lines(parts, self.console.width):
            # each line fits: an id is never broken by the terminal (a part wider than the
            # whole terminal folds, on its own line)
            self.console.print(visible(line), soft_wrap=False, overflow="fold")
        while True:
            try:
                line = self.prompt.prompt("you> ").strip()
            except KeyboardInterrupt:
                continue
            except EOFError:
                break
            if not line:
                continue
            if line.startswith("/"):
                if not self.command(line):
                    break
                continue
            self.ask(line)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.close()
        self.console.print("bye")

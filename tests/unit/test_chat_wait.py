"""Ctrl-C in the terminal chat stops the wait for a turn, whichever thread the signal reaches."""

import concurrent.futures
import signal
import threading
import time

import pytest

from terminal.chat import let_ctrl_c_through, wait_interruptibly


def test_the_wait_returns_the_turns_result():
    future: concurrent.futures.Future[str] = concurrent.futures.Future()
    threading.Timer(0.3, future.set_result, ["answered"]).start()
    assert wait_interruptibly(future) == "answered"


@pytest.mark.serial
def test_ctrl_c_delivered_to_another_thread_still_interrupts_the_wait():
    let_ctrl_c_through()  # as the chat does first: whatever an earlier test left behind
    future: concurrent.futures.Future[str] = concurrent.futures.Future()

    def interrupt_from_here() -> None:  # the kernel may hand SIGINT to any thread
        time.sleep(0.3)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)

    threading.Thread(target=interrupt_from_here, daemon=True).start()
    # a wait that only the result wakes ends after 5 s with it: the test fails, not hangs
    threading.Timer(5.0, future.set_result, ["not interrupted"]).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        wait_interruptibly(future)
    assert time.monotonic() - started < 2.0


def test_a_chat_started_with_ctrl_c_ignored_or_blocked_still_gets_it():
    previous = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        let_ctrl_c_through()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, previous)

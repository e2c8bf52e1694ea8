"""Ctrl-C in the terminal chat stops the wait for a turn, whichever thread the signal reaches."""

import concurrent.futures
import signal
import threading
import time

import pytest

from terminal.chat import wait_interruptibly


def test_the_wait_returns_the_turns_result():
    future: concurrent.futures.Future[str] = concurrent.futures.Future()
    threading.Timer(0.3, future.set_result, ["answered"]).start()
    assert wait_interruptibly(future) == "answered"


def test_ctrl_c_delivered_to_another_thread_still_interrupts_the_wait():
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

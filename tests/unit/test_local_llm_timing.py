"""A local call's trace separates waiting for the shared model from the model's own time."""

from __future__ import annotations

import threading
import time

import agents.llm.local as local_llm
from agents.llm.local import LocalLlamaLLM
from agents.usage import UsageLedger


class SlowLlama:
    """Stands in for llama.cpp: 0.05 s of 'compute' per completion."""

    def tokenize(self, text: bytes, add_bos: bool = False) -> list[int]:
        return list(range(len(text) // 4))

    def create_chat_completion(self, messages, **_kwargs):
        time.sleep(0.05)
        return {
            "choices": [{"message": {"content": "{}"}}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 2},
        }


def test_waiting_for_the_model_is_not_counted_as_its_time(monkeypatch):
    monkeypatch.setattr(local_llm, "load_llama", lambda *args, **kwargs: SlowLlama())
    llm = LocalLlamaLLM(model="local/test")
    holder = threading.Thread(target=lambda: (llm._lock.acquire(), time.sleep(0.4), llm._lock.release()))
    holder.start()
    time.sleep(0.05)  # another turn holds the model
    with UsageLedger.activate() as ledger:
        llm.call("hello")
    holder.join()
    [call] = ledger.calls
    assert call.prompt_tokens == 7 and call.completion_tokens == 2
    assert call.wait_ms > call.ms  # most of this call was spent waiting, and is said so
    assert call.ms < 300

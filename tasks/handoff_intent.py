"""Does the customer ask for a person? A small learned classifier, not a pattern.

A logistic regression over the MiniLM sentence embedding the turn already computes, fitted by
``training/handoff_intent.py`` on labelled examples we wrote (``examples/intents/
handoff.jsonl``: asks for a person; mentions a person, an agent or a robot in passing;
complains; asks a question). Its weights and model card ship in
``storage/kb/assets/handoff_intent/model.json``. A message asks for a person when the whole
message or one of its sentences does ("My invoice is wrong again. I want to talk to a
human."); "are you a real person or a robot? anyways, I need help with my refund" does not.

Usage::

    intent = load_handoff_intent(encoders)
    intent.asks_for_person("Can I speak to a real person please?")       # True
    intent.asks_for_person("A person in my team cannot sign in with SSO.")  # False
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from storage.text import split_sentences

MODEL_FILE = (
    Path(__file__).resolve().parents[1] / "storage" / "kb" / "assets" / "handoff_intent" / "model.json"
)


def parts(message: str) -> list[str]:
    """What is read: the whole message and, when it has several, each sentence.

    >>> parts("My invoice is wrong. I want a human.")
    ['My invoice is wrong. I want a human.', 'My invoice is wrong.', 'I want a human.']
    """
    whole = " ".join(message.split())
    sentences = split_sentences(whole)
    return [whole, *sentences] if len(sentences) > 1 else [whole]


class HandoffIntent:
    """The fitted classifier over an encoder of pooled, L2-normalised MiniLM vectors."""

    def __init__(self, encoders: Any, model_file: Path = MODEL_FILE) -> None:
        if not model_file.exists():
            raise FileNotFoundError(
                f"the hand-off intent model {model_file} is missing: "
                "run python -m training.handoff_intent"
            )
        fitted = json.loads(model_file.read_text())
        self.encoders = encoders
        self.weights = np.asarray(fitted["weights"], dtype=np.float32)
        self.bias = float(fitted["bias"])
        self.threshold = float(fitted["threshold"])

    def probabilities(self, texts: Sequence[str]) -> list[float]:
        """P(asks for a person) of each text on its own."""
        if not texts:
            return []
        vectors = np.stack([e.dense for e in self.encoders.dense.encode(list(texts))])
        logits = vectors @ self.weights + self.bias
        return [float(p) for p in 1.0 / (1.0 + np.exp(-logits))]

    def probability(self, message: str) -> float:
        """The message's probability: its most asking part's."""
        return max(self.probabilities(parts(message)), default=0.0)

    def asks_for_person(self, message: str) -> bool:
        return bool(message.strip()) and self.probability(message) >= self.threshold


_LOADED: dict[int, HandoffIntent] = {}


def load_handoff_intent(encoders: Any) -> HandoffIntent:
    """The shipped classifier over ``encoders`` (loaded once per encoders)."""
    if id(encoders) not in _LOADED:
        _LOADED[id(encoders)] = HandoffIntent(encoders)
    return _LOADED[id(encoders)]

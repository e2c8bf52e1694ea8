"""The learned hand-off intent (tasks/handoff_intent.py): what it reads as a request for a
person, and that the shipped weights are the ones fitted on the shipped examples."""

from __future__ import annotations

import hashlib
import json

import pytest

from config.settings import load_settings
from storage.kb.embeddings import load_encoders
from tasks.handoff_intent import MODEL_FILE, HandoffIntent, load_handoff_intent
from tests.conftest import REPO


@pytest.fixture(scope="module")
def intent() -> HandoffIntent:
    return load_handoff_intent(load_encoders(load_settings()))


@pytest.mark.parametrize(
    "message",
    [
        "I want to talk to a human.",
        "Can I speak to a real person please?",
        "a person please",
        "This is the third time my invoice is wrong. I want to talk to a human.",
    ],
)
def test_a_request_for_a_person_is_read_as_one(intent, message):
    assert intent.asks_for_person(message)


@pytest.mark.parametrize(
    "message",
    [
        "are you a real person or a robot? anyways, I need help with my invoice",
        "A person in my team cannot sign in with SSO.",
        "How long does a refund take?",
        "Hi, my card payment failed with PAY-102. What should I do?",
        "   ",
    ],
)
def test_a_person_mentioned_in_passing_or_a_question_is_not(intent, message):
    assert not intent.asks_for_person(message)


def test_the_shipped_weights_come_from_the_shipped_examples_and_beat_the_old_pattern():
    card = json.loads(MODEL_FILE.read_text())["model_card"]
    data = REPO / "examples" / "intents" / "handoff.jsonl"
    assert card["data_sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()
    held, regex = card["held_out"], card["replaced_regex_held_out"]
    assert held["recall"] > regex["recall"] and held["precision"] >= 0.9


def test_a_missing_model_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"training\.handoff_intent"):
        HandoffIntent(None, tmp_path / "model.json")

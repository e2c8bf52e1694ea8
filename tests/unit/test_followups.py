"""Follow-ups resolved without a model, from the conversation and entity memory."""

from __future__ import annotations

import pytest

from storage.memory import RememberedEntity
from tasks.followups import resolve_follow_up
from tasks.schemas import HistoryTurn

PAYMENT = [HistoryTurn(user="My card payment failed with PAY-102", answer="...")]
ROTATE = [HistoryTurn(user="How do I rotate an API key?", answer="...")]
REFUND = [HistoryTurn(user="How long does a refund take?", answer="5 to 7 business days")]


@pytest.mark.parametrize(
    ("message", "history", "memory", "query", "source"),
    [
        (
            "What does that error code mean?",
            PAYMENT,
            [],
            "What does that error code mean? (error code PAY-102)",
            "error code PAY-102",
        ),
        (
            "Where is my order?",
            [],
            [RememberedEntity(type="order", value="ORD-55812")],
            "Where is my order? (order ORD-55812)",
            "order ORD-55812",
        ),
        (
            "How do I fix it?",
            PAYMENT,
            [],
            "How do I fix it? PAY-102 card payment failed",
            "the previous question",
        ),
        (
            "And for annual plans?",
            REFUND,
            [],
            "And for annual plans? long refund take",
            "the previous question",
        ),
        (
            "what should I do?",
            PAYMENT,
            [],
            "what should I do? PAY-102 card payment failed",
            "the previous question",
        ),
        (
            "How quickly does the old one stop working in the end?",
            ROTATE,
            [],
            "How quickly does the old one stop working in the end? rotate API key",
            "the previous question",
        ),
    ],
)
def test_references_resolve_to_what_they_point_at(message, history, memory, query, source):
    found = resolve_follow_up(message, history, memory)
    assert found is not None and (found.query, found.source) == (query, source)


def test_the_conversation_wins_over_older_memory():
    memory = [RememberedEntity(type="error_code", value="SSO-104")]
    found = resolve_follow_up("Is that error code serious?", PAYMENT, memory)
    assert found is not None and "PAY-102" in found.query and "SSO-104" not in found.query


@pytest.mark.parametrize(
    ("message", "history"),
    [
        ("How do I fix it?", []),  # nothing to refer to
        ("Where is my order from last week?", []),  # no order known, no conversation
    ],
)
def test_unresolvable_messages_get_nothing(message, history):
    assert resolve_follow_up(message, history, []) is None


def test_a_message_without_a_pronoun_gets_the_conversations_subject_and_still_stands_alone():
    answered = [
        HistoryTurn(
            user="Hi. I'd like to ask about dental insurance for veterans.",
            answer="...",
            sources=["va-dental"],
        ),
        HistoryTurn(user="thanks", answer="..."),
    ]
    found = resolve_follow_up("what are the requirements to be eligible for the program", answered, [])
    assert found is not None and not found.leans
    assert found.source == "the conversation's subject"
    # the subject is the latest *answered* message's, not the thanks after it
    assert "dental insurance veterans" in found.query


def test_the_subject_pages_are_the_latest_cited_answers():
    from tasks.followups import subject_pages

    history = [
        HistoryTurn(user="a", sources=["p1"]),
        HistoryTurn(user="b", sources=["p2", "p3"]),
        HistoryTurn(user="c"),
    ]
    assert subject_pages(history) == ["p2", "p3"] and subject_pages([]) == []

"""Small talk wraps a customer's question; the gate judges the subject it wraps."""

import pytest

from tasks.courtesy import asks_something, subject, subject_words


@pytest.mark.parametrize(
    "sentence",
    [
        "Hi, good morning.",
        "Can you help me with that?",
        "Thanks!",
        "Good afternoon!",
        "Is there a way to do that?",
    ],
)
def test_sentences_of_small_talk_ask_nothing(sentence):
    assert not asks_something(sentence)


@pytest.mark.parametrize(
    "sentence",
    ["Is SSO on the Pro plan?", "It failed with E-429.", "Can I undo that?", "I got 3 invoices."],
)
def test_sentences_with_a_subject_ask_something(sentence):
    assert asks_something(sentence)


def test_the_subject_keeps_the_sentences_that_ask_in_order():
    message = "Hello. I lost my phone. What can I do about two-factor? Thanks!"
    assert subject(message) == "I lost my phone. What can I do about two-factor?"


def test_a_message_of_small_talk_alone_is_its_own_subject():
    assert subject("Hi there! Can you help me?") == "Hi there! Can you help me?"
    assert subject_words("Hi there!") == "Hi there!"


def test_subject_words_leave_out_greetings_hedges_and_time_of_day():
    words = subject_words("Good afternoon! I'm not sure how to check a webhook signature today.")
    assert words.split() == ["check", "webhook", "signature"]

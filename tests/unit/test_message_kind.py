"""A customer message's kind: the offer of a person is a state, and a follow-up in courtesy
words is still a question."""

import pytest

from tasks.message_kind import asked_something, read_kind
from tasks.outcomes import label


@pytest.mark.parametrize(
    "reply", ["yes", "Yes!", "ok", "okay", "please do", "yes please", "sure, go ahead"]
)
def test_a_short_yes_to_the_offer_accepts_it(reply):
    assert read_kind(reply, offer_pending=True) == "accept"


@pytest.mark.parametrize("reply", ["no", "No thanks", "no, thank you", "nope, I'm fine", "not now"])
def test_a_short_no_to_the_offer_declines_it(reply):
    assert read_kind(reply, offer_pending=True) == "decline"


def test_a_reply_that_says_more_is_a_question_and_the_offer_lapses():
    assert read_kind("yes, and how long does a refund take?", offer_pending=True) == "question"


def test_a_yes_or_no_without_an_offer_is_courtesy():
    assert read_kind("yes", offer_pending=False) == "courtesy"
    assert read_kind("no", offer_pending=False) == "courtesy"


@pytest.mark.parametrize(
    "message", ["and how do I ask for it?", "How do I ask for that?", "and where do I see it?"]
)
def test_a_follow_up_in_courtesy_words_is_a_question(message):
    assert read_kind(message, offer_pending=False) == "question"


@pytest.mark.parametrize("message", ["Thanks, bye!", "Hi", "Good morning!", "Can you help me?"])
def test_courtesy_alone_is_courtesy(message):
    assert read_kind(message, offer_pending=False) == "courtesy"


def test_stored_kinds_decide_what_was_asked_and_old_turns_are_read_again():
    assert not asked_something({"user": "yes", "kind": "accept"})
    assert asked_something({"user": "and how do I ask for it?"})  # stored before kinds were
    assert not asked_something({"user": "Thanks!"})


def _turn(index, user, kind, verdict, ts):
    return {"turn_index": index, "user": user, "kind": kind, "verdict": verdict, "ts": ts}


def test_a_conversation_that_ends_in_a_courtesy_reply_to_a_non_closing_message_is_not_assumed():
    header = {"session_id": "s", "customer_id": "c", "created": 0.0}
    answered = _turn(0, "Can I get a refund?", "question", "answered", 1.0)
    helped = [answered, _turn(1, "Can you help me?", "courtesy", "idk", 2.0)]
    thanked = [answered, _turn(1, "Thanks, bye!", "courtesy", "idk", 2.0)]
    late = 10_000.0
    left = label(header, helped, [], now=late, outcome_after_s=60)
    assert left is not None
    assert (left.label, left.evidence["courtesy_turn"]) == ("unanswered", 1)
    done = label(header, thanked, [], now=late, outcome_after_s=60)
    assert done is not None and done.label == "assumed"

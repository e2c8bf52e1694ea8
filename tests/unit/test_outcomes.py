"""Each conversation's outcome label, from recorded conversations."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.outcomes import daily_rates, label, reopened, shared_pages

DAY = 86_400.0
T0 = 1_796_000_000.0  # 2026-11-30


def header(session_id="s1", customer="c1", created=T0, **more):
    return {
        "session_id": session_id,
        "customer_id": customer,
        "created": created,
        "status": "open",
        **more,
    }


def asked(index, text, verdict, ts, cites=()):
    return {
        "turn_index": index,
        "user": text,
        "verdict": verdict,
        "status": "done",
        "ts": ts,
        "citations": list(cites),
    }


REFUND = asked(0, "How long does a refund take?", "answered", T0 + 10, ["billing/refunds.md"])


def outcome(turns, feedback=(), now=T0 + 2 * DAY, after=DAY, **head):
    return label(header(**head), turns, list(feedback), now, after)


def test_an_answer_marked_helpful_with_nothing_after_is_confirmed():
    found = outcome([REFUND], [{"turn_index": 0, "rating": "up", "ts": T0 + 20}], now=T0 + 30)
    assert found.label == "confirmed"
    assert found.evidence["feedback"]["rating"] == "up" and found.evidence["last_question_turn"] == 0


def test_an_answer_the_customer_left_is_assumed_only_once_quiet():
    assert outcome([REFUND], now=T0 + 60).label == "pending"
    quiet = outcome([REFUND])
    assert quiet.label == "assumed" and quiet.evidence["quiet_since"] == T0 + 10
    # a short window labels at once
    assert outcome([REFUND], now=T0 + 60, after=0).label == "assumed"


def test_thanks_after_the_answer_is_no_question():
    thanks = {"turn_index": 1, "user": "Thanks, bye!", "verdict": "idk", "status": "done", "ts": T0 + 30}
    found = outcome([REFUND, thanks])
    assert found.label == "assumed" and found.questions == 1


def test_a_question_after_the_answer_decides_and_not_helpful_is_unanswered():
    later = asked(1, "Can I get it to PayPal?", "idk", T0 + 40)
    assert outcome([REFUND, later]).label == "unanswered"
    suggested = asked(1, "Can I get it to PayPal?", "suggest", T0 + 40, ["billing/payment-methods.md"])
    assert outcome([REFUND, suggested]).label == "suggested"
    down = [{"turn_index": 0, "rating": "down", "ts": T0 + 20}]
    assert outcome([REFUND], down).label == "unanswered"


def test_a_hand_off_counts_as_such_even_with_a_helpful_mark_after_it():
    handed = dict(handoff_at=T0 + 15, handoff_reason="the customer asked for a person")
    mark = [{"turn_index": 0, "rating": "up", "ts": T0 + 50}]
    assert outcome([REFUND], mark, **handed).label == "handed_off"
    resolved = outcome(
        [REFUND], mark, status="resolved", resolved_by="ana", resolved_at=T0 + 90, **handed
    )
    assert resolved.label == "resolved_by_person"
    assert resolved.evidence["resolved_by"] == "ana" and resolved.evidence["handoff_at"] == T0 + 15


def test_a_conversation_without_a_question_is_no_involvement():
    assert outcome([{"turn_index": 0, "user": "Hi", "verdict": "idk", "ts": T0 + 5}]) is None
    assert outcome([]) is None


def test_the_same_customer_back_on_the_same_topic_reopens_the_earlier_one():
    first = outcome([REFUND])
    again = label(
        header("s2", created=T0 + DAY),
        [asked(0, "My refund still has not arrived", "answered", T0 + DAY + 5, ["billing/refunds.md"])],
        [],
        T0 + 3 * DAY,
        DAY,
    )
    other_topic = label(
        header("s3", created=T0 + DAY),
        [asked(0, "How do I export data?", "answered", T0 + DAY + 5, ["data/export.md"])],
        [],
        T0 + 3 * DAY,
        DAY,
    )
    assert [o.label for o in reopened([first, other_topic], shared_pages, 7 * DAY)] == [
        "assumed",
        "assumed",
    ]
    labels = {o.session_id: o for o in reopened([first, again], shared_pages, 7 * DAY)}
    assert labels["s1"].label == "reopened" and labels["s1"].evidence["reopened_by"] == "s2"
    assert labels["s1"].evidence["was"] == "assumed"
    # back after the window: the first stays resolved
    late = reopened([outcome([REFUND]), again], shared_pages, reopen_within_s=DAY / 2)
    assert late[0].label == "assumed"


def test_the_rates_of_a_day_count_only_decided_conversations():
    outcomes = [
        outcome([REFUND], session_id="a"),
        outcome([REFUND], [{"turn_index": 0, "rating": "up", "ts": T0 + 20}], session_id="b"),
        outcome([REFUND, asked(1, "And PayPal?", "idk", T0 + 40)], session_id="c"),
        outcome([REFUND], handoff_at=T0 + 15, session_id="d"),
        outcome([REFUND], now=T0 + 60, session_id="e"),  # pending
    ]
    feedback = [{"rating": "up", "ts": T0 + 20}, {"rating": "down", "ts": T0 + 30}]
    [day] = daily_rates(outcomes, feedback)
    assert day["involved"] == 5 and day["pending"] == 1
    assert day["resolution_rate"] == 0.5  # assumed + confirmed of 4 decided
    assert day["handoff_rate"] == 0.25 and day["unanswered_rate"] == 0.25
    assert day["satisfaction"] == 0.5 and day["feedback"] == 2


def test_a_resolution_is_verified_by_a_signed_in_mark_or_a_sure_answer():
    sure = {**REFUND, "probability": 0.93, "drafted": False}
    unsure = {**REFUND, "probability": 0.52, "drafted": True}
    assumed_sure, assumed_unsure = outcome([sure], session_id="a"), outcome([unsure], session_id="b")
    assert assumed_sure.label == assumed_unsure.label == "assumed"
    assert assumed_sure.verified and not assumed_unsure.verified
    assert assumed_unsure.evidence["probability"] == 0.52 and assumed_unsure.evidence["drafted"]
    # a turn recorded before probabilities were: assumed, never verified
    assert not outcome([REFUND], session_id="c").verified
    up = [{"turn_index": 0, "rating": "up", "ts": T0 + 20}]
    assert outcome([unsure], up, session_id="d").verified  # a signed-in customer said so
    anonymous = outcome([sure], up, session_id="e", customer="anon-visitor-1")
    assert anonymous.label == "confirmed" and not anonymous.verified
    [day] = daily_rates([assumed_sure, assumed_unsure, anonymous])
    assert day["verified"] == 1 and day["assumed"] == 2 and day["confirmed"] == 1


UP = [{"turn_index": 0, "rating": "up", "ts": T0 + 20}]
DOWN = [{"turn_index": 0, "rating": "down", "ts": T0 + 20}]


def test_a_mark_on_a_refusal_counts_in_satisfaction_and_changes_no_label():
    refused = asked(0, "Do you ship to Mars?", "idk", T0 + 10)
    for marks in ((), UP, DOWN):
        # "helpful" on "I could not find this" is no resolution; "not helpful" adds nothing
        assert outcome([refused], marks).label == "unanswered"
        assert outcome([refused], marks, now=T0 + 60).label == "pending"
    [day] = daily_rates([outcome([refused], DOWN)], DOWN)
    assert day["unanswered"] == 1 and day["satisfaction"] == 0.0 and day["feedback"] == 1


def test_helpful_on_a_suggested_article_confirms_and_not_helpful_leaves_it_unanswered():
    suggested = asked(0, "Can I pay by PayPal?", "suggest", T0 + 10, ["billing/payment-methods.md"])
    assert outcome([suggested]).label == "suggested"
    confirmed = outcome([suggested], UP, now=T0 + 30)  # at once, like a marked answer
    assert confirmed.label == "confirmed" and "article" in confirmed.why
    assert confirmed.verified  # a signed-in customer said the article helped
    anonymous = outcome([suggested], UP, customer="anon-s1")
    assert anonymous.label == "confirmed" and anonymous.anonymous_mark and not anonymous.verified
    down = outcome([suggested], DOWN, now=T0 + 30)
    assert down.label == "unanswered" and "not helpful" in down.why


def test_a_mark_on_a_hand_off_line_keeps_it_handed_off():
    handed = asked(0, "My invoice is wrong, I need a person", "handoff", T0 + 10)
    for marks in (UP, DOWN):
        assert outcome([handed], marks, handoff_at=T0 + 11).label == "handed_off"


def test_the_closing_answer_is_kept_beside_the_label_and_counted_per_conversation():
    said_no = outcome([REFUND], csat_solved=False, csat_at=T0 + 40, session_id="a")
    assert said_no.label == "assumed" and said_no.csat == "no"  # the label keeps its meaning
    assert said_no.evidence["csat"] == {"solved": False, "ts": T0 + 40}
    person = outcome(
        [REFUND],
        handoff_at=T0 + 15,
        status="resolved",
        resolved_by="ana",
        csat_solved=True,
        session_id="b",
    )
    assert person.label == "resolved_by_person" and person.csat == "yes"
    unasked = outcome([REFUND], session_id="c")
    assert unasked.csat == "" and "csat" not in unasked.evidence
    [day] = daily_rates([said_no, person, unasked])
    assert (day["csat_answers"], day["csat_yes"], day["csat_rate"]) == (2, 1, 0.5)
    [none] = daily_rates([unasked])
    assert none["csat_answers"] == 0 and none["csat_rate"] is None


def test_an_article_is_blamed_only_for_what_came_after_its_own_answer():
    """A helpful refund answer, then a question nobody could answer and a hand-off: the
    hand-off counts against the page of the last answer (none here), not the refund page; the
    mark counts on the page its answer cited."""
    from service.domain.breakdowns import by_article

    refund = asked(0, "How long does a refund take?", "answered", T0, ["billing/refunds.md"])
    mars = asked(1, "Do you ship to Mars?", "idk", T0 + 40)
    mark = [{"turn_index": 0, "rating": "up", "ts": T0 + 20}]
    handed = dict(handoff_at=T0 + 50, handoff_reason="the customer accepted the offer")
    found = outcome([refund, mars], mark, **handed)
    assert (found.label, found.decided_by) == ("handed_off", [])
    assert found.marks == {"billing/refunds.md": {"up": 1, "down": 0}}
    [article] = by_article([found.row()], {"billing/refunds.md": "Refunds"})
    assert (article.failing, article.handoffs, article.helpful) == (0, 0, 1)
    # a hand-off right after the refund answer does count against it
    after = outcome([refund], [], **handed)
    [blamed] = by_article([after.row()], {"billing/refunds.md": "Refunds"})
    assert (blamed.failing, blamed.handoffs) == (1, 1)


def test_a_message_to_the_person_does_not_hide_the_answer_the_hand_off_came_after():
    """Refund answer, "Talk to a person", then a question written to the person: the hand-off
    came right after the refund answer and counts against that page."""
    from service.domain.breakdowns import by_article

    refund = asked(
        0, "Can I cancel my annual plan and get my money back?", "answered", T0, ["billing/refunds.md"]
    )
    to_person = {
        **asked(1, "How long does the refund take?", "", T0 + 60),
        "status": "waiting_for_agent",
    }
    found = outcome([refund, to_person], handoff_at=T0 + 30)
    assert (found.label, found.decided_by, found.questions) == ("handed_off", ["billing/refunds.md"], 2)
    [article] = by_article([found.row()], {"billing/refunds.md": "Refunds"})
    assert article.handoffs == 1


def test_a_customer_who_answers_the_closing_question_has_ended_the_conversation():
    idk = asked(0, "Do you offer a student discount?", "idk", T0 + 10)
    # the same minute, long before the quiet window: decided at once by the customer's answer
    said_no = outcome([idk], now=T0 + 40, csat_solved=False, csat_at=T0 + 30)
    assert (said_no.label, said_no.csat) == ("unanswered", "no")
    closed = outcome([REFUND], now=T0 + 40, csat_skipped_at=T0 + 30)
    assert closed.label == "assumed"
    # a message after the closing answer opens the conversation again
    later = asked(1, "And for teachers?", "idk", T0 + 50)
    assert outcome([idk, later], now=T0 + 60, csat_solved=False, csat_at=T0 + 30).label == "pending"


def test_a_hand_off_no_person_replied_in_is_never_resolved_by_a_person():
    """Closed by staff without a reply, or left by the customer: still handed off, saying why
    (and decided: nothing is pending any more)."""
    handed = dict(handoff_at=T0 + 15, status="resolved")
    closed = outcome(
        [REFUND], resolved_by="ana", resolved_at=T0 + 90, closed_without_reply=True, **handed
    )
    assert (closed.label, closed.why) == ("handed_off", "handed off, then closed by ana without a reply")
    assert closed.evidence["closed_by"] == "ana" and "resolved_by" not in closed.evidence
    left = outcome([REFUND], left_at=T0 + 60, closed_without_reply=True, **handed)
    assert (left.label, left.why) == (
        "handed_off",
        "handed off; the customer left before a person replied",
    )
    assert left.evidence["left_at"] == T0 + 60
    replied = outcome([REFUND], left_at=T0 + 60, **handed)
    assert (
        replied.why == "handed off; a person replied, then the customer left without it being resolved"
    )


def test_the_topic_is_the_page_the_question_behind_was_answered_from():
    """A page only suggested names no topic; a later unanswered question decides it, not an
    earlier answer's page."""
    assert outcome([REFUND]).topic_id == "billing/refunds.md"
    suggested = asked(0, "Can I pay by PayPal?", "suggest", T0 + 10, ["billing/payment-methods.md"])
    assert outcome([suggested]).topic_id == ""
    discount = asked(1, "Do you offer a student discount?", "idk", T0 + 40)
    assert outcome([REFUND, discount]).topic_id == ""


def test_an_anonymous_helpful_mark_is_no_resolution_and_is_shown_apart():
    """Anyone can open a session, ask and mark the answer helpful: such a confirmation is
    counted apart (``anonymous_confirmed_rate``), never in the resolution rate."""
    signed_in = outcome([REFUND], UP, session_id="a")
    anonymous = outcome([REFUND], UP, session_id="b", customer="anon-visitor-1")
    unanswered = outcome([asked(0, "Mars?", "idk", T0 + 10)], session_id="c")
    [day] = daily_rates([signed_in, anonymous, unanswered])
    assert day["confirmed"] == 2 and day["confirmed_anonymous"] == 1
    assert day["resolution_rate"] == 0.333  # the signed-in one of 3 decided
    assert day["anonymous_confirmed_rate"] == 0.333


@settings(max_examples=300, deadline=None)
@given(cells=st.lists(st.text(max_size=30), min_size=1, max_size=4))
def test_no_csv_cell_is_read_as_a_formula(cells):
    """Customer words reach ``outcomes.csv`` (the first question, the reasons): a cell that
    begins with a formula character is escaped, and reads back as the text with an apostrophe."""
    import csv
    import io

    from service.domain.outcomes import CSV_COLUMNS, ConversationOutcome, conversations_csv

    rows = [
        ConversationOutcome(
            session_id="s",
            customer_id=cell,
            day="2026-12-01",
            label="assumed",
            why=cell,
            questions=1,
            started=T0,
            last_activity=T0,
            evidence={"resolved_by": cell},
            topic=[],
            first_question=cell,
            topic_title=cell,
        )
        for cell in cells
    ]
    read = list(csv.DictReader(io.StringIO(conversations_csv(rows))))
    assert len(read) == len(cells)
    for row, cell in zip(read, cells, strict=True):
        for column in ("customer_id", "why", "first_question", "topic_title", "resolved_by"):
            shown = row[column]
            assert not shown.startswith(("=", "+", "-", "@", "\t", "\r")), (column, shown)
            wanted = "'" + cell if cell.startswith(("=", "+", "-", "@", "\t", "\r")) else cell
            # csv turns a lone "\r" line end into "\n" only outside quotes: the text is kept
            assert shown == wanted, (column, shown, wanted)
    assert list(read[0]) == list(CSV_COLUMNS)

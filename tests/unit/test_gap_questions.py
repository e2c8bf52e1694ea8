"""Which turns the knowledge-gap report counts (tasks.gap_report.gap_questions)."""

from config.settings import load_settings
from storage.kb.embeddings import load_encoders
from tasks.gap_report import gap_questions
from tasks.message_kind import load_message_kinds


def turn(index: int, user: str, verdict: str) -> dict:
    return {
        "session_id": f"s{index}",
        "turn_index": 0,
        "user": user,
        "verdict": verdict,
        "ts": float(index),
    }


def test_requests_for_a_person_and_courtesy_are_no_knowledge_gaps():
    turns = [
        turn(1, "I want to talk to a human.", "handoff"),
        turn(8, "are you a bot? anyway, how do I pay in Swiss francs?", "idk"),
        turn(2, "Thanks, bye!", "idk"),
        turn(3, "Can I speak to a real person please?", "handoff"),
        turn(4, "My invoice is wrong again. I want to talk to a human.", "handoff"),
        turn(5, "Can I pay in Japanese yen?", "idk"),
        turn(6, "What about the student discount?", "suggest"),
        turn(7, "How long does a refund take?", "answered"),
    ]
    intent = load_message_kinds(load_encoders(load_settings()))
    found = {q.text: q.kind for q in gap_questions(turns, [], intent.asks_for_person)}
    assert found == {
        "are you a bot? anyway, how do I pay in Swiss francs?": "refused",
        "My invoice is wrong again. I want to talk to a human.": "handoff",
        "Can I pay in Japanese yen?": "refused",
        "What about the student discount?": "suggested",
    }


def test_a_yes_or_no_to_the_offer_of_a_person_is_no_knowledge_gap():
    accepted = turn(1, "yes", "handoff") | {"kind": "accept"}
    declined = turn(2, "no thanks", "idk") | {"kind": "decline"}
    waiting = turn(3, "ok", "handoff") | {"kind": "accept", "status": "waiting_for_agent"}
    asked = turn(4, "Do you offer a student discount?", "idk") | {"kind": "question"}
    intent = load_message_kinds(load_encoders(load_settings()))
    found = [
        q.text for q in gap_questions([accepted, declined, waiting, asked], [], intent.asks_for_person)
    ]
    assert found == ["Do you offer a student discount?"]


def test_not_helpful_on_a_courtesy_reply_is_no_knowledge_gap():
    """Every reply can be rated now: "not helpful" on the reply to "Thanks, bye!" asks nothing."""
    thanks = turn(1, "Thanks, bye!", "idk") | {"kind": "courtesy"}
    answered = turn(2, "How long does a refund take?", "answered") | {"kind": "question"}
    down = [
        {"session_id": t["session_id"], "turn_index": 0, "rating": "down"} for t in (thanks, answered)
    ]
    found = {q.text: q.kind for q in gap_questions([thanks, answered], down, lambda _m: False)}
    assert found == {"How long does a refund take?": "not_helpful"}

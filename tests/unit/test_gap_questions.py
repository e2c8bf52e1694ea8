"""Which turns the knowledge-gap report counts (tasks.gap_report.gap_questions)."""

from tasks.gap_report import gap_questions


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
        turn(2, "Thanks, bye!", "idk"),
        turn(3, "Can I speak to a real person please?", "handoff"),
        turn(4, "My invoice is wrong again. I want to talk to a human.", "handoff"),
        turn(5, "Can I pay in Japanese yen?", "idk"),
        turn(6, "What about the student discount?", "suggest"),
        turn(7, "How long does a refund take?", "answered"),
    ]
    found = {q.text: q.kind for q in gap_questions(turns, [])}
    assert found == {
        "My invoice is wrong again. I want to talk to a human.": "handoff",
        "Can I pay in Japanese yen?": "refused",
        "What about the student discount?": "suggested",
    }

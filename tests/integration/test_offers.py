"""A conversation that never dead-ends, as a customer has it: a "yes" to the assistant's offer
of a person hands off, a "no" closes politely, and a follow-up in courtesy words ("and how do I
ask for it?") is answered; through kickoff on both engines and through the pilot, whose outcome
report labels what happened."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from evaluation.kickoff import load_script, run_script
from storage.memory import MemoryStore
from storage.qdrant.edge_store import EdgeStore
from tests.conftest import REPO
from tests.helpers import acme_team, bearer, pilot_over_own_store, scripted_runtime
from tests.scripted_llm import ScriptedLLM

pytestmark = pytest.mark.integration
SCRIPT = REPO / "examples" / "kickoff" / "offers-and-follow-ups.yaml"
CLOSING = REPO / "examples" / "kickoff" / "closing.yaml"


@pytest.mark.parametrize("engine", ["crewai", "autogen"])
def test_every_turn_of_the_offers_script_does_what_it_expects(settings, example_kb, engine, tmp_path):
    runtime = scripted_runtime(
        settings, example_kb, ScriptedLLM(model="scripted"), engine=engine, roles="evidence"
    )
    runtime.memory = MemoryStore(EdgeStore(tmp_path / "memory"), example_kb.encoders)
    runtime.memory.ensure()
    lines = list(run_script(load_script(SCRIPT), runtime))
    failed = [(line["conversation_id"], line["turn_index"], line["expect_failures"]) for line in lines]
    assert [f for f in failed if f[2]] == []
    said = {(line["conversation_id"], line["turn_index"]): line for line in lines}
    assert "Request refund" in said[("refund-how-to-ask", 1)]["answer"]
    assert said[("discount-yes", 1)]["handoff"] is True


@pytest.mark.parametrize("engine", ["crewai", "autogen"])
def test_the_closing_script_says_goodbye_and_offers_a_person_after_a_no(
    settings, example_kb, engine, tmp_path
):
    """examples/kickoff/closing.yaml: "bye" gets a goodbye and closes, a "no" to the closing
    question offers a person, and asking for one then hands off."""
    runtime = scripted_runtime(
        settings, example_kb, ScriptedLLM(model="scripted"), engine=engine, roles="evidence"
    )
    runtime.memory = MemoryStore(EdgeStore(tmp_path / "memory"), example_kb.encoders)
    runtime.memory.ensure()
    lines = list(run_script(load_script(CLOSING), runtime))
    assert [
        (line["conversation_id"], line["expect_failures"]) for line in lines if line["expect_failures"]
    ] == []
    said = {(line["conversation_id"], line["turn_index"]): line for line in lines}
    bye, no = said[("refund-bye-not-solved", 1)], said[("refund-bye-not-solved", 2)]
    assert (bye["kind"], bye["closes"]) == ("goodbye", True) and "Happy to help" not in bye["answer"]
    assert (no["verdict"], no["offers_person"]) == ("closing answer", True)
    assert said[("refund-bye-not-solved", 3)]["handoff"] is True
    assert said[("thanks-is-not-goodbye", 1)]["kind"] == "courtesy"


@pytest.fixture
def pilot(settings, example_kb, tmp_path):
    pilot_settings = settings.pilot.model_copy(update={"outcome_after_s": 0.0})
    configured = settings.model_copy(update={"pilot": pilot_settings})
    with (
        pilot_over_own_store(
            configured, example_kb, tmp_path / "data", *acme_team(), roles="evidence"
        ) as (app, _),
        TestClient(app) as client,
    ):
        yield client


def converse(client, customer: str, *messages: str) -> tuple[str, list[dict]]:
    session = client.post(
        "/v1/sessions", json={"customer_id": customer}, headers=bearer("backend")
    ).json()["session_id"]
    replies = []
    for text in messages:
        sent = client.post(
            f"/v1/sessions/{session}/messages", json={"message": text}, headers=bearer("backend")
        )
        assert sent.status_code == 200, sent.text
        replies.append(sent.json())
    return session, replies


def test_a_yes_to_the_offer_hands_off_and_the_report_says_handed_off(pilot):
    client = pilot
    offered, [offer, accepted] = converse(client, "c-yes", "Do you offer a student discount?", "yes")
    assert offer["offers_handoff"] is True and offer["verdict"] == "idk"
    assert (accepted["verdict"], accepted["handoff"], accepted["kind"]) == ("handoff", True, "accept")
    queue = client.get("/v1/handoffs", headers=bearer("ana")).json()["handoffs"]
    assert [row["session"]["session_id"] for row in queue] == [offered]
    # the lead's evidence says the customer accepted, not "handed off after: yes"
    reason = queue[0]["session"]["handoff_reason"]
    assert reason == "the customer accepted the offer of a person", reason

    declined, [_, no] = converse(client, "c-no", "Do you offer a student discount?", "no thanks")
    assert (no["verdict"], no["handoff"], no["kind"]) == ("idk", False, "decline")
    assert "anything else" in no["answer"]

    followed, [first, second] = converse(
        client,
        "c-follow",
        "Can I get a refund if I only used the workspace for two days?",
        "and how do I ask for it?",
    )
    assert first["verdict"] == second["verdict"] == "answered"
    assert "Request refund" in second["answer"] and second["kind"] == "question"

    report = client.get("/v1/reports/outcomes", headers=bearer("lead")).json()
    labels = {c["session_id"]: c for c in report["conversations"]}
    assert labels[offered]["label"] == "handed_off"
    assert labels[offered]["questions"] == 1  # the "yes" asks nothing of the pages
    assert labels[declined]["label"] == "unanswered"
    assert labels[followed]["questions"] == 2  # the follow-up is a question, not small talk
    assert labels[followed]["evidence"]["last_question_turn"] == 1


def test_after_a_hand_off_the_person_gets_the_messages_and_the_queue_shows_the_problem(pilot):
    client = pilot
    session, _ = converse(client, "c-waits", "Do you offer a student discount?", "yes please")
    first, second = (
        client.post(
            f"/v1/sessions/{session}/messages", json={"message": text}, headers=bearer("backend")
        ).json()
        for text in ("I study at the open university.", "Thank you so much!")
    )
    # one short note that a person will reply here, then nothing canned
    assert first["answer"] == "Thanks, a person from our team will reply here."
    assert second["answer"] == "" and second["handoff"] is True
    assert "passing this conversation" not in first["answer"] + second["answer"]

    left = client.post(
        f"/v1/sessions/{session}/contact", json={"email": "sam@example.com"}, headers=bearer("backend")
    )
    assert left.status_code == 200 and left.json()["session"]["contact_email"] == "sam@example.com"
    bad = client.post(
        f"/v1/sessions/{session}/contact", json={"email": "not an email"}, headers=bearer("backend")
    )
    assert bad.status_code == 422

    [row] = client.get("/v1/handoffs", headers=bearer("ana")).json()["handoffs"]
    # the problem, not "yes please" nor the thanks
    assert row["problem"] == "Do you offer a student discount?"
    assert row["why"] == "accepted the offer of a person"  # not a bare "Handed off: yes please"
    assert row["session"]["contact_email"] == "sam@example.com"
    # the messages a person has to answer: the thanks waits for no answer (issue 65)
    assert (row["waiting"], row["urgent"]) == (1, False)
    for text in ("Hello?", "Is anyone there?"):
        client.post(
            f"/v1/sessions/{session}/messages", json={"message": text}, headers=bearer("backend")
        )
    [row] = client.get("/v1/handoffs", headers=bearer("ana")).json()["handoffs"]
    assert row["urgent"] is True and "3 messages" in row["urgent_why"]
    whole = client.get(f"/v1/handoffs/{session}", headers=bearer("ana")).json()
    assert whole["session"]["contact_email"] == "sam@example.com"


def test_an_email_typed_while_waiting_reaches_the_desk(pilot):
    """Contact details typed into the chat after the hand-off are kept as the form keeps them;
    a question about email addresses is no contact detail."""
    client = pilot
    session, _ = converse(client, "c-typed", "I want to talk to a human.")
    asked, left = (
        client.post(
            f"/v1/sessions/{session}/messages", json={"message": text}, headers=bearer("backend")
        ).json()
        for text in ("How do I change my email address?", "you can reach me at jo.k@example.com")
    )
    assert (asked["kind"], left["kind"]) == ("question", "contact")
    [row] = client.get("/v1/handoffs", headers=bearer("ana")).json()["handoffs"]
    assert row["session"]["contact_email"] == "jo.k@example.com"
    # before any hand-off too: the reply says the details are kept, and they are
    early, [said] = converse(client, "c-early", "my email is sam.r@example.com")
    assert said["kind"] == "contact" and said["answer"].startswith("Thanks, we have your details")
    mine = client.get(f"/v1/sessions/{early}", headers=bearer("backend")).json()
    assert mine["session"]["contact_email"] == "sam.r@example.com"

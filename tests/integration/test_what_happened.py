"""Through the real pilot (embedded Qdrant, every role on the evidence path as shipped), what
the API says of a conversation is what happened (issue 65): a hand-off says when a person
joined and who, leaving it closes it as left, closing it without a reply is no resolution, a
goodbye gets a goodbye and a "no" to the closing question offers a person, the widget asks
whether its key may be used on a page, the queue and the suggestion read the question behind
the hand-off, an email alone waits for no answer, a topic is the page its question was
answered from, the gaps count a new question at once, publishing over a failing question
needs it named, and the check's replay keeps every question's answers."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from config.settings import ApiKey
from service.auth import hash_key
from tests.helpers import fields_at_fault, pilot_over_own_store, shipped_pilot_client

pytestmark = pytest.mark.integration


def key(name: str, role: str = "customer", display: str | None = None, **slots: str) -> ApiKey:
    return ApiKey(
        name=name,
        sha256=hash_key(f"{name}-key"),
        tenant="acme",
        role=role,
        slots=slots,
        display_name=display,
    )


KEYS = [
    key("pub", access_level="public"),
    key("web", access_level="customer"),
    key("ana", "agent", "Ana", access_level="customer"),
    key("ben", "agent"),
    key("lead", "admin", access_level="internal", tier="enterprise"),
]


def auth(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {name}-key"}


@pytest.fixture
def pilot(settings, example_kb, tmp_path):
    with shipped_pilot_client(settings, example_kb, tmp_path / "data", *KEYS) as client:
        yield client


def converse(client: TestClient, who: str, *messages: str) -> tuple[str, list[dict]]:
    """A new session of ``who`` with ``messages`` sent: its id and each result."""
    session = client.post("/v1/sessions", json={}, headers=auth(who)).json()["session_id"]
    results = []
    for text in messages:
        sent = client.post(f"/v1/sessions/{session}/messages", json={"message": text}, headers=auth(who))
        assert sent.status_code == 200, sent.text
        results.append(sent.json())
    return session, results


def session_of(client: TestClient, who: str, session: str) -> dict:
    return client.get(f"/v1/sessions/{session}", headers=auth(who)).json()["session"]


def outcome_of(client: TestClient, session: str) -> dict:
    return client.get(f"/v1/reports/outcomes/{session}", headers=auth("lead")).json()["outcome"]


def test_a_handoff_says_who_joined_and_leaving_it_closes_it_as_left(pilot):
    client = pilot
    session, [_, accepted] = converse(client, "web", "Do you offer a student discount?", "yes")
    assert accepted["handoff"] is True
    waiting = session_of(client, "web", session)
    assert waiting["status"] == "handoff" and "taken_at" not in waiting and "agent_name" not in waiting
    assert client.post(f"/v1/handoffs/{session}/take", headers=auth("ana")).status_code == 200
    joined = session_of(client, "web", session)
    assert joined["taken_at"] > 0 and joined["agent_name"] == "Ana"  # its display name
    assert "taken_by" not in joined  # the staff key's name is never shown to the customer
    # an open conversation has nothing to leave
    open_one, _ = converse(client, "web", "How long does a refund take?")
    refused = client.post(f"/v1/sessions/{open_one}/leave", headers=auth("web"))
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "not_handed_off"
    # another customer's key cannot leave it for them
    assert client.post(f"/v1/sessions/{session}/leave", headers=auth("pub")).status_code == 404

    left = client.post(f"/v1/sessions/{session}/leave", headers=auth("web"))
    assert left.status_code == 200, left.text
    shown = left.json()["session"]
    assert shown["status"] == "resolved" and shown["closed_without_reply"] is True and shown["left_at"]
    assert client.get("/v1/handoffs", headers=auth("ana")).json()["total"] == 0
    outcome = outcome_of(client, session)
    assert outcome["label"] == "handed_off"
    assert outcome["why"] == "handed off; the customer left before a person replied"
    again = client.post(f"/v1/sessions/{session}/messages", json={"message": "hi"}, headers=auth("web"))
    assert again.status_code == 409 and again.json()["error"]["code"] == "session_resolved"
    twice = client.post(f"/v1/sessions/{session}/leave", headers=auth("web"))
    assert twice.status_code == 409 and twice.json()["error"]["code"] == "session_resolved"


def test_an_agent_without_a_display_name_joins_as_a_person_from_the_team(pilot):
    client = pilot
    session, _ = converse(client, "web", "I want to talk to a person")
    assert client.post(f"/v1/handoffs/{session}/take", headers=auth("ben")).status_code == 200
    joined = session_of(client, "web", session)
    assert joined["taken_at"] > 0 and joined.get("agent_name") is None


def test_closing_a_conversation_nobody_replied_in_is_no_resolution(pilot):
    client = pilot
    untouched, _ = converse(client, "web", "I want to talk to a person")
    closed = client.post(
        f"/v1/sessions/{untouched}/resolve", json={"note": "spam"}, headers=auth("ana")
    ).json()["session"]
    assert closed["closed_without_reply"] is True
    assert session_of(client, "web", untouched)["closed_without_reply"] is True
    outcome = outcome_of(client, untouched)
    assert (outcome["label"], outcome["why"]) == (
        "handed_off",
        "handed off, then closed by ana without a reply",
    )
    assert outcome["evidence"]["closed_by"] == "ana" and "resolved_by" not in outcome["evidence"]

    answered, _ = converse(client, "web", "I want to talk to a person")
    assert client.post(f"/v1/handoffs/{answered}/take", headers=auth("ana")).status_code == 200
    reply = {"message": "Hi, Ana here. Done."}
    assert (
        client.post(
            f"/v1/sessions/{answered}/agent-messages", json=reply, headers=auth("ana")
        ).status_code
        == 201
    )
    resolved = client.post(
        f"/v1/sessions/{answered}/resolve", json={"note": "done"}, headers=auth("ana")
    ).json()["session"]
    assert "closed_without_reply" not in resolved
    assert outcome_of(client, answered)["label"] == "resolved_by_person"


def test_a_goodbye_gets_a_goodbye_and_a_no_to_the_closing_question_offers_a_person(pilot):
    client = pilot
    session, [_, goodbye, thanks] = converse(
        client, "web", "How long does a refund take?", "bye", "Thanks a lot!"
    )
    assert (goodbye["kind"], goodbye["closes"]) == ("goodbye", True)
    assert goodbye["answer"].startswith("Goodbye, and thanks for contacting us.")
    assert (thanks["kind"], thanks["closes"]) == ("courtesy", True)
    assert thanks["answer"].startswith("Happy to help.")
    no = client.post(f"/v1/sessions/{session}/satisfaction", json={"solved": False}, headers=auth("web"))
    assert no.status_code == 200, no.text
    assert no.json()["offers_person"] is True
    assert (
        no.json()["reply"] == "Sorry we did not solve it. A person from our team can take it from here."
    )
    yes = client.post(f"/v1/sessions/{session}/satisfaction", json={"solved": True}, headers=auth("web"))
    assert yes.json()["offers_person"] is False and yes.json()["replaced"] is True
    assert yes.json()["reply"] == "Thanks for telling us: glad we could help."
    # the goodbye is no question the hand-off is quoted for
    handed = client.post(
        f"/v1/sessions/{session}/handoff",
        json={"reason": "the customer said the problem was not solved"},
        headers=auth("web"),
    )
    assert handed.status_code == 200, handed.text
    [row] = client.get("/v1/handoffs", headers=auth("ana")).json()["handoffs"]
    assert row["problem"] == "How long does a refund take?"
    assert row["why"] == "the customer said the problem was not solved"


def test_the_widget_asks_whether_its_key_may_be_used_on_the_page(settings, example_kb, tmp_path):
    from service.widget_tokens import SESSION_SECRET_ENV
    from tests.helpers import widget_key

    site = "https://help.acme.test"
    widget = widget_key("site", "pk_live_acme", [site])
    with pytest.MonkeyPatch.context() as env:
        env.setenv(SESSION_SECRET_ENV, "session-" + "p" * 40)
        with (
            pilot_over_own_store(settings, example_kb, tmp_path / "data", *KEYS, widget) as (app, _),
            TestClient(app) as client,
        ):
            pk = {"Authorization": "Bearer pk_live_acme"}
            assert client.get("/v1/widget/ready", headers={**pk, "Origin": site}).json() == {
                "ready": True
            }
            other = client.get("/v1/widget/ready", headers={**pk, "Origin": "https://shop.acme.test"})
            assert other.status_code == 403 and other.json()["error"]["code"] == "origin_not_allowed"
            wrong = client.get("/v1/widget/ready", headers=auth("web"))
            assert wrong.status_code == 403 and wrong.json()["error"]["code"] == "wrong_role"
            # nothing is opened or counted by asking
            assert client.get("/v1/handoffs", headers=auth("lead")).json()["total"] == 0


@pytest.mark.xfail(
    strict=True,
    reason="issue 64's refit page choice keeps 'My refund has not arrived after two weeks.' on "
    "the conversation's reset-password page (offered as 'this article may help'), so the "
    "transcript cites it, not the refunds page; held out, changes of page are answered right "
    "0.368 against 0.471 before (docs/answering.md)",
)
def test_the_queue_and_the_suggestion_read_the_question_behind_the_handoff(pilot):
    client = pilot
    offered, _ = converse(client, "pub", "How do I export all my files?", "yes")
    email = "you can reach me at jo@example.com"
    sent = client.post(f"/v1/sessions/{offered}/messages", json={"message": email}, headers=auth("pub"))
    assert sent.json()["kind"] == "contact"
    late = "My refund has not arrived after two weeks."
    button, [_, refund] = converse(client, "pub", "How do I reset my password?", late)
    assert refund["verdict"] in ("answered", "suggest", "idk")  # then the customer presses the button
    assert client.post(f"/v1/sessions/{button}/handoff", json={}, headers=auth("pub")).status_code == 200
    rows = {
        r["session"]["session_id"]: r
        for r in client.get("/v1/handoffs", headers=auth("ana")).json()["handoffs"]
    }
    assert rows[offered]["problem"] == "How do I export all my files?"
    assert rows[offered]["why"] == "accepted the offer of a person"
    assert rows[offered]["waiting"] == 0  # an email alone waits for no answer
    assert rows[offered]["latest_message"] == email
    assert rows[button]["problem"] == late  # not the earlier question
    # the suggestion answers the question the "yes" accepted the offer after, under the
    # agent's reach (a signed-in customer's pages: "Export your data")
    suggestion = client.get(f"/v1/handoffs/{offered}", headers=auth("ana")).json()["suggestion"]
    assert suggestion["asked"] == "How do I export all my files?"
    assert [c["source_id"] for c in suggestion["citations"]] == ["data/export.md"]
    # the transcript's sources are pages (title and link) the agent may read
    conversation = client.get(f"/v1/handoffs/{button}", headers=auth("ana")).json()
    cited = [c for t in conversation["turns"] for c in t.get("citations", [])]
    assert {
        "source_id": "billing/refunds.md",
        "title": "Refunds",
        "url": "https://help.clouddesk.example/billing/refunds",
    } in cited


def test_a_topic_is_the_page_its_question_was_answered_from_and_gaps_count_at_once(pilot):
    client = pilot
    discount, _ = converse(
        client, "web", "How long does a refund take?", "Do you offer a student discount?", "yes"
    )
    before = client.get("/v1/reports/gaps", headers=auth("lead")).json()["clusters"]
    assert [c["size"] for c in before if "Do you offer a student discount?" in c["examples"]] == [1]
    converse(client, "web", "Is there a discount for students?")
    after = client.get("/v1/reports/gaps", headers=auth("lead")).json()["clusters"]
    # counted at once, not a minute later when the kept report expires
    assert [c["size"] for c in after if "Do you offer a student discount?" in c["examples"]] == [2]
    # the hand-off is about the discount (no page near it), not the refund answered before
    assert outcome_of(client, discount)["topic_id"] == ""
    refund, _ = converse(client, "web", "How long does a refund take?")
    assert outcome_of(client, refund)["topic_id"] == "billing/refunds.md"


REPLY = (
    "To claim it, open Billing → Discounts and upload a photo of your student card. "
    "Yes: students get 50% off any plan for 12 months."
)


def test_an_article_leads_with_its_answer_and_publishing_over_a_failing_question_names_it(pilot):
    client = pilot
    # a public visitor's conversation: a reply is kept at its conversation's level, and a
    # draft quoting it with it (issue 63), so this article may be public
    session, _ = converse(client, "pub", "Do you offer a student discount?", "yes")
    assert client.post(f"/v1/handoffs/{session}/take", headers=auth("ana")).status_code == 200
    client.post(f"/v1/sessions/{session}/agent-messages", json={"message": REPLY}, headers=auth("ana"))
    converse(client, "web", "Where do I upload my student card?")
    questions = ["Do you offer a student discount?", "Do you have discounts for teachers?"]
    proposal = client.post(
        "/v1/articles/draft", json={"questions": questions}, headers=auth("lead")
    ).json()
    assert proposal["text"].split("\n\n")[1].startswith("Yes: students get 50% off any plan")
    assert proposal["access"] == "public"
    plans = "https://help.clouddesk.example/billing/plans-and-pricing"
    text = proposal["text"] + f"\nPlans and prices: {plans}\n"
    article = {
        "slug": "student-discount",
        "title": "Student discount",
        "text": text,
        "access": "public",
        "questions": questions,
    }
    assert client.post("/v1/articles", json=article, headers=auth("lead")).status_code == 201
    checked = client.post("/v1/articles/student-discount/check", headers=auth("lead")).json()
    replay = checked["check"]["replay"]
    asked = {c["question"]: c for c in replay["asked"]}  # every question, "same" ones too
    assert len(asked) == replay["questions"] >= 1
    assert all(c["before"]["answer"] and c["after"]["answer"] for c in asked.values())
    failing = [r["question"] for r in checked["check"]["rows"] if not r["answered_from_article"]]
    assert failing == ["Do you have discounts for teachers?"]

    refused = client.post("/v1/articles/student-discount/publish", json={}, headers=auth("lead"))
    assert refused.status_code == 409, refused.text
    error = refused.json()["error"]
    assert fields_at_fault(refused) == ["despite"] and error["failing"] == failing
    assert "Do you have discounts for teachers?" in error["message"]
    unnamed = client.post(
        "/v1/articles/student-discount/publish",
        json={"despite": ["something else"]},
        headers=auth("lead"),
    )
    assert unnamed.status_code == 409
    published = client.post(
        "/v1/articles/student-discount/publish", json={"despite": failing}, headers=auth("lead")
    )
    assert published.status_code == 200, published.text
    record = published.json()
    assert record["status"] == "published"
    assert "still failing: Do you have discounts for teachers?" in record["events"][-1]["detail"]
    # a browser following a citation opens a public article without a key; its address is a link
    # (pilot.public_url unset: its link is the path on the service, never the request's Host)
    assert record["url"] == "/help/articles/acme/student-discount"
    page = client.get(record["url"], headers={"Accept": "text/html"})
    assert page.status_code == 200, page.text
    assert f'<a href="{plans}">{plans}</a>' in page.text
    _, [answer] = converse(client, "web", "Do you offer a student discount?")
    assert "50% off" in answer["answer"], answer["answer"]

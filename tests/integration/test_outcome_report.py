"""The outcome report through the real service: conversations recorded by the pilot's own
routes, then labelled with their evidence for an admin; the CLI prints the same."""

from __future__ import annotations

import contextlib
import csv
import io

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from config.settings import ApiKey
from main import app as cli
from service.auth import hash_key
from tests.helpers import acme_team, bearer, pilot_over_own_store

pytestmark = pytest.mark.integration
KEYS = [
    *acme_team(),
    ApiKey(
        name="intranet",
        sha256=hash_key("intranet-key"),
        tenant="acme",
        slots={"access_level": "internal"},
        trust_customer_id=True,
    ),
    ApiKey(
        name="senior-lead",
        sha256=hash_key("senior-lead-key"),
        tenant="acme",
        role="admin",
        slots={"access_level": "internal"},
    ),
]
auth = bearer


def conversation(
    client, customer: str | None, *messages: str, key: str = "backend"
) -> tuple[str, list[dict]]:
    body = {"customer_id": customer} if customer else {}
    session = client.post("/v1/sessions", json=body, headers=auth(key)).json()["session_id"]
    replies = [
        client.post(f"/v1/sessions/{session}/messages", json={"message": m}, headers=auth(key)).json()
        for m in messages
    ]
    return session, replies


def rate(client, session: str, turn: int, rating: str, key: str = "backend") -> None:
    response = client.post(
        f"/v1/sessions/{session}/feedback",
        json={"turn_index": turn, "rating": rating},
        headers=auth(key),
    )
    assert response.status_code == 201, response.text


@contextlib.contextmanager
def served(settings, example_kb, tmp_path, outcome_after_s: float, roles: str = "model"):
    """(client, app) of a pilot over its own store at ``tmp_path/data``, whose conversations
    get their outcome ``outcome_after_s`` after they go quiet."""
    pilot = settings.pilot.model_copy(update={"outcome_after_s": outcome_after_s})
    configured = settings.model_copy(update={"pilot": pilot})
    with (
        pilot_over_own_store(
            configured, example_kb, tmp_path / "data" / "qdrant", *KEYS, roles=roles
        ) as (
            app,
            _,
        ),
        TestClient(app) as client,
    ):
        yield client, app


def test_each_conversation_gets_its_label_with_evidence(settings, example_kb, tmp_path):
    with served(settings, example_kb, tmp_path, outcome_after_s=0.0) as (client, _):
        confirmed, _ = conversation(client, "c-1", "How do I reset my password?")
        rate(client, confirmed, 0, "up")
        reopened, _ = conversation(client, "c-2", "How long does a refund take?", "Thanks, bye!")
        unanswered, replies = conversation(client, "c-4", "Do you offer a student discount?")
        assert replies[0]["verdict"] != "answered"
        person, _ = conversation(client, "c-3", "How long does a refund take?")
        assert (
            client.post(
                f"/v1/sessions/{person}/handoff",
                json={"reason": "still missing"},
                headers=auth("backend"),
            ).status_code
            == 200
        )
        rate(client, person, 0, "up")  # helpful, but after the hand-off: a person resolves it
        # a person takes it and answers first (closing an untouched one is no resolution)
        taken = client.post(f"/v1/handoffs/{person}/take", headers=auth("ana"))
        assert taken.status_code == 200
        replied = client.post(
            f"/v1/sessions/{person}/agent-messages",
            json={"message": "I have re-sent the refund."},
            headers=auth("ana"),
        )
        assert replied.status_code == 201
        resolved = client.post(
            f"/v1/sessions/{person}/resolve", json={"note": "refund sent"}, headers=auth("ana")
        )
        assert resolved.status_code == 200
        back, _ = conversation(client, "c-2", "My refund has not arrived, how long does it take?")
        assert client.get("/v1/reports/outcomes", headers=auth("ana")).status_code == 403
        body = client.get("/v1/reports/outcomes", headers=auth("lead")).json()
    labels = {c["session_id"]: c for c in body["conversations"]}
    assert labels[confirmed]["label"] == "confirmed"
    assert labels[confirmed]["evidence"]["feedback"]["rating"] == "up"
    assert labels[reopened]["label"] == "reopened"
    assert labels[reopened]["evidence"] == {
        **labels[reopened]["evidence"],
        "reopened_by": back,
        "was": "assumed",
    }
    assert labels[reopened]["questions"] == 1  # "Thanks, bye!" asks nothing
    assert labels[back]["label"] == "assumed"
    # how sure the decision was is kept with an assumed resolution; backend customers sign in
    sure = labels[back]["evidence"]["probability"]
    assert labels[back]["verified"] == (sure >= 0.8)
    assert labels[back]["evidence"]["drafted"] is True  # the model's draft, support-checked
    assert labels[confirmed]["verified"] and not labels[unanswered]["verified"]
    assert body["totals"]["verified"] == 1 + labels[back]["verified"]
    assert body["totals"]["verified_rate"] == round(body["totals"]["verified"] / 2, 3)
    assert labels[unanswered]["label"] in ("unanswered", "suggested")
    assert labels[person]["label"] == "resolved_by_person"
    assert labels[person]["evidence"]["resolved_by"] == "ana"
    [day] = body["days"]
    assert day["involved"] == 5 and day["feedback"] == 2 and day["satisfaction"] == 1.0
    assert day["resolution_rate"] == 0.4  # confirmed + assumed (the reopened one not) of 5
    assert body["totals"]["resolution_rate"] == 0.4
    assert body["total_conversations"] == 5

    config = tmp_path / "assistant.yaml"
    config.write_text("pilot: {outcome_after_s: 0}\n")
    printed = CliRunner().invoke(
        cli,
        [
            *("--data-dir", str(tmp_path / "data"), "--config", str(config)),
            *("report", "outcomes", "--tenant", "acme", "--csv"),
        ],
    )
    assert printed.exit_code == 0, printed.output
    rows = list(csv.DictReader(io.StringIO(printed.stdout)))
    assert {r["session_id"]: r["label"] for r in rows} == {k: v["label"] for k, v in labels.items()}


def test_stored_outcomes_follow_time_and_a_store_from_before(settings, example_kb, tmp_path):
    import time

    from service.outcome_upkeep import OUTCOMES_LABELLED, catch_up, keep_current
    from service.stores.outcome_store import OUTCOMES
    from service.stores.upkeep_marks import UPKEEP
    from storage.qdrant.store import Match

    with served(settings, example_kb, tmp_path, outcome_after_s=3600.0) as (client, app):
        session, _ = conversation(client, "c-1", "How do I reset my password?")
        first = client.get("/v1/reports/outcomes", headers=auth("lead")).json()
        assert [c["label"] for c in first["conversations"]] == ["pending"]
        pilot = app.state.pilot
        keep_current(pilot, time.time() + 7200)  # the minute sweep, two hours later
        later = client.get("/v1/reports/outcomes", headers=auth("lead")).json()
        assert [c["label"] for c in later["conversations"]] == ["assumed"]
        assert later["days"][0]["resolution_rate"] == 1.0

        # a store from before outcomes were stored (nor marks): labelled once at start
        pilot.store.store.delete(OUTCOMES, Match("tenant", ("acme",)))
        pilot.upkeep.store.delete(UPKEEP, Match("name", (OUTCOMES_LABELLED,)))
        assert client.get("/v1/reports/outcomes", headers=auth("lead")).json()["conversations"] == []
        catch_up(pilot, time.time() + 7200)
        again = client.get("/v1/reports/outcomes", headers=auth("lead")).json()
        assert [(c["session_id"], c["label"]) for c in again["conversations"]] == [(session, "assumed")]


def test_marks_of_anonymous_visitors_are_flagged(settings, example_kb, tmp_path):
    with served(settings, example_kb, tmp_path, outcome_after_s=0.0, roles="evidence") as (client, _):
        named, _ = conversation(client, "c-1", "How do I reset my password?")
        rate(client, named, 0, "up")
        throwaway = []
        for _ in range(3):  # ask, mark helpful, leave: what anyone can do without a name
            session, replies = conversation(client, None, "How do I reset my password?")
            assert replies[0]["verdict"] == "answered"
            rate(client, session, 0, "up")
            throwaway.append(session)
        public = client.get("/v1/reports/outcomes", headers=auth("lead")).json()
    rows = {c["session_id"]: c for c in public["conversations"]}
    assert rows[named]["label"] == "confirmed" and rows[named].get("anonymous_mark") is False
    for session in throwaway:
        assert rows[session]["label"] == "confirmed" and rows[session].get("anonymous_mark") is True
        assert "anonymous visitor" in rows[session]["why"]
    [day] = public["days"]
    assert day["confirmed"] == 4 and day.get("confirmed_anonymous") == 3
    assert public["totals"]["confirmed_anonymous"] == 3


def test_topics_name_only_the_pages_the_readers_key_may_read(settings, example_kb, tmp_path):
    with served(settings, example_kb, tmp_path, outcome_after_s=0.0, roles="evidence") as (client, _):
        inside, replies = conversation(
            client, "c-5", "Which reason code do I use for a goodwill refund override?", key="intranet"
        )
        assert replies[0]["citations"][0]["source_id"] == "internal/runbook-refund-override.md"
        public = client.get("/v1/reports/outcomes", headers=auth("lead")).json()
        senior = client.get("/v1/reports/outcomes", headers=auth("senior-lead")).json()
    [row] = public["conversations"]
    assert row["session_id"] == inside and row["topic"] == [] and "runbook" not in str(public)
    [seen] = senior["conversations"]
    assert seen["topic"] == ["internal/runbook-refund-override.md"]


def test_the_lead_drills_from_tiles_to_transcripts(settings, example_kb, tmp_path):
    """Tiles count every conversation of the window (pending included) and their shares add
    up to 100 %; each label, topic, day and article lists its conversations, each opens its
    transcript with the label's evidence; the list comes as CSV too."""
    with served(settings, example_kb, tmp_path, outcome_after_s=3600.0, roles="evidence") as (
        client,
        _app,
    ):
        answered, _ = conversation(client, "c-1", "How do I reset my password?")
        rate(client, answered, 0, "up")
        refund, _ = conversation(client, "c-2", "How long does a refund take?")
        person, _ = conversation(client, "c-3", "Do you offer a student discount?")
        handed = client.post(
            f"/v1/sessions/{person}/handoff", json={"reason": "asked"}, headers=auth("backend")
        )
        assert handed.status_code == 200
        client.post(f"/v1/handoffs/{person}/take", headers=auth("ana"))
        client.post(
            f"/v1/sessions/{person}/agent-messages",
            json={"message": "We have no student discount."},
            headers=auth("ana"),
        )
        client.post(f"/v1/sessions/{person}/resolve", json={"note": "no"}, headers=auth("ana"))
        inside, _ = conversation(
            client, "c-5", "Which reason code do I use for a goodwill refund override?", key="intranet"
        )
        report = client.get("/v1/reports/outcomes", headers=auth("lead")).json()
        tiles = {t["label"]: t for t in report["tiles"]}
        # recorded: 4 conversations; confirmed 1, resolved by a person 1, the rest still going
        assert sum(t["count"] for t in tiles.values()) == 4 == report["total_conversations"]
        assert (tiles["confirmed"]["count"], tiles["resolved_by_person"]["count"]) == (1, 1)
        assert tiles["confirmed"]["percent"] == tiles["resolved_by_person"]["percent"] == 25
        assert (tiles["pending"]["count"], tiles["pending"]["percent"]) == (2, 50)

        def listed(**query: str) -> dict:
            response = client.get("/v1/reports/outcomes", params=query, headers=auth("lead"))
            assert response.status_code == 200, response.text
            return response.json()

        by_label = listed(label="resolved_by_person")
        assert [c["session_id"] for c in by_label["conversations"]] == [person]
        assert by_label["matching"] == 1 and by_label["total_conversations"] == 4
        assert by_label["conversations"][0]["evidence"]["resolved_by"] == "ana"
        refunds = listed(article="billing/refunds.md")
        assert [c["session_id"] for c in refunds["conversations"]] == [refund]
        [row] = refunds["conversations"]
        assert row["topic_id"] == "billing/refunds.md" and row["topic_title"]
        by_topic = listed(topic="billing/refunds.md")
        assert [c["session_id"] for c in by_topic["conversations"]] == [refund]
        assert listed(day=report["days"][0]["day"])["matching"] == 4
        assert listed(day="2001-01-01")["matching"] == 0
        # a page above the lead's access lists nothing, and is never named
        hidden = listed(topic="internal/runbook-refund-override.md")
        assert hidden["conversations"] == [] and hidden["matching"] == 0
        senior = client.get(
            "/v1/reports/outcomes",
            params={"topic": "internal/runbook-refund-override.md"},
            headers=auth("senior-lead"),
        ).json()
        assert [c["session_id"] for c in senior["conversations"]] == [inside]
        # the topics table's "other" lists its conversations: the runbook one among them, unnamed
        topics = client.get("/v1/reports/topics", headers=auth("lead")).json()["topics"]
        [other] = [t for t in topics if not t["topic_id"]]
        others = listed(other="true")
        assert others["matching"] == other["conversations"] == len(others["conversations"])
        assert inside in [c["session_id"] for c in others["conversations"]]
        assert refund not in [c["session_id"] for c in others["conversations"]]
        assert "runbook" not in str(others["conversations"])

        opened = client.get(f"/v1/reports/outcomes/{person}", headers=auth("lead")).json()
        assert opened["outcome"]["label"] == "resolved_by_person"
        assert opened["outcome"]["evidence"]["handoff_reason"] == "asked"
        assert opened["turns"][0]["user"] == "Do you offer a student discount?"
        secret = client.get(f"/v1/reports/outcomes/{inside}", headers=auth("lead")).json()
        assert "withheld" in secret["turns"][0]["answer"] and "runbook" not in str(secret)
        assert client.get("/v1/reports/outcomes/nope", headers=auth("lead")).status_code == 404
        assert client.get(f"/v1/reports/outcomes/{person}", headers=auth("ana")).status_code == 403

        text = client.get("/v1/reports/outcomes.csv", params={"label": "pending"}, headers=auth("lead"))
        assert text.headers["content-type"].startswith("text/csv")
        rows = list(csv.DictReader(io.StringIO(text.text)))
        assert sorted(r["session_id"] for r in rows) == sorted([refund, inside])
        assert {r["label"] for r in rows} == {"pending"}

        topics = client.get("/v1/reports/topics", headers=auth("lead")).json()["topics"]
        named = {t["topic_id"]: t for t in topics}
        assert named["billing/refunds.md"]["conversations"] == 1
        assert "internal/runbook-refund-override.md" not in named
        assert sum(t["conversations"] for t in topics) == 4
        articles = client.get("/v1/reports/articles", headers=auth("lead")).json()["articles"]
        failing = [a["failing_percent"] for a in articles]
        assert failing == sorted(failing, reverse=True)  # the articles that fail first
        helpful = [a for a in articles if a["helpful"]]
        assert helpful and helpful[0]["failing"] == 0


def test_every_reply_is_rated_and_the_closing_answer_is_counted_once(settings, example_kb, tmp_path):
    """A mark on "I could not find this" is taken and changes no label; the closing "Did we
    solve your problem today?" is answered once per conversation (a second answer replaces
    the first), after a person resolved it too, and the report counts it per conversation."""
    with served(settings, example_kb, tmp_path, outcome_after_s=0.0, roles="evidence") as (client, _):
        refused, replies = conversation(client, "c-1", "Do you ship printed manuals to Mars?")
        assert replies[0]["verdict"] == "idk", replies[0]
        # the chat asks its closing question when the customer says goodbye after a reply
        _, bye = conversation(client, "c-9", "How long does a refund take?", "Thanks, bye!")
        assert [r["closes"] for r in bye] == [False, True]
        rate(client, refused, 0, "up")  # polite, but not an answer
        quiet = client.post("/v1/sessions", json={"customer_id": "c-2"}, headers=auth("backend"))
        empty = quiet.json()["session_id"]
        nothing = client.post(
            f"/v1/sessions/{empty}/satisfaction", json={"solved": True}, headers=auth("backend")
        )
        assert nothing.status_code == 409 and nothing.json()["error"]["code"] == "nothing_to_rate"
        for bad in ({"solved": "yes"}, {"solved": None}, {}, {"solved": 1}):
            refusal = client.post(
                f"/v1/sessions/{refused}/satisfaction", json=bad, headers=auth("backend")
            )
            assert refusal.status_code == 422, (bad, refusal.text)
            assert refusal.json()["error"]["details"][0]["field"] == "solved"
        extra = client.post(
            f"/v1/sessions/{refused}/satisfaction",
            json={"solved": True, "stars": 5},
            headers=auth("backend"),
        )
        assert extra.status_code == 422 and "stars" in extra.text
        said = client.post(
            f"/v1/sessions/{refused}/satisfaction", json={"solved": False}, headers=auth("backend")
        )
        assert said.status_code == 200 and said.json()["replaced"] is False, said.text
        # another key of the tenant (another owner) cannot answer for this customer
        other = client.post(
            f"/v1/sessions/{refused}/satisfaction", json={"solved": True}, headers=auth("intranet")
        )
        assert other.status_code == 404

        person, _ = conversation(client, "c-3", "How long does a refund take?")
        # the button's hand-off line is a stored reply: rated like any other, said once
        line = client.post(f"/v1/sessions/{person}/handoff", json={}, headers=auth("backend")).json()
        again = client.post(f"/v1/sessions/{person}/handoff", json={}, headers=auth("backend")).json()
        assert isinstance(line["turn_index"], int) and again.get("turn_index") is None, (line, again)
        said_line = next(
            t
            for t in client.get(f"/v1/sessions/{person}", headers=auth("backend")).json()["turns"]
            if t["turn_index"] == line["turn_index"]
        )
        assert said_line["answer"] == line["message"] and said_line["verdict"] == "handoff"
        rate(client, person, line["turn_index"], "down")
        waiting = client.post(
            f"/v1/sessions/{person}/messages",
            json={"message": "It is order 42"},
            headers=auth("backend"),
        ).json()
        assert client.post(f"/v1/handoffs/{person}/take", headers=auth("ana")).status_code == 200
        client.post(
            f"/v1/sessions/{person}/agent-messages", json={"message": "Found it."}, headers=auth("ana")
        )
        turns = client.get(f"/v1/sessions/{person}", headers=auth("backend")).json()["turns"]
        agent_turn = next(t["turn_index"] for t in turns if t.get("from") == "agent")
        for turn in (waiting["turn_index"], agent_turn):  # a waiting message, a person's reply
            mark = client.post(
                f"/v1/sessions/{person}/feedback",
                json={"turn_index": turn, "rating": "up"},
                headers=auth("backend"),
            )
            assert mark.status_code == 409 and mark.json()["error"]["code"] == "not_rateable"
        resolved = client.post(
            f"/v1/sessions/{person}/resolve", json={"note": "refund sent"}, headers=auth("ana")
        )
        assert resolved.status_code == 200
        for solved, replaced in ((False, False), (True, True)):  # changed their mind
            answered = client.post(
                f"/v1/sessions/{person}/satisfaction", json={"solved": solved}, headers=auth("backend")
            )
            assert answered.status_code == 200, answered.text
            assert answered.json()["replaced"] is replaced
        session = client.get(f"/v1/sessions/{person}", headers=auth("backend")).json()["session"]
        assert session["csat_solved"] is True and session["status"] == "resolved"
        # a skip after an answer keeps the answer
        kept = client.post(f"/v1/sessions/{person}/satisfaction/skip", headers=auth("backend"))
        assert kept.status_code == 200 and kept.json()["solved"] is True, kept.text
        assert kept.json()["skipped"] is False
        # closed unanswered: kept, so the report knows who was asked; an answer after replaces it
        skipper, _ = conversation(client, "c-4", "How long does a refund take?")
        changed, _ = conversation(client, "c-5", "How long does a refund take?")
        for session_id in (skipper, changed):
            skipped = client.post(
                f"/v1/sessions/{session_id}/satisfaction/skip", headers=auth("backend")
            )
            assert skipped.status_code == 200 and skipped.json()["skipped"] is True, skipped.text
            assert skipped.json()["solved"] is None
        assert (
            client.post(f"/v1/sessions/{empty}/satisfaction/skip", headers=auth("backend")).json()[
                "error"
            ]["code"]
            == "nothing_to_rate"
        )
        assert (
            client.post(
                f"/v1/sessions/{skipper}/satisfaction/skip", headers=auth("intranet")
            ).status_code
            == 404
        )
        after = client.post(
            f"/v1/sessions/{changed}/satisfaction", json={"solved": True}, headers=auth("backend")
        )
        assert after.json()["replaced"] is False  # a skip is not an answer
        body = client.get("/v1/reports/outcomes", headers=auth("lead")).json()
        listed = client.get("/v1/reports/outcomes.csv", headers=auth("lead")).text
    csat = {r["session_id"]: r["csat"] for r in csv.DictReader(io.StringIO(listed))}
    assert (csat[person], csat[refused], csat[skipper], csat[changed]) == ("yes", "no", "skipped", "yes")
    rows = {c["session_id"]: c for c in body["conversations"]}
    assert rows[refused]["label"] == "unanswered" and rows[refused]["csat"] == "no"
    assert rows[refused]["evidence"]["feedback"]["rating"] == "up"
    assert rows[person]["label"] == "resolved_by_person" and rows[person]["csat"] == "yes"
    assert rows[person]["evidence"]["csat"]["solved"] is True
    [day] = body["days"]
    assert rows[skipper]["evidence"]["csat"]["skipped"] is True
    assert (day["csat_answers"], day["csat_yes"], day["csat_rate"]) == (3, 2, 0.667)
    assert (day["csat_skipped"], day["csat_response_rate"]) == (1, 0.75)
    # the marks on the refusal (up) and on the button's hand-off line (down)
    assert day["satisfaction"] == 0.5 and day["feedback"] == 2
    totals = body["totals"]
    assert (totals["csat_answers"], totals["csat_rate"], totals["csat_response_rate"]) == (
        3,
        0.667,
        0.75,
    )
    config = tmp_path / "assistant.yaml"
    config.write_text("pilot: {outcome_after_s: 0}\n")
    printed = CliRunner().invoke(
        cli,
        [
            *("--data-dir", str(tmp_path / "data"), "--config", str(config)),
            *("report", "outcomes", "--tenant", "acme"),
        ],
        env={"COLUMNS": "200"},
    )
    assert printed.exit_code == 0, printed.output
    assert "csat_rate" in printed.stdout and " 0.667 " in printed.stdout


def test_a_start_labels_only_what_lacks_an_outcome_reading_ids_not_headers(
    settings, example_kb, tmp_path, monkeypatch
):
    import time

    from service.outcome_upkeep import OUTCOMES_LABELLED, catch_up, flush
    from service.stores.outcome_store import OUTCOMES
    from service.stores.upkeep_marks import UPKEEP
    from storage.qdrant.store import AllOf, Match

    with served(settings, example_kb, tmp_path, outcome_after_s=3600.0) as (client, app):
        kept, _ = conversation(client, "c-1", "How do I reset my password?")
        lost, _ = conversation(client, "c-2", "How long does a refund take?")
        pilot = app.state.pilot
        flush(pilot, time.time())
        # one conversation of a store from before outcomes: no stored outcome (nor marks)
        pilot.outcomes.store.delete(
            OUTCOMES, AllOf((Match("tenant", ("acme",)), Match("session_id", (lost,))))
        )
        pilot.upkeep.store.delete(UPKEEP, Match("name", (OUTCOMES_LABELLED,)))
        read: list[str] = []
        turns_of = pilot.memory.session_turns
        monkeypatch.setattr(
            pilot.memory, "session_turns", lambda scope, sid: read.append(sid) or turns_of(scope, sid)
        )

        def every_header(tenant: str) -> None:
            raise AssertionError("a start read every session header whole")

        monkeypatch.setattr(pilot.store, "sessions", every_header)
        catch_up(pilot, time.time())
        assert read == [lost]  # the labelled conversation's turns are not read
        assert pilot.outcomes.get("acme", lost) is not None
        assert pilot.outcomes.get("acme", kept) is not None
        catch_up(pilot, time.time())  # the next start: nothing left to label
        assert read == [lost]


def test_a_clean_stop_spares_the_next_start_the_look_for_unlabelled(
    settings, example_kb, tmp_path, monkeypatch
):
    import time

    from service.outcome_upkeep import FEEDBACK_DAYS, HANDOFF_FLAGS, catch_up
    from service.stores.outcome_store import OutcomeStore
    from service.stores.pilot_store import PilotStore
    from service.stores.upkeep_marks import RUN, UPKEEP
    from storage.qdrant.store import Match

    configured = settings.model_copy(
        update={"pilot": settings.pilot.model_copy(update={"outcome_after_s": 3600.0})}
    )
    data = tmp_path / "data" / "qdrant"
    with pilot_over_own_store(configured, example_kb, data, *KEYS) as (app, _):
        with TestClient(app) as client:
            session, _ = conversation(client, "c-1", "How do I reset my password?")
            pilot = app.state.pilot
            deadline = time.monotonic() + 30
            while not pilot.caught_up and time.monotonic() < deadline:
                time.sleep(0.05)
            assert pilot.caught_up
            assert pilot.upkeep.store.count(UPKEEP, Match("kind", (RUN,))) == 1  # this run
            assert ("acme", session) in pilot.dirty  # refreshed at the sweep, not yet run
        # the stop refreshed what was touched and took its run's mark away
        assert not pilot.dirty
        assert pilot.outcomes.get("acme", session) is not None
        assert pilot.upkeep.store.count(UPKEEP, Match("kind", (RUN,))) == 0
        # nothing was left to migrate: marked, and not looked for again
        assert pilot.upkeep.done(HANDOFF_FLAGS) and pilot.upkeep.done(FEEDBACK_DAYS)

        looked: list[str] = []
        # the next start builds its stores anew: their classes are watched
        monkeypatch.setattr(OutcomeStore, "backfill", lambda *args: looked.append("backfill"))
        monkeypatch.setattr(PilotStore, "drop_handoff_flags", lambda _: looked.append("flags") or 0)
        with TestClient(app):  # the next start, after a clean stop
            while not pilot.caught_up and time.monotonic() < deadline:
                time.sleep(0.05)
            assert pilot.caught_up and not pilot.others_left
            assert looked == []
            crashed = pilot.run  # this run ends without a clean stop
            pilot.caught_up = False
        assert pilot.upkeep.store.count(UPKEEP, Match("name", (crashed,))) == 1
        pilot.run, pilot.others_left = pilot.upkeep.begin_run()  # a start after the crash
        assert pilot.others_left
        catch_up(pilot, time.time())
        assert looked == ["backfill"]

"""From a knowledge gap to a published article through the real service: a person answers a
question the knowledge base could not, the lead drafts an article from that reply, saves it
(a hidden draft), checks it against the question, publishes it, and the next customer is
answered from it. Bad input is refused naming the field, and nothing already ingested is lost.
Two tenants' articles of one name never touch, and every route stays within the admin key's
own enforced slots."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from config.settings import ApiKey
from service.auth import hash_key
from service.domain.model_draft import UNSUPPORTED
from tests.helpers import (
    REFUND,
    acme_team,
    api_key,
    bearer,
    fields_at_fault,
    pilot_over_own_store,
    shipped_pilot_client,
)
from tests.scripted_llm import ScriptedLLM

pytestmark = pytest.mark.integration
QUESTION = "Do you ship to Antarctica?"
REPLY = "We do not ship to Antarctica. Orders to every other continent arrive within 10 business days."
KEYS = [
    *acme_team(),
    ApiKey(
        name="junior-lead",
        sha256=hash_key("junior-lead-key"),
        tenant="acme",
        role="admin",
        slots={"access_level": "customer"},
    ),
    ApiKey(
        name="public-lead",
        sha256=hash_key("public-lead-key"),
        tenant="acme",
        role="admin",
        slots={"access_level": "public", "tier": "basic"},
    ),
    ApiKey(
        name="senior-lead",
        sha256=hash_key("senior-lead-key"),
        tenant="acme",
        role="admin",
        slots={"access_level": "internal"},
    ),
    api_key("insider", access_level="internal"),
    api_key("ben", role="agent", access_level="internal"),
    ApiKey(name="lead", sha256=hash_key("globex-lead-key"), tenant="globex", role="admin"),
    ApiKey(
        name="backend",
        sha256=hash_key("globex-backend-key"),
        tenant="globex",
        slots={"access_level": "public"},
        trust_customer_id=True,
    ),
]
auth = bearer


def ask(client, customer: str, message: str, key: str = "backend") -> tuple[str, dict]:
    session = client.post("/v1/sessions", json={"customer_id": customer}, headers=auth(key)).json()[
        "session_id"
    ]
    reply = client.post(
        f"/v1/sessions/{session}/messages", json={"message": message}, headers=auth(key)
    ).json()
    return session, reply


def publish(client, key: str, article: dict) -> dict:
    """Save, check and publish ``article`` with the admin ``key``; the published record."""
    saved = client.post("/v1/articles", json=article, headers=auth(key))
    assert saved.status_code == 201, saved.text
    slug = article["slug"]
    checked = client.post(f"/v1/articles/{slug}/check", headers=auth(key))
    assert checked.status_code == 200 and checked.json()["check"]["answered"], checked.text
    published = client.post(f"/v1/articles/{slug}/publish", headers=auth(key))
    assert published.status_code == 200, published.text
    return published.json()


MARS = "Do you ship to Mars?"
ACME_MARS = {
    "slug": "mars-shipping",
    "title": "Shipping to Mars",
    "text": "# Shipping to Mars\n\nWe ship to Mars. Parcels to Mars arrive within 3 weeks.",
    "access": "public",
    "questions": [MARS],
}


@pytest.fixture
def client(settings, example_kb, tmp_path):
    with shipped_pilot_client(settings, example_kb, tmp_path / "data", *KEYS) as test_client:
        yield test_client


def test_a_gap_becomes_a_checked_published_article(client, tmp_path):
    session, first = ask(client, "c-1", QUESTION)
    assert first["verdict"] != "answered"
    client.post(f"/v1/sessions/{session}/handoff", json={"reason": "gap"}, headers=auth("backend"))
    assert client.post(f"/v1/handoffs/{session}/take", headers=auth("ana")).status_code == 200
    client.post(f"/v1/sessions/{session}/agent-messages", json={"message": REPLY}, headers=auth("ana"))
    client.post(f"/v1/sessions/{session}/resolve", json={"note": "told them"}, headers=auth("ana"))

    proposal = client.post(
        "/v1/articles/draft", json={"questions": [QUESTION]}, headers=auth("lead")
    ).json()
    assert "We do not ship to Antarctica." in proposal["text"]
    assert proposal["sources"][0]["session_id"] == session
    assert proposal["slug"] == "do-you-ship-to-antarctica"

    article = {
        "slug": "shipping-antarctica",
        "title": "Shipping to Antarctica",
        "text": "# Shipping to Antarctica\n\n" + REPLY,
        "access": "public",
        "questions": [QUESTION],
    }
    saved = client.post("/v1/articles", json=article, headers=auth("lead"))
    assert saved.status_code == 201, saved.text
    assert saved.json()["status"] == "draft"
    written = (tmp_path / "articles" / "acme" / "shipping-antarctica.md").read_text()
    assert "access: public" in written and "tenant: acme" in written and "draft: " in written
    assert ask(client, "c-2", QUESTION)[1]["verdict"] != "answered"  # a draft: not yet

    early = client.post("/v1/articles/shipping-antarctica/publish", headers=auth("lead"))
    assert early.status_code == 409 and fields_at_fault(early) == ["check"]
    # another customer's recent question near it, in other words: the check replays it
    nearby = "Can you deliver my parcel to Antarctica?"
    assert ask(client, "c-4", nearby)[1]["verdict"] != "answered"
    checked = client.post("/v1/articles/shipping-antarctica/check", headers=auth("lead")).json()
    [row] = checked["check"]["rows"]
    assert row["answered_from_article"] and row["cited"] == ["articles/acme/shipping-antarctica"]
    replay = checked["check"]["replay"]
    [change] = [c for c in replay["changes"] if c["question"] == nearby]
    assert change["change"] == "newly_answered", change
    assert change["after"]["pages"] == ["articles/acme/shipping-antarctica"]
    assert QUESTION not in [c["question"] for c in replay["changes"]]  # its own: checked above
    assert replay["summary"]["lost"] == 0 and replay["questions"] <= 8
    published = client.post("/v1/articles/shipping-antarctica/publish", headers=auth("lead"))
    assert published.status_code == 200 and published.json()["status"] == "published"

    _, answered = ask(client, "c-3", QUESTION)
    assert answered["verdict"] == "answered"
    assert [c["source_id"] for c in answered["citations"]] == ["articles/acme/shipping-antarctica"]
    [listed] = client.get("/v1/articles", headers=auth("lead")).json()
    assert [(e["action"], e["by"]) for e in listed["events"]] == [
        ("saved", "lead"),
        ("checked", "lead"),
        ("published", "lead"),
    ]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"slug": "../../etc/passwd"}, "slug"),
        ({"slug": "Shipping Info"}, "slug"),
        ({"access": "secret"}, "access"),
        ({"tiers": []}, "tiers"),
        ({"text": "x" * 20_001}, "text"),
        ({"title": ""}, "title"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_a_bad_article_is_refused_naming_the_field(client, tmp_path, change, field):
    article = {"slug": "ok", "title": "T", "text": "# T\n\nText.", "access": "public", **change}
    response = client.post("/v1/articles", json=article, headers=auth("lead"))
    assert response.status_code == 422, response.text
    assert field in response.text
    assert not (tmp_path / "articles").exists() or not list((tmp_path / "articles").iterdir())


def test_only_admins_write_articles_and_never_above_their_own_access(client, tmp_path):
    article = {
        "slug": "runbook",
        "title": "Runbook",
        "text": "# Runbook\n\nSteps.",
        "access": "internal",
    }
    assert client.post("/v1/articles", json=article, headers=auth("ana")).status_code == 403
    refused = client.post("/v1/articles", json=article, headers=auth("junior-lead"))
    assert refused.status_code == 422 and fields_at_fault(refused) == ["access"]
    assert client.post("/v1/articles/nothing/check", headers=auth("lead")).status_code == 404
    # the knowledge base is as it was: the refunds page still answers
    assert ask(client, "c-9", "How long does a refund take?")[1]["verdict"] == "answered"


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    # plain names (saved when the rest is valid) and any text (refused)
    slug=st.one_of(
        st.from_regex(r"[a-z0-9]{1,12}(-[a-z0-9]{1,8})?", fullmatch=True),
        st.text(min_size=1, max_size=40),
    ),
    title=st.one_of(st.text(min_size=1, max_size=80), st.just("")),
    text=st.one_of(st.text(max_size=400), st.just("# Shipping\n\nWe ship within 10 days.")),
    access=st.sampled_from(["public", "customer", "internal", "secret", ""]),
)
def test_any_article_is_saved_or_refused_whole(client, tmp_path, slug, title, text, access):
    body = {"slug": slug, "title": title, "text": text, "access": access}
    response = client.post("/v1/articles", json=body, headers=auth("lead"))
    assert response.status_code in (201, 422), response.text
    folder = tmp_path / "articles"
    if response.status_code == 201:
        assert (folder / "acme" / f"{slug}.md").is_file()
        assert response.json()["status"] == "draft"
    else:
        error = response.json()["error"]  # names what is wrong
        assert any(f in body or f == "body" for f in fields_at_fault(response)), error
        # nothing outside the folder, and no file for a refused name
        mine = folder / "acme"  # the tenant's folder
        assert not folder.exists() or all(p.parent in (folder, mine) for p in folder.rglob("*"))
        listed = {a["slug"] for a in client.get("/v1/articles", headers=auth("lead")).json()}
        assert slug not in listed or (folder / "acme" / f"{slug}.md").is_file()


def test_two_tenants_articles_of_one_name_never_touch(client, tmp_path):
    published = publish(client, "lead", ACME_MARS)
    theirs = {**ACME_MARS, "text": "# Mars\n\nMars parcels are suspended until next year."}
    saved = client.post("/v1/articles", json=theirs, headers=auth("globex-lead"))
    assert saved.status_code == 201, saved.text
    # acme's customers are still answered from acme's article, whose record still says so
    _, answered = ask(client, "c-1", MARS)
    assert answered["verdict"] == "answered", answered
    assert published["id"] == "articles/acme/mars-shipping"
    assert saved.json()["id"] == "articles/globex/mars-shipping"
    assert [c["source_id"] for c in answered["citations"]] == ["articles/acme/mars-shipping"]
    assert "3 weeks" in answered["answer"]
    [mine] = client.get("/v1/articles", headers=auth("lead")).json()
    assert mine["status"] == "published" and "3 weeks" in mine["text"]
    assert "3 weeks" in (tmp_path / "articles" / "acme" / "mars-shipping.md").read_text()
    # globex publishing its own wipes nothing of acme's, and each tenant's customers read theirs
    client.post("/v1/articles/mars-shipping/check", headers=auth("globex-lead"))
    client.post("/v1/articles/mars-shipping/publish", headers=auth("globex-lead"))
    _, again = ask(client, "c-2", MARS)
    assert [c["source_id"] for c in again["citations"]] == ["articles/acme/mars-shipping"]
    _, globex = ask(client, "g-1", MARS, key="globex-backend")
    assert "articles/acme/mars-shipping" not in [c["source_id"] for c in globex["citations"]]


@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(slug=st.from_regex(r"[a-z0-9]{1,10}(-[a-z0-9]{1,6}){0,2}", fullmatch=True))
def test_any_name_saved_by_two_tenants_is_two_articles(client, tmp_path, slug):
    first = {"slug": slug, "title": "Ours", "text": "# Ours\n\nAcme text.", "access": "public"}
    second = {**first, "title": "Theirs", "text": "# Theirs\n\nGlobex text."}
    assert client.post("/v1/articles", json=first, headers=auth("lead")).status_code == 201
    assert client.post("/v1/articles", json=second, headers=auth("globex-lead")).status_code == 201
    ours = {a["slug"]: a for a in client.get("/v1/articles", headers=auth("lead")).json()}
    theirs = {a["slug"]: a for a in client.get("/v1/articles", headers=auth("globex-lead")).json()}
    assert ours[slug]["text"].endswith("Acme text.") and theirs[slug]["text"].endswith("Globex text.")
    assert ours[slug]["id"] != theirs[slug]["id"]
    kb = client.app.state.pilot.runtime.knowledge_base()
    stored = kb.stored_sources()
    assert {ours[slug]["id"], theirs[slug]["id"]} <= set(stored)
    assert "Acme text." in (tmp_path / "articles" / "acme" / f"{slug}.md").read_text()


@settings(max_examples=200, deadline=None)
@given(
    first=st.tuples(
        st.text(max_size=12), st.from_regex(r"[a-z0-9]{1,6}(-[a-z0-9]{1,3})?", fullmatch=True)
    ),
    second=st.tuples(
        st.text(max_size=12), st.from_regex(r"[a-z0-9]{1,6}(-[a-z0-9]{1,3})?", fullmatch=True)
    ),
)
def test_no_two_tenants_and_names_share_an_id_or_a_file(first, second, tmp_path_factory):
    from service.stores.articles import article_id, tenant_folder

    if first == second:
        return
    assert article_id(*first) != article_id(*second)

    # a file: <folder>/<tenant folder>/<slug>.md, or <folder>/<slug>.md without a tenant
    def file_of(tenant: str, slug: str) -> str:
        return f"{tenant_folder(tenant)}/{slug}.md" if tenant else f"{slug}.md"

    assert file_of(*first) != file_of(*second)
    assert "/" not in tenant_folder(first[0]) and tenant_folder(first[0]) not in (".", "..")


def test_article_routes_stay_within_the_admin_keys_own_slots(client):
    # the check searches under the key's own slots: a public key never quotes the runbook
    asks_internal = {
        "slug": "goodwill",
        "title": "Goodwill gestures",
        "text": "# Goodwill gestures\n\nWe sometimes send a small gift to say sorry.",
        "access": "public",
        "questions": ["Which reason code do I use for a goodwill refund override?"],
    }
    assert (
        client.post("/v1/articles", json=asks_internal, headers=auth("public-lead")).status_code == 201
    )
    checked = client.post("/v1/articles/goodwill/check", headers=auth("public-lead")).json()
    [row] = checked["check"]["rows"]
    assert "internal/runbook-refund-override.md" not in row["cited"], row
    assert "OVR-9" not in row["answer"] and "OVR-7" not in row["answer"], row
    # the senior lead's check may read the runbook: its key may
    assert (
        client.post("/v1/articles", json=asks_internal, headers=auth("senior-lead")).status_code == 201
    )
    senior = client.post("/v1/articles/goodwill/check", headers=auth("senior-lead")).json()
    assert "internal/runbook-refund-override.md" in senior["check"]["rows"][0]["cited"]

    # an article for tiers the key does not read, or above its level: 422 naming the field
    enterprise = {**asks_internal, "slug": "sso-extra", "tiers": ["enterprise"]}
    refused = client.post("/v1/articles", json=enterprise, headers=auth("public-lead"))
    assert refused.status_code == 422 and fields_at_fault(refused) == ["tiers"], refused.text
    above = {**asks_internal, "slug": "members", "access": "customer"}
    refused = client.post("/v1/articles", json=above, headers=auth("public-lead"))
    assert refused.status_code == 422 and fields_at_fault(refused) == ["access"]

    # the senior lead's customer article: the public lead neither lists, checks nor publishes it
    members = {**above, "text": "# Members\n\nMembers get free returns.", "questions": ["Free returns?"]}
    assert client.post("/v1/articles", json=members, headers=auth("senior-lead")).status_code == 201
    assert client.post("/v1/articles/members/check", headers=auth("senior-lead")).status_code == 200
    listed = {a["slug"] for a in client.get("/v1/articles", headers=auth("public-lead")).json()}
    assert "members" not in listed and "goodwill" in listed
    assert "members" in {
        a["slug"] for a in client.get("/v1/articles", headers=auth("senior-lead")).json()
    }
    for route in ("check", "publish"):
        refused = client.post(f"/v1/articles/members/{route}", headers=auth("public-lead"))
        assert refused.status_code == 404, refused.text
    overwrite = client.post(
        "/v1/articles", json={**members, "access": "public"}, headers=auth("public-lead")
    )
    assert overwrite.status_code == 403 and fields_at_fault(overwrite) == ["slug"]
    [record] = [
        a
        for a in client.get("/v1/articles", headers=auth("senior-lead")).json()
        if a["slug"] == "members"
    ]
    assert record["status"] == "draft" and record["access"] == "customer"
    # another tenant's admin finds none of it
    assert client.post("/v1/articles/members/publish", headers=auth("globex-lead")).status_code == 404


def test_articles_stored_before_tenants_are_rewritten_without_loss(client, tmp_path):
    """The layout before: one file and one document per name, whatever the tenant. Acme's
    published article was overwritten on disk by globex's draft; both records hold their text."""
    from service.stores.articles import _NAMESPACE, ARTICLES, ArticleDraft
    from storage.kb.ingest import ingest_paths
    from storage.qdrant.store import PointData

    pilot = client.app.state.pilot
    kb = pilot.runtime.knowledge_base()
    articles = pilot.articles
    vector = kb.encoders.dense.encode(["article"])[0].dense
    ours = ArticleDraft(**ACME_MARS)
    theirs = ArticleDraft(**{**ACME_MARS, "text": "# Mars\n\nMars parcels are suspended."})
    for tenant, article, status in (("acme", ours, "published"), ("globex", theirs, "draft")):
        record = {
            **article.model_dump(),
            "tenant": tenant,
            "id": "articles/mars-shipping",
            "status": status,
            "check": {"answered": 1, "rows": []},
            "events": [],
            "updated_at": 1.0,
        }
        key = str(uuid.uuid5(_NAMESPACE, f"{tenant}/mars-shipping"))  # as it always was
        articles.store.upsert(ARTICLES, [PointData(id=key, dense=vector, payload=record)])
    legacy = tmp_path / "articles" / "mars-shipping.md"
    legacy.parent.mkdir(parents=True, exist_ok=True)
    legacy.write_text(
        "---\nid: articles/mars-shipping\ntitle: Shipping to Mars\naccess: internal\n"
        "tenant: globex\n---\n\n" + theirs.text
    )
    ingest_paths(kb, [legacy])
    assert ask(client, "c-1", MARS)[1]["verdict"] != "answered"  # what the probe saw

    assert articles.reconcile(kb) == 2
    _, answered = ask(client, "c-2", MARS)
    assert answered["verdict"] == "answered", answered
    assert [c["source_id"] for c in answered["citations"]] == ["articles/acme/mars-shipping"]
    assert not legacy.exists() and "articles/mars-shipping" not in kb.stored_sources()
    assert "suspended" in (tmp_path / "articles" / "globex" / "mars-shipping.md").read_text()
    listed = client.get("/v1/articles", headers=auth("globex-lead")).json()
    assert [(a["id"], a["status"]) for a in listed] == [("articles/globex/mars-shipping", "draft")]
    assert articles.reconcile(kb) == 0  # once


def test_a_deployment_without_tenants_keeps_its_article_names(settings, example_kb, tmp_path):
    keys = [
        ApiKey(name="lead", sha256=hash_key("lead-key"), role="admin"),
        ApiKey(name="web", sha256=hash_key("web-key"), trust_customer_id=True),
    ]
    with (
        pilot_over_own_store(settings, example_kb, tmp_path / "data", *keys, roles="evidence") as (
            app,
            _,
        ),
        TestClient(app) as client,
    ):
        published = publish(client, "lead", ACME_MARS)
        assert published["id"] == "articles/mars-shipping"
        assert (tmp_path / "articles" / "mars-shipping.md").is_file()
        assert [a["slug"] for a in client.get("/v1/articles", headers=auth("lead")).json()] == [
            "mars-shipping"
        ]
        _, answered = ask(client, "c-1", MARS, key="web")
        assert [c["source_id"] for c in answered["citations"]] == ["articles/mars-shipping"]


def test_a_published_articles_citation_opens_within_its_tenant_and_access(client):
    """The answer's citation of a desk article carries its URL on the service: it opens for a
    reader of the article's tenant, and is 404 (never the text) for another tenant's key, for
    a key below the article's access, and for an article still a draft."""
    published = publish(client, "lead", ACME_MARS)
    assert published["url"] == "/help/articles/acme/mars-shipping"  # no pilot.public_url: a path
    _, answered = ask(client, "c-1", MARS)
    [citation] = answered["citations"]
    assert citation["url"] == published["url"], citation
    opened = client.get(citation["url"], headers=auth("backend"))
    assert opened.status_code == 200 and "Parcels to Mars arrive within 3 weeks." in opened.text
    assert opened.headers["content-type"].startswith("text/plain")
    assert opened.headers["x-content-type-options"] == "nosniff"
    # a citation link opened in a browser (no key): a public article opens, as a page
    keyless = client.get(citation["url"])
    assert keyless.status_code == 200 and "3 weeks" in keyless.text
    browser = client.get(citation["url"], headers={"Accept": "text/html,*/*;q=0.8"})
    assert browser.headers["content-type"].startswith("text/html")
    assert "<h1>" in browser.text and "# " not in browser.text and "3 weeks" in browser.text
    assert "script-src" not in browser.headers["content-security-policy"]  # default-src 'none'
    assert browser.headers["content-security-policy"].startswith("default-src 'none'")
    # globex has an article of that name too: acme's address still names acme's, never globex's
    theirs = {**ACME_MARS, "text": "# Mars\n\nWe ship to Mars. Parcels to Mars arrive within 5 weeks."}
    assert (
        client.get(
            publish(client, "globex-lead", theirs)["url"], headers=auth("globex-backend")
        ).status_code
        == 200
    )
    for key in ("globex-backend", "globex-lead"):
        refused = client.get(citation["url"], headers=auth(key))
        assert refused.status_code == 404 and "3 weeks" not in refused.text, refused.text

    members = {
        "slug": "member-returns",
        "title": "Free returns for members",
        "text": "# Free returns for members\n\nMembers return any order for free within 60 days.",
        "access": "customer",
        "questions": ["Can members return an order for free?"],
    }
    record = publish(client, "junior-lead", members)
    assert client.get(record["url"], headers=auth("junior-lead")).status_code == 200
    below = client.get(record["url"], headers=auth("backend"))  # public slots: may not read it
    assert below.status_code == 404 and "60 days" not in below.text
    keyless = client.get(record["url"])  # nor a browser without a key
    assert keyless.status_code == 404 and "60 days" not in keyless.text
    # taken back to draft by a new save: no longer served
    client.post(
        "/v1/articles",
        json={**members, "text": members["text"] + " Ask us."},
        headers=auth("junior-lead"),
    )
    assert client.get(record["url"], headers=auth("junior-lead")).status_code == 404


STORE_CREDIT = "Can my refund be paid as store credit instead of to my card?"
INVENTED = "Refunds can also be paid as store credit within 2 business days."
MODEL_ARTICLE = f"{REFUND} {INVENTED}"


def drafting_pilot(settings, example_kb, tmp_path, llm, roles: str):
    return pilot_over_own_store(settings, example_kb, tmp_path / "data", *KEYS, roles=roles, llm=llm)


def test_where_nobody_replied_the_models_draft_is_checked_against_the_kb(settings, example_kb, tmp_path):
    """The responder on the model path, a gap nobody answered on a subject the knowledge
    base covers: the model drafts from the passages nearest the questions, its supported
    sentence stays as written, its invented one is marked and listed for the lead."""
    llm = ScriptedLLM(model="scripted").script(text=[MODEL_ARTICLE])
    with (
        drafting_pilot(settings, example_kb, tmp_path, llm, "model") as (app, _),
        TestClient(app) as client,
    ):
        response = client.post(
            "/v1/articles/draft", json={"questions": [STORE_CREDIT]}, headers=auth("lead")
        )
    assert response.status_code == 200, response.text
    proposal = response.json()
    assert proposal["drafted_by"] == "model"
    [(kind, prompt)] = llm.seen
    assert kind == "text" and STORE_CREDIT in prompt and "5 to 7 business days" in prompt
    assert f"\n\n{REFUND}\n\n" in proposal["text"]  # supported: as the model wrote it
    assert f"{UNSUPPORTED} {INVENTED}" in proposal["text"]
    assert proposal["unsupported"] == [INVENTED]
    assert "billing/refunds.md" in " ".join(proposal["pages"])


def test_with_nothing_near_in_the_kb_the_skeleton_stays_and_no_model_is_asked(
    settings, example_kb, tmp_path
):
    llm = ScriptedLLM(model="scripted").script(text=[INVENTED])
    with (
        drafting_pilot(settings, example_kb, tmp_path, llm, "model") as (app, _),
        TestClient(app) as client,
    ):
        proposal = client.post(
            "/v1/articles/draft", json={"questions": [QUESTION]}, headers=auth("lead")
        ).json()
    assert proposal["drafted_by"] == "skeleton" and llm.seen == []
    assert f"## {QUESTION}\n\n(the answer)" in proposal["text"]
    assert proposal["unsupported"] == [] and INVENTED not in proposal["text"]


def test_by_default_the_draft_is_the_skeleton_without_a_model_call(settings, example_kb, tmp_path):
    """The shipped roles (``auto`` with the local model): no role answers with the model, so
    drafting does not call it either, even on a subject the knowledge base covers."""
    assert settings.llm.provider == "local"
    llm = ScriptedLLM(model="scripted").script(text=[MODEL_ARTICLE])
    with (
        drafting_pilot(settings, example_kb, tmp_path, llm, "auto") as (app, _),
        TestClient(app) as client,
    ):
        proposal = client.post(
            "/v1/articles/draft", json={"questions": [STORE_CREDIT]}, headers=auth("lead")
        ).json()
    assert proposal["drafted_by"] == "skeleton" and llm.seen == []
    assert f"## {STORE_CREDIT}\n\n(the answer)" in proposal["text"]


def test_a_model_that_fails_within_its_deadline_leaves_the_skeleton(settings, example_kb, tmp_path):
    """The draft's model call runs under a deadline (``turn_timeout_s``, as a turn's model
    calls do); a model that fails or runs out of time leaves the skeleton."""
    from agents.deadline import ModelServerError, time_left

    left: list[float] = []

    def failing(prompt: str) -> str:
        left.append(time_left())
        raise ModelServerError("model server scripted: ReadTimeout")

    llm = ScriptedLLM(model="scripted").script(text=[failing])
    with (
        drafting_pilot(settings, example_kb, tmp_path, llm, "model") as (app, _),
        TestClient(app) as client,
    ):
        proposal = client.post(
            "/v1/articles/draft", json={"questions": [STORE_CREDIT]}, headers=auth("lead")
        ).json()
    assert proposal["drafted_by"] == "skeleton" and len(llm.seen) == 1
    assert 0 < left[0] <= settings.turn_timeout_s


def test_a_draft_from_replies_keeps_only_what_answers_the_question(client):
    session, _ = ask(client, "c-5", "Do you offer a student discount?")
    client.post(f"/v1/sessions/{session}/handoff", json={"reason": "gap"}, headers=auth("backend"))
    assert client.post(f"/v1/handoffs/{session}/take", headers=auth("ana")).status_code == 200
    # what an agent sends after "Use this reply" and a line of their own, as played on the desk
    reply = (
        "Hi Maria,\n\nOnce a refund is approved, it reaches your card within 5 to 7 business "
        "days. [1]\n\nSources:\n[1] Refunds: https://help.clouddesk.example/billing/refunds\n\n"
        "About the student discount: we don't have one today, sorry.\n\nBest, Ana"
    )
    sent = client.post(
        f"/v1/sessions/{session}/agent-messages", json={"message": reply}, headers=auth("ana")
    )
    assert sent.status_code in (200, 201), sent.text
    proposal = client.post(
        "/v1/articles/draft",
        json={"questions": ["Do you offer a student discount?"]},
        headers=auth("lead"),
    ).json()
    assert proposal["drafted_by"] == "replies"
    body = proposal["text"].split("\n\n", 1)[1]
    assert body.strip() == "About the student discount: we don't have one today, sorry."
    assert [source["session_id"] for source in proposal["sources"]] == [session]


def test_an_articles_link_starts_with_the_configured_address_never_the_host_header(
    settings, example_kb, tmp_path
):
    """A publish request's ``Host`` header is the client's to write: the link customers
    are sent comes from ``pilot.public_url``."""
    configured = settings.model_copy(
        update={"pilot": settings.pilot.model_copy(update={"public_url": "https://help.acme.test"})}
    )
    with (
        pilot_over_own_store(configured, example_kb, tmp_path / "data", *KEYS, roles="evidence") as (
            app,
            _,
        ),
        TestClient(app) as client,
    ):
        client.post("/v1/articles", json=ACME_MARS, headers=auth("lead"))
        client.post("/v1/articles/mars-shipping/check", headers=auth("lead"))
        published = client.post(
            "/v1/articles/mars-shipping/publish",
            headers={**auth("lead"), "Host": "attacker.example", "X-Forwarded-Host": "evil.example"},
        ).json()
        assert published["url"] == "https://help.acme.test/help/articles/acme/mars-shipping"
        _, answered = ask(client, "c-1", MARS)
        assert [c["url"] for c in answered["citations"]] == [published["url"]]


def test_a_check_is_read_only_by_keys_that_reach_as_far_as_the_one_that_ran_it(client):
    """An internal-level lead checks a public article: its rows quote the internal runbook.
    A public-level and a customer-level lead of the same tenant list the article without a
    row of that check (``check_hidden``), cannot publish on it, and run their own."""
    goodwill = {
        "slug": "goodwill",
        "title": "Goodwill gestures",
        "text": "# Goodwill gestures\n\nWe sometimes send a small gift to say sorry.",
        "access": "public",
        "questions": ["Which reason code do I use for a goodwill refund override?"],
    }
    assert client.post("/v1/articles", json=goodwill, headers=auth("senior-lead")).status_code == 201
    senior = client.post("/v1/articles/goodwill/check", headers=auth("senior-lead")).json()
    assert "internal/runbook-refund-override.md" in senior["check"]["rows"][0]["cited"]
    for lower in ("public-lead", "junior-lead"):
        listed = client.get("/v1/articles", headers=auth(lower))
        [record] = [a for a in listed.json() if a["slug"] == "goodwill"]
        assert record["check"] is None and record["check_hidden"], record
        assert "runbook" not in listed.text and "OVR-" not in listed.text
        refused = client.post("/v1/articles/goodwill/publish", headers=auth(lower))
        assert refused.status_code == 409 and fields_at_fault(refused) == ["check"]
        assert "run the check again with your key" in refused.json()["error"]["message"]
    # the senior lead still reads its own check; one a lower lead runs, both read
    [mine] = client.get("/v1/articles", headers=auth("senior-lead")).json()
    assert mine["check"]["rows"][0]["cited"] == senior["check"]["rows"][0]["cited"]
    own = client.post("/v1/articles/goodwill/check", headers=auth("junior-lead")).json()
    assert not own["check_hidden"] and "runbook" not in str(own["check"])
    [seen] = client.get("/v1/articles", headers=auth("senior-lead")).json()
    assert seen["check"]["by"] == "junior-lead"


def test_a_persons_reply_is_read_only_at_its_conversations_level(client):
    """An internal agent answers an internal customer quoting the refund runbook. A lead
    whose key reads public pages reads that reply withheld in the conversation, its
    drill-down and the draft; the internal lead's draft quotes it, carries its level, and
    cannot be saved or published below it."""
    question = "Which reason code do I use for a goodwill refund override?"
    runbook = "Use reason code OVR-9 for a goodwill refund override, and note the ticket."
    session, _ = ask(client, "staff-7", question, key="insider")
    client.post(f"/v1/sessions/{session}/handoff", json={"reason": "gap"}, headers=auth("insider"))
    assert client.post(f"/v1/handoffs/{session}/take", headers=auth("ben")).status_code == 200
    sent = client.post(
        f"/v1/sessions/{session}/agent-messages",
        json={"message": f"Hi Maria,\n\n{runbook}\n\nBest, Ben"},
        headers=auth("ben"),
    )
    assert sent.status_code == 201, sent.text
    for lower in ("public-lead", "junior-lead"):
        read = client.get(f"/v1/handoffs/{session}", headers=auth(lower))
        assert read.status_code == 200 and "OVR-9" not in read.text, read.text
        [reply] = [t for t in read.json()["turns"] if t.get("from") == "agent"]
        assert reply["answer"].startswith("[withheld: a person's reply")
        drill = client.get(f"/v1/reports/outcomes/{session}", headers=auth(lower))
        assert drill.status_code == 200 and "OVR-9" not in drill.text
        proposal = client.post("/v1/articles/draft", json={"questions": [question]}, headers=auth(lower))
        assert "OVR-9" not in proposal.text and proposal.json()["drafted_by"] != "replies"
    # the internal lead reads it, and its draft quotes it without greeting, sign-off or name
    assert "OVR-9" in client.get(f"/v1/handoffs/{session}", headers=auth("senior-lead")).text
    proposal = client.post(
        "/v1/articles/draft", json={"questions": [question]}, headers=auth("senior-lead")
    ).json()
    assert proposal["drafted_by"] == "replies" and runbook in proposal["text"], proposal
    assert "Maria" not in proposal["text"] and "Ben" not in proposal["text"]
    assert proposal["access"] == "internal"
    article = {
        "slug": "goodwill-override",
        "title": "Goodwill refund overrides",
        "text": proposal["text"],
        "access": "public",
        "questions": [question],
    }
    refused = client.post("/v1/articles", json=article, headers=auth("senior-lead"))
    assert refused.status_code == 422 and fields_at_fault(refused) == ["access"], refused.text
    assert "quotes a person's reply" in refused.json()["error"]["message"]
    kept = client.post(
        "/v1/articles", json={**article, "access": "internal"}, headers=auth("senior-lead")
    )
    assert kept.status_code == 201, kept.text

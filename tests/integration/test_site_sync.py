"""Syncing the knowledge base from a help-center website served on 127.0.0.1."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from config.sources import PathSlots, SourceSettings
from main import app
from storage.kb.knowledge_base import KnowledgeBase
from storage.kb.sync import sync_source
from storage.retrieval.request import RetrievalRequest
from tests.conftest import REPO
from tests.help_site import HelpSite, huge, redirect, slow, trickle

KB = REPO / "examples" / "kb"
PUBLIC_PAGES = 23  # examples/kb's Markdown pages outside /internal/


@pytest.fixture
def site():
    with HelpSite.from_folder(KB) as running:
        yield running


@pytest.fixture
def kb(settings, tmp_path):
    opened = KnowledgeBase.open(settings, tmp_path / "data")
    yield opened
    opened.close()


def source_of(site: HelpSite, path: str = "/sitemap.xml", **more) -> SourceSettings:
    return SourceSettings(
        kind="site",
        location=site.url(path),
        slots=more.pop("slots", [PathSlots(path="/sso/", tiers=["enterprise"])]),
        requests_per_second=1000,
        **more,
    )


def stored_pages(kb: KnowledgeBase) -> dict[str, dict]:
    return {k: r.payload for k, r in kb.stored_sources().items()}


def chunk_texts(kb: KnowledgeBase, url: str) -> str:
    hits = kb.store.scroll(kb.collection, None, fields=("source_id", "text"))
    return "\n".join(h.payload["text"] for h in hits if h.payload["source_id"] == url)


def test_a_first_sync_ingests_the_site_without_its_chrome_or_disallowed_pages(site, kb):
    report = sync_source(kb, source_of(site))
    assert report.complete, report.failures
    assert report.added == PUBLIC_PAGES and report.removed == 0
    pages = stored_pages(kb)
    assert len(pages) == PUBLIC_PAGES
    assert not any("/internal/" in p for p in site.requests)  # robots.txt: never requested
    refunds = site.url("/billing/refunds.html")
    text = chunk_texts(kb, refunds)
    assert "5 to 7 business days" in text
    for chrome in ("cookies", "Privacy policy", "Home"):
        assert chrome not in text, chrome
    saml = kb.store.scroll(kb.collection, None, fields=("source_id", "tiers", "url", "title"))
    [first] = [h.payload for h in saml if h.payload["source_id"] == site.url("/sso/saml-setup.html")][:1]
    assert first["tiers"] == ["enterprise"] and first["url"] == site.url("/sso/saml-setup.html")
    assert first["title"].startswith("Set up SAML single sign-on")


def test_a_resync_fetches_only_what_changed_and_prunes_what_is_gone(site, kb, settings, tmp_path):
    assert sync_source(kb, source_of(site)).complete
    site.served.clear()
    site.requests.clear()
    title, text = site.pages["/billing/refunds.html"]
    site.pages["/billing/refunds.html"] = (title, text.replace("5 to 7", "3 to 4"))
    site.pages["/billing/gift-cards.html"] = (
        "Gift cards",
        "# Gift cards\n\nGift cards can be redeemed under Settings > Billing > Redeem a gift card.",
    )
    del site.pages["/data/import.html"]
    report = sync_source(kb, source_of(site))
    assert report.complete, report.failures
    assert (report.added, report.changed, report.removed) == (1, 1, 1)
    assert report.unchanged == PUBLIC_PAGES - 2
    # every page asked once, conditionally; only the changed and the new one sent whole
    assert sorted(site.served) == ["/billing/gift-cards.html", "/billing/refunds.html"]
    assert report.requests == len(site.requests) == PUBLIC_PAGES + 2  # + robots.txt, sitemap
    pages = stored_pages(kb)
    assert site.url("/data/import.html") not in pages
    assert "3 to 4 business days" in chunk_texts(kb, site.url("/billing/refunds.html"))
    assert "5 to 7" not in chunk_texts(kb, site.url("/billing/refunds.html"))


def test_an_answer_cites_the_synced_page_and_its_new_text(site, kb, settings, tmp_path):
    from agents.build import build_runtime
    from agents.turn import run_turn
    from tasks.schemas import TurnRequest

    title, text = site.pages["/billing/refunds.html"]
    site.pages["/billing/refunds.html"] = (title, text.replace("5 to 7", "3 to 4"))
    assert sync_source(kb, source_of(site)).complete
    kb.close()
    runtime = build_runtime(settings, tmp_path / "data")
    try:
        result = run_turn(
            TurnRequest(session_id="s", message="How long does a refund take?", customer_id="c"),
            runtime,
        )
    finally:
        runtime.close()
    assert result.verdict == "answered"
    assert [c.source_id for c in result.citations] == [site.url("/billing/refunds.html")]
    assert "3 to 4 business days" in result.answer


def test_a_start_url_is_crawled_by_its_links_on_the_site_only(site, kb):
    site.pages["/billing/refunds.html"] = (
        "Refunds",
        "# Refunds\n\nRefunds take 5 to 7 business days. See https://evil.example.net/ too.",
    )
    report = sync_source(kb, source_of(site, "/"))
    assert report.complete, report.failures
    pages = stored_pages(kb)
    assert site.url("/billing/refunds.html") in pages and site.url("/") in pages
    assert all(p.startswith(site.url("/")) for p in pages)
    assert not any("/internal/" in p for p in site.requests)
    # a page no link reaches any more, and gone from the site, is pruned on the next crawl
    del site.pages["/data/import.html"]
    again = sync_source(kb, source_of(site, "/"))
    assert again.complete and again.removed == 1
    assert site.url("/data/import.html") not in stored_pages(kb)


@pytest.mark.parametrize(
    ("path", "trap", "why", "timeout_s"),
    [
        ("/missing.html", None, "HTTP 404", 30.0),
        # the one case where the deadline is the point: a busy machine may answer the other
        # pages slowly, so the deadline is far from theirs (milliseconds) and the trap's
        ("/slow.html", slow(5.0), "timed out", 2.0),
        ("/moved.html", redirect("http://evil.example.net/phish.html"), "redirected off the site", 30.0),
        ("/huge.html", huge(300_000), "over the size cap", 30.0),
    ],
)
def test_a_page_that_fails_is_named_and_nothing_is_pruned(site, kb, path, trap, why, timeout_s):
    assert sync_source(kb, source_of(site)).complete
    before = stored_pages(kb)
    if trap is None:
        site.listed_extra.append(path)
    else:
        site.add_trap(path, trap)
    del site.pages["/data/import.html"]  # gone, but the sync is incomplete: kept
    report = sync_source(kb, source_of(site, timeout_s=timeout_s, max_page_bytes=100_000))
    assert not report.complete
    assert len(report.failures) == 1, report.failures
    [(url, reason)] = report.failures
    assert url == site.url(path) and why in reason
    assert report.removed == 0 and stored_pages(kb).keys() == before.keys()


def test_a_sitemap_that_is_not_xml_fails_the_source_and_keeps_what_was_ingested(site, kb):
    assert sync_source(kb, source_of(site)).complete
    before = stored_pages(kb)
    site.sitemap_body = b"<html><body>Oops, an error page</body>"
    report = sync_source(kb, source_of(site))
    assert not report.complete
    [(where, why)] = report.failures
    assert where == site.url("/sitemap.xml") and "sitemap" in why
    assert stored_pages(kb).keys() == before.keys()


def run_cli(tmp_path: Path, *args: str, config: dict | None = None):
    command = ["--data-dir", str(tmp_path / "data")]
    if config is not None:
        path = tmp_path / "assistant.yaml"
        path.write_text(yaml.safe_dump(config))
        command += ["--config", str(path)]
    return CliRunner().invoke(app, [*command, *args])


def test_ingest_names_a_path_that_does_not_exist_and_exits_1(tmp_path):
    result = run_cli(tmp_path, "ingest", str(tmp_path / "nowhere"), str(KB / "billing"))
    assert result.exit_code == 1
    assert "nowhere" in result.output and "no such file or folder" in result.output


def test_ingest_of_an_unreachable_site_exits_1_naming_it(tmp_path):
    result = run_cli(tmp_path, "ingest", "http://127.0.0.1:9/sitemap.xml")
    assert result.exit_code == 1
    assert "127.0.0.1:9/robots.txt" in result.output and "not read whole" in result.output


def test_sync_runs_every_configured_source_and_reports_each(site, tmp_path):
    export = tmp_path / "articles.json"
    export.write_text((REPO / "examples" / "zendesk" / "articles.json").read_text())
    config = {
        "sources": [
            {
                "kind": "site",
                "location": site.url("/sitemap.xml"),
                "name": "help site",
                "requests_per_second": 1000,
            },
            {
                "kind": "zendesk",
                "location": str(export),
                "name": "guide",
                "segments": {"360000000002": {"access": "customer"}},
            },
        ]
    }
    result = run_cli(tmp_path, "sync", "--json", config=config)
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["source"], r["kind"], r["complete"]) for r in lines] == [
        ("help site", "site", True),
        ("guide", "zendesk", True),
    ]
    assert lines[0]["added"] == PUBLIC_PAGES and lines[1]["added"] == 4  # one is a draft
    again = [
        json.loads(line)
        for line in run_cli(tmp_path, "sync", "--json", config=config).stdout.splitlines()
    ]
    assert [(r["added"], r["changed"], r["removed"]) for r in again] == [(0, 0, 0), (0, 0, 0)]
    assert again[0]["unchanged"] == PUBLIC_PAGES


def test_sync_without_sources_says_so(tmp_path):
    result = run_cli(tmp_path, "sync", config={})
    assert result.exit_code == 2 and "no sources to sync" in result.output


def test_the_pilot_resyncs_its_sources_while_it_serves(site, settings, example_kb, tmp_path):
    import time

    from fastapi.testclient import TestClient

    from config.settings import ApiKey
    from service.app import create_app
    from service.auth import hash_key
    from storage.qdrant.edge_store import EdgeStore
    from tests.helpers import answering_llm, scripted_runtime, with_api_keys

    key = ApiKey(name="site", sha256=hash_key("customer-key"), slots={"access_level": "public"})
    source = source_of(site)
    keyed = with_api_keys(settings, key)
    configured = keyed.model_copy(
        update={
            "sources": [source],
            "pilot": keyed.pilot.model_copy(update={"sync_every_minutes": 0.01}),
        }
    )
    store = EdgeStore(tmp_path / "pilot")
    kb = KnowledgeBase(configured, store, example_kb.encoders)
    assert sync_source(kb, source).complete
    runtime = scripted_runtime(configured, kb, answering_llm(), memory_store=store)
    title, text = site.pages["/billing/refunds.html"]
    site.pages["/billing/refunds.html"] = (title, text.replace("5 to 7", "3 to 4"))
    headers = {"Authorization": "Bearer customer-key"}
    try:
        with TestClient(create_app(configured, tmp_path, runtime)) as client:
            found = ""
            for _ in range(40):  # the first round runs 0.6 s after start
                time.sleep(0.25)
                response = client.post(
                    "/v1/search", json={"query": "how long does a refund take"}, headers=headers
                )
                assert response.status_code == 200, response.text
                refunds = site.url("/billing/refunds.html")
                found = " ".join(
                    r["body"] for r in response.json()["search_results"] if r["url"] == refunds
                )
                if "3 to 4 business days" in found:
                    break
            assert "3 to 4 business days" in found and "5 to 7 business days" not in found
    finally:
        store.close()


RUNBOOK = "/internal/runbook-refund-override.html"  # says OVR-7; robots.txt disallows /internal/
INTERNAL_RULE = PathSlots(path="/internal/", access="internal")


DETOURS = ("public/..", ".", "a/b/../..", "%2E", "x/%2E%2E")


@st.composite
def spellings(draw: st.DrawFn, path: str = RUNBOOK) -> str:
    """Another spelling of ``path`` a server serves as the same page: unreserved characters
    percent-encoded (either case of hex), dot segments (``%2E`` dots too) before segments."""
    spelled = []
    for segment in path.strip("/").split("/"):
        if draw(st.booleans()):
            spelled.append(draw(st.sampled_from(DETOURS)))
        hex_case = draw(st.sampled_from("xX"))
        spelled.append("".join(f"%{ord(c):02{hex_case}}" if draw(st.booleans()) else c for c in segment))
    return "/" + "/".join(spelled)


def public_search_finds(kb: KnowledgeBase, settings, needle: str) -> bool:
    """Whether a search with public slots returns a passage with ``needle``."""
    from storage.retrieval.retriever import QdrantRetriever

    found = QdrantRetriever(kb=kb).search_queries(
        RetrievalRequest(
            ["refund override reason code OVR-7"], {"access_level": "public"}, threshold=0.0
        )
    )
    return any(needle in r.text for r in found.results)


SPELLING_SETTINGS = settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@SPELLING_SETTINGS
@given(path=spellings(), scheme=st.sampled_from(["http", "HTTP", "Http"]))
def test_any_spelling_of_an_internal_page_is_stored_as_internal(site, kb, settings, path, scheme):
    site.robots = "User-agent: *\nAllow: /\n"
    listed = site.url(path).replace("http", scheme, 1)
    site.sitemap_body = (
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{listed}</loc></url></urlset>"
    ).encode()
    report = sync_source(kb, source_of(site, slots=[INTERNAL_RULE]))
    assert report.complete, report.failures
    chunks = kb.store.scroll(kb.collection, None, fields=("source_id", "access", "text"))
    runbook = [c.payload for c in chunks if "OVR-7" in c.payload["text"]]
    assert runbook and all(c["access"] == "internal" for c in runbook), (path, runbook)
    assert {c["source_id"] for c in runbook} == {site.url(RUNBOOK)}  # one page, one spelling
    assert not public_search_finds(kb, settings, "OVR-7")


@SPELLING_SETTINGS
@given(path=spellings())
def test_no_spelling_or_redirect_reaches_a_page_robots_txt_disallows(site, kb, path):
    site.add_trap("/moved.html", redirect(site.url(path)), listed=True)
    site.listed_extra.append(path)
    site.requests.clear()
    report = sync_source(kb, source_of(site))
    assert report.complete, report.failures  # disallowed is not a failure
    assert not any(p.startswith("/internal/") for p in site.requests), site.requests
    assert site.url(RUNBOOK) not in stored_pages(kb)
    assert site.url("/moved.html") not in stored_pages(kb)
    site.listed_extra.clear()


def test_a_redirect_within_the_site_gets_the_slots_of_where_it_lands(site, kb):
    site.robots = "User-agent: *\nAllow: /\n"
    site.add_trap("/old-link.html", redirect(RUNBOOK))
    assert sync_source(kb, source_of(site, slots=[INTERNAL_RULE])).complete
    stored = kb.store.scroll(kb.collection, None, fields=("source_id", "access"))
    moved = [r.payload["access"] for r in stored if r.payload["source_id"] == site.url("/old-link.html")]
    assert moved and set(moved) == {"internal"}


TRICKLE_S = 20.0  # a page that sends one byte every quarter second for this long


@pytest.mark.serial
def test_a_page_that_trickles_is_cut_at_its_deadline(site, kb):
    site.add_trap("/trickle.html", trickle(seconds=TRICKLE_S, every_s=0.25), listed=False)
    site.sitemaps["/slow.xml"] = ["/trickle.html"]
    started = time.monotonic()
    report = sync_source(kb, source_of(site, "/slow.xml", timeout_s=1.0))
    took = time.monotonic() - started
    [(url, why)] = report.failures
    assert url == site.url("/trickle.html") and "timed out" in why
    assert took < 5.0, f"the sync took {took:.1f} s with a 1 s page deadline"


@pytest.mark.serial
def test_the_sync_command_ends_and_frees_the_store_at_the_page_deadline(site, tmp_path, settings):
    site.add_trap("/trickle.html", trickle(seconds=TRICKLE_S, every_s=0.25), listed=False)
    site.sitemaps["/slow.xml"] = ["/billing/refunds.html", "/trickle.html"]
    location = site.url("/slow.xml")
    config = {"sources": [{"kind": "site", "location": location, "timeout_s": 1}]}
    started = time.monotonic()
    result = run_cli(tmp_path, "sync", config=config)
    took = time.monotonic() - started
    assert result.exit_code == 1 and "timed out" in result.output, result.output
    assert took < TRICKLE_S / 2, f"main.py sync held the store {took:.1f} s with a 1 s deadline"
    reopened = KnowledgeBase.open(settings, tmp_path / "data")  # the store is free again
    try:
        assert list(reopened.stored_sources()) == [site.url("/billing/refunds.html")]
    finally:
        reopened.close()


def test_two_sources_on_one_site_never_prune_each_others_pages(site, kb):
    site.sitemaps["/billing.xml"] = [p for p in site.pages if p.startswith("/billing/")]
    site.sitemaps["/sso.xml"] = [p for p in site.pages if p.startswith("/sso/")]
    billing, sso = source_of(site, "/billing.xml"), source_of(site, "/sso.xml")
    for source in (billing, sso, billing, sso):
        report = sync_source(kb, source)
        assert report.complete and report.removed == 0, report
    pages = stored_pages(kb)
    assert set(site.sitemaps["/billing.xml"] + site.sitemaps["/sso.xml"]) == {
        url.removeprefix(site.url("")) for url in pages
    }
    # each prunes its own: a billing page gone from its sitemap goes, the SSO pages stay
    gone = site.sitemaps["/billing.xml"].pop()
    assert sync_source(kb, billing).removed == 1
    assert site.url(gone) not in stored_pages(kb)
    assert all(site.url(p) in stored_pages(kb) for p in site.sitemaps["/sso.xml"])


def test_pages_stored_before_sources_were_stamped_are_claimed_not_pruned(site, kb):
    """A store from before: two sources' pages on one site, no stamp of either."""
    site.sitemaps["/billing.xml"] = [p for p in site.pages if p.startswith("/billing/")]
    site.sitemaps["/sso.xml"] = [p for p in site.pages if p.startswith("/sso/")]
    billing, sso = source_of(site, "/billing.xml"), source_of(site, "/sso.xml")
    for source in (billing, sso):
        assert sync_source(kb, source).complete
    from storage.kb.documents import Document

    unstamped = [
        Document(source_id=url, title="t", text=chunk_texts(kb, url), url=url, origin=url)
        for url in stored_pages(kb)
    ]
    for doc in unstamped:
        kb.remove(doc.source_id)
    from storage.kb.ingest import IngestReport, ingest_documents

    ingest_documents(kb, unstamped, IngestReport())
    assert not any(p.get("sync_source") for p in stored_pages(kb).values())
    before = set(stored_pages(kb))
    assert sync_source(kb, billing).removed == 0  # the SSO pages are not billing's to prune
    assert set(stored_pages(kb)) == before
    assert sync_source(kb, sso).removed == 0
    owners = {p.get("sync_source") for p in stored_pages(kb).values()}
    assert owners == {site.url("/billing.xml"), site.url("/sso.xml")}

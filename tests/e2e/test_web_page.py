"""The pilot's chat page in real headless Chromium (Debian's) against a running server."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from tests.helpers import answering_llm, running_server, scripted_runtime, with_api_keys

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM) and os.environ.get("CI") != "true",
        reason="Debian chromium is not installed (CI installs it)",
    ),
]


@pytest.fixture
def server(settings, example_kb, tmp_path):
    from config.settings import ApiKey
    from service.app import create_app
    from service.auth import hash_key
    from storage.qdrant.edge_store import EdgeStore

    configured = with_api_keys(
        settings,
        ApiKey(
            name="web", sha256=hash_key("web-key"), slots={"access_level": "customer", "tier": "basic"}
        ),
    )
    memory_store = EdgeStore(tmp_path / "memory")
    runtime = scripted_runtime(configured, example_kb, answering_llm(), memory_store)
    with running_server(create_app(configured, tmp_path, runtime)) as (url, server):
        yield url, server, runtime
    memory_store.close()


def test_ask_see_a_cited_answer_rate_it_and_see_errors(server, tmp_path):
    from playwright.sync_api import sync_playwright

    url, running, runtime = server
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        page = browser.new_page()
        page.goto(url)
        page.get_by_label("Access key").fill("web-key")
        page.get_by_role("button", name="Start").click()
        page.get_by_label("Your question").wait_for(timeout=20_000)  # once the key opened a session
        page.evaluate("""window.seenProgress = [];
            new MutationObserver(() => {
              const shown = document.querySelector('li.progress');
              if (shown) window.seenProgress.push(shown.textContent);
            }).observe(document.getElementById('messages'),
                       {childList: true, subtree: true, characterData: true});""")
        question = page.get_by_label("Your question")
        question.fill("How long does a refund take?")
        question.press("Enter")  # keyboard only
        answer = page.locator("li.assistant").first
        answer.wait_for(timeout=60_000)
        assert "5 to 7 business days" in answer.inner_text()
        seen = page.evaluate("window.seenProgress")  # the steps streamed while waiting
        assert "searching the help articles…" in seen, seen
        assert page.locator("li.progress").count() == 0
        link = answer.get_by_role("link", name="Refunds")
        assert link.get_attribute("href").endswith("/billing/refunds")
        page.screenshot(path=str(tmp_path / "answer.png"))
        answer.get_by_role("button", name="Helpful", exact=True).click()
        page.get_by_text("Thanks for your feedback.").wait_for(timeout=10_000)
        session_id = page.evaluate("state.session")
        stored = runtime.memory.session_turns(
            __import__("storage.memory", fromlist=["Scope"]).Scope(f"anon-{session_id}"), session_id
        )
        assert stored and stored[0]["status"] == "done"
        from service.stores.pilot_store import PilotStore

        pilot = PilotStore(runtime.knowledge_base().store, runtime.knowledge_base().encoders)
        assert pilot.feedback("", session_id)[0]["rating"] == "up"

        question.fill("This is wrong again, I want to talk to a human")
        page.get_by_role("button", name="Send").click()
        page.locator("#handoff").wait_for(state="visible", timeout=60_000)

        running.should_exit = True
        time.sleep(1.5)
        question.fill("Are you there?")
        page.get_by_role("button", name="Send").click()
        error = page.get_by_role("alert")
        error.wait_for(state="visible", timeout=20_000)
        assert "cannot be reached" in error.inner_text()
        browser.close()


def test_a_javascript_link_in_a_citation_is_never_clickable(server):
    """Even if a service sent one (ingest already drops them), the page renders text only."""
    import json

    from playwright.sync_api import sync_playwright

    url, _running, _runtime = server
    hostile = {
        "session_id": "s",
        "turn_index": 0,
        "answer": "See the article.",
        "verdict": "answered",
        "handoff": False,
        "trace": {},
        "citations": [
            {
                "source_id": "a",
                "chunk_id": "a#0",
                "title": "Hostile",
                "url": "javascript:window.pwned=1",
                "snippet": "",
                "score": 1,
            },
            {
                "source_id": "b",
                "chunk_id": "b#0",
                "title": "Also hostile",
                "url": " JaVaScRiPt:window.pwned=2",
                "snippet": "",
                "score": 1,
            },
            {
                "source_id": "c",
                "chunk_id": "c#0",
                "title": "Fine",
                "url": "https://help.example.com/c",
                "snippet": "",
                "score": 1,
            },
        ],
    }
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"],
        )
        page = browser.new_page()
        response = page.goto(url)
        policy = response.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "default-src 'none'" in policy
        page.route(
            "**/v1/sessions/*/messages",
            lambda route: route.fulfill(
                status=200, content_type="application/json", body=json.dumps(hostile)
            ),
        )
        page.get_by_label("Access key").fill("web-key")
        page.get_by_role("button", name="Start").click()
        page.get_by_label("Your question").fill("Where is the guide?")
        page.get_by_role("button", name="Send").click()
        answer = page.locator("li.assistant").first
        answer.wait_for(timeout=30_000)
        links = answer.locator("ol.citations a")
        assert links.count() == 1
        assert links.first.get_attribute("href") == "https://help.example.com/c"
        answer.get_by_text("Hostile", exact=True).click()
        answer.get_by_text("Also hostile", exact=True).click()
        assert page.evaluate("window.pwned") is None
        browser.close()


def signed_in_chat(playwright, url):
    """Chromium on the web chat, signed in with the web key: the browser, the page and the
    question box, ready."""
    browser = playwright.chromium.launch(
        executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
    )
    page = browser.new_page()
    page.goto(url)
    page.get_by_label("Access key").fill("web-key")
    page.get_by_role("button", name="Start").click()
    question = page.get_by_label("Your question")
    question.wait_for(timeout=20_000)
    return browser, page, question


def test_every_reply_is_rated_and_goodbye_asks_the_closing_question(server):
    from playwright.sync_api import sync_playwright

    from service.stores.pilot_store import PilotStore

    url, _running, runtime = server
    with sync_playwright() as p:
        browser, page, question = signed_in_chat(p, url)
        prompt = page.get_by_role("group", name="Did we solve your problem today?")
        for n, text in enumerate(("Do you ship printed manuals to Mars?", "Thanks, bye!")):
            assert prompt.is_hidden()  # not before the customer says goodbye
            question.fill(text)
            question.press("Enter")
            reply = page.locator("li.assistant").nth(n)
            reply.wait_for(timeout=60_000)
            # whatever the reply (a refusal, a courtesy reply), it can be rated
            assert reply.get_by_role("button", name="Not helpful").is_visible(), reply.inner_text()
        page.locator("li.assistant").first.get_by_role("button", name="Not helpful").click()
        page.get_by_text("Thanks for your feedback.").wait_for(timeout=10_000)
        prompt.wait_for(state="visible", timeout=10_000)
        prompt.get_by_role("button", name="No", exact=True).click()
        # not solved: sorry, and a person offered (a next step, not a dead end)
        offer = page.locator("li.note", has_text="Sorry we did not solve it")
        offer.wait_for(timeout=10_000)
        assert offer.get_by_role("button", name="Talk to a person").is_visible()
        session_id = page.evaluate("state.session")
        browser.close()
    pilot = PilotStore(runtime.knowledge_base().store, runtime.knowledge_base().encoders)
    assert pilot.session("", session_id)["csat_solved"] is False
    assert [f["rating"] for f in pilot.feedback("", session_id)] == ["down"]


def test_a_closing_question_closed_unanswered_is_kept_for_the_report(server):
    """ "Not now" on the closing question hides it for good and is stored, so the lead's report
    can say how many customers were asked and how many answered."""
    from playwright.sync_api import sync_playwright

    from service.stores.pilot_store import PilotStore

    url, _running, runtime = server
    with sync_playwright() as p:
        browser, page, question = signed_in_chat(p, url)
        prompt = page.get_by_role("group", name="Did we solve your problem today?")
        for n, text in enumerate(("How long does a refund take?", "Thanks, bye!")):
            question.fill(text)
            question.press("Enter")
            page.locator("li.assistant").nth(n).wait_for(timeout=60_000)
        prompt.wait_for(state="visible", timeout=10_000)
        with page.expect_response(lambda r: r.url.endswith("/satisfaction/skip")) as skipped:
            prompt.get_by_role("button", name="Not now").click()
        assert skipped.value.status == 200, skipped.value.text()
        assert prompt.is_hidden()
        session_id = page.evaluate("state.session")
        browser.close()
    pilot = PilotStore(runtime.knowledge_base().store, runtime.knowledge_base().encoders)
    header = pilot.session("", session_id)
    assert header.get("csat_solved") is None and header["csat_skipped_at"] > 0

"""The embeddable widget in real headless Chromium, on a sample site page served from another
origin than the service's: on an allowed origin a visitor asks, sees a cited answer, rates
it, is handed off and reads a person's reply; on another origin no launcher shows; a
signed-in visitor's customer token names them once, and a replayed or forged one is refused.
The site's own styles never reach the widget (its shadow root)."""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import jwt
import pytest

from tests.e2e.test_agent_desk import ARGS
from tests.e2e.test_web_page import CHROMIUM
from tests.helpers import (
    acme_team,
    bearer,
    free_port,
    pilot_over_own_store,
    running_server,
    widget_key,
)

pytestmark = pytest.mark.integration
SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "widget" / "site.html"
IDENTITY_ENV = "ACME_WIDGET_IDENTITY_SECRET"
IDENTITY_SECRET = "identity-" + "q" * 40


class QuietFiles(SimpleHTTPRequestHandler):
    def log_message(self, *_args) -> None:
        pass


@contextlib.contextmanager
def site(folder: Path, port: int) -> Iterator[str]:
    """The team's own site: static files from ``folder`` on 127.0.0.1:``port``."""
    httpd = ThreadingHTTPServer(("127.0.0.1", port), partial(QuietFiles, directory=str(folder)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        httpd.shutdown()


def site_page(folder: Path, name: str, service: str, customer_token: str | None = None) -> str:
    """The sample page with the snippet pointed at ``service``, as the team would paste it."""
    html = SAMPLE.read_text(encoding="utf-8")
    html = html.replace("https://support.example.com", service).replace(
        "pk_live_REPLACE_ME", "pk_live_acme"
    )
    if customer_token:
        html = html.replace('data-key="', f'data-customer-token="{customer_token}" data-key="')
    (folder / name).write_text(html, encoding="utf-8")
    return name


def signed(customer: str, secret: str = IDENTITY_SECRET) -> str:
    now = int(time.time())
    claims = {"sub": customer, "iat": now, "exp": now + 300, "jti": uuid.uuid4().hex}
    return jwt.encode(claims, secret, algorithm="HS256")


@pytest.fixture
def deployment(settings, example_kb, tmp_path, monkeypatch):
    from service.widget_tokens import SESSION_SECRET_ENV

    monkeypatch.setenv(SESSION_SECRET_ENV, "session-" + "p" * 40)
    monkeypatch.setenv(IDENTITY_ENV, IDENTITY_SECRET)
    site_port, other_port = free_port(), free_port()
    widget = widget_key("site", "pk_live_acme", [f"http://127.0.0.1:{site_port}"], IDENTITY_ENV)
    folder = tmp_path / "site"
    folder.mkdir()
    with (
        pilot_over_own_store(
            settings, example_kb, tmp_path / "data", *acme_team(), widget, roles="evidence"
        ) as (app, runtime),
        running_server(app) as (service, _server),
        site(folder, site_port) as allowed,
        site(folder, other_port) as other,
    ):
        yield {"service": service, "site": allowed, "other": other, "folder": folder, "runtime": runtime}


def launch(p):
    return p.chromium.launch(executable_path=CHROMIUM, args=ARGS)


def open_widget(page):
    page.get_by_role("button", name="Chat with CloudDesk support").click()
    return page.get_by_role("dialog", name="CloudDesk support")


def widget_on(browser, url: str):
    """A new page at ``url`` with the widget opened: (page, the chat panel)."""
    page = browser.new_page()
    page.goto(url)
    return page, open_widget(page)


def refusal(browser, url: str) -> str:
    """What the widget says when it cannot start on the page at ``url``."""
    return refusal_on(browser.new_page(), url)


def refusal_on(page, url: str) -> str:
    """What the widget says when it cannot start on ``page`` at ``url``."""
    page.goto(url)
    alert = open_widget(page).get_by_role("alert")
    alert.wait_for(timeout=20_000)
    return alert.inner_text()


def within(panel, locator) -> bool:
    """Whether ``locator`` is shown whole inside the widget's ``panel`` (not below its edge)."""
    box, frame = locator.bounding_box(), panel.bounding_box()
    return frame["y"] <= box["y"] and box["y"] + box["height"] <= frame["y"] + frame["height"]


def test_a_visitor_on_the_teams_site_is_answered_rates_and_reaches_a_person(deployment):
    from playwright.sync_api import sync_playwright

    name = site_page(deployment["folder"], "index.html", deployment["service"])
    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        problems: list[str] = []
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.goto(f"{deployment['site']}/{name}")
        launcher = page.get_by_role("button", name="Chat with CloudDesk support")
        # the site styles its buttons hot pink; the shadow root keeps that off the launcher
        assert launcher.evaluate("b => getComputedStyle(b).backgroundColor") == "rgb(47, 111, 219)"
        chat = open_widget(page)
        question = chat.get_by_label("Your question")
        question.fill("How long does a refund take?")
        question.press("Enter")
        answer = chat.locator("li.assistant").first
        answer.wait_for(timeout=60_000)
        assert "5 to 7 business days" in answer.inner_text()
        assert (
            answer.get_by_role("link", name="Refunds").get_attribute("href").endswith("/billing/refunds")
        )
        keep = os.environ.get("WIDGET_SCREENSHOTS")  # a folder: a developer looks at them
        if keep:
            page.screenshot(path=str(Path(keep) / "widget-site.png"))
        answer.get_by_role("button", name="Helpful", exact=True).click()
        chat.get_by_text("Thanks for your feedback.").wait_for(timeout=10_000)

        question.fill("I want to talk to a person please")
        question.press("Enter")
        chat.locator("#handoff").wait_for(state="visible", timeout=60_000)
        with httpx.Client(base_url=deployment["service"], headers=bearer("ana"), timeout=30) as staff:
            waiting = staff.get("/v1/handoffs").json()["handoffs"]
            assert len(waiting) == 1
            session = waiting[0]["session"]["session_id"]
            assert staff.post(f"/v1/handoffs/{session}/take").status_code == 200
            replied = staff.post(
                f"/v1/sessions/{session}/agent-messages",
                json={"message": "Hi, Ana here. How can I help?"},
            )
            assert replied.status_code in (200, 201), replied.text
        chat.locator("li.agent").wait_for(timeout=20_000)
        assert "Ana here" in chat.locator("li.agent").inner_text()

        phone = browser.new_page(viewport={"width": 390, "height": 780})
        phone.goto(f"{deployment['site']}/{name}")
        open_widget(phone).get_by_label("Your question").wait_for(timeout=20_000)
        if keep:
            phone.screenshot(path=str(Path(keep) / "widget-phone.png"))
        browser.close()
        assert not problems, problems


def test_the_widget_does_not_start_on_a_site_its_key_is_not_for(deployment):
    from playwright.sync_api import sync_playwright

    name = site_page(deployment["folder"], "index.html", deployment["service"])
    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page()
        console: list[str] = []
        page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
        page.goto(f"{deployment['other']}/{name}")
        # no launcher that would open to "Chat is not enabled": the visitor sees no chat at
        # all, and the console says why and what to change
        page.wait_for_function("!document.querySelector('#supportcrew-widget')", timeout=20_000)
        assert page.get_by_role("button", name="Chat with CloudDesk support").count() == 0
        assert any(f"Add {deployment['other']} to the origins" in line for line in console), console
        assert any("the chat is not shown" in line for line in console), console
        keep = os.environ.get("WIDGET_SCREENSHOTS")
        if keep:
            page.screenshot(path=f"{keep}/widget-not-allowed-desktop.png")
        # the page's own script gets no further with the key: the service answers 403
        status = page.evaluate(
            """async (service) => {
                try {
                  const r = await fetch(service + "/v1/widget/sessions", {method: "POST",
                    headers: {"Authorization": "Bearer pk_live_acme",
                              "Content-Type": "application/json"},
                    body: "{}"});
                  return r.status;
                } catch (e) { return "blocked"; }
            }""",
            deployment["service"],
        )
        assert status == "blocked"  # no CORS grant: the browser never hands it the answer
        # on an allowed site with the service gone, the visitor is told to check the connection
        down = browser.new_page()
        down.route(f"{deployment['service']}/v1/**", lambda route: route.abort())
        down.route(f"{deployment['service']}/healthz", lambda route: route.abort())
        assert "cannot be reached" in refusal_on(down, f"{deployment['site']}/{name}")
        browser.close()
    direct = httpx.post(
        f"{deployment['service']}/v1/widget/sessions",
        json={},
        headers={"Authorization": "Bearer pk_live_acme", "Origin": deployment["other"]},
    )
    assert direct.status_code == 403


def test_a_signed_in_visitor_is_named_once_and_forged_or_replayed_tokens_fail(deployment):
    from playwright.sync_api import sync_playwright

    from storage.memory import Scope

    folder, service = deployment["folder"], deployment["service"]
    token = signed("cust-7")
    named = site_page(folder, "account.html", service, token)
    forged = site_page(
        folder, "forged.html", service, signed("cust-7", "not-the-site-secret-" + "z" * 30)
    )
    with sync_playwright() as p:
        browser = launch(p)
        _page, chat = widget_on(browser, f"{deployment['site']}/{named}")
        question = chat.get_by_label("Your question")
        question.fill("How do I export all my files?")
        question.press("Enter")
        chat.locator("li.assistant").first.wait_for(timeout=60_000)
        stored = deployment["runtime"].memory.export(Scope("cust-7", "acme"))
        assert any(stored.values()), "the turn is stored under the customer the site signed for"

        # the same page, token and all, loaded a second time; then a forged token
        assert "already opened a session" in refusal(browser, f"{deployment['site']}/{named}")
        assert "signature does not match" in refusal(browser, f"{deployment['site']}/{forged}")
        browser.close()


def test_a_visitor_asks_for_a_person_with_the_button_and_leaves_an_email(deployment):
    from playwright.sync_api import sync_playwright

    name = site_page(deployment["folder"], "index.html", deployment["service"])
    with sync_playwright() as p:
        browser = launch(p)
        problems: list[str] = []
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.goto(f"{deployment['site']}/{name}")
        chat = open_widget(page)
        chat.get_by_role("button", name="Talk to a person").click()
        chat.locator("#handoff").wait_for(state="visible", timeout=20_000)
        assert chat.get_by_role("button", name="Talk to a person").is_hidden()
        keep = os.environ.get("WIDGET_SCREENSHOTS")  # a folder: a developer looks at them
        question = chat.get_by_label("Your question")
        for later in (
            "It is about invoice 1234.",
            "It was charged twice, once on the 3rd and again on the 4th.",
            "Both times from the same card.",
            "Can you refund one of them?",
            "Are you there?",
        ):
            question.fill(later)
            question.press("Enter")
            chat.locator("li.user", has_text=later).wait_for()
            chat.locator("#send:enabled").wait_for()
        # the transcript scrolls; the banner, the email form and the question box stay in view
        assert within(chat, question) and within(chat, chat.get_by_role("button", name="Send"))
        assert within(chat, chat.locator("#handoff")) and within(chat, chat.locator("form.contact"))
        messages = chat.locator("#messages")
        assert messages.evaluate("m => m.scrollHeight > m.clientHeight")  # it does overflow
        if keep:
            page.screenshot(path=f"{keep}/widget-handoff-desktop.png")
        chat.get_by_label("Your email (optional)").fill("visitor@example.org")
        chat.get_by_role("button", name="Save email").click()
        chat.get_by_text("a person will answer you at visitor@example.org").wait_for(timeout=10_000)
        with httpx.Client(base_url=deployment["service"], headers=bearer("ana"), timeout=30) as staff:
            waiting = staff.get("/v1/handoffs").json()["handoffs"]
            assert [w["session"]["contact_email"] for w in waiting] == ["visitor@example.org"]
            session = waiting[0]["session"]["session_id"]
            assert staff.post(f"/v1/handoffs/{session}/take").status_code == 200
            reply = "Hi, Ana here.\n\n1. Open Billing.\n2. Choose Request refund."
            sent = staff.post(f"/v1/sessions/{session}/agent-messages", json={"message": reply})
            assert sent.status_code in (200, 201), sent.text
        shown = chat.locator("li.agent span.text")
        shown.wait_for(timeout=20_000)
        assert shown.inner_text() == reply  # a person's line breaks are kept
        assert shown.evaluate("s => getComputedStyle(s).whiteSpace") == "pre-wrap"
        if keep:
            page.screenshot(path=f"{keep}/widget-reply-desktop.png")
            phone = browser.new_page(viewport={"width": 390, "height": 780})
            phone.goto(f"{deployment['site']}/{name}")
            on_phone = open_widget(phone)
            on_phone.get_by_role("button", name="Talk to a person").click()
            on_phone.locator("#handoff").wait_for(state="visible", timeout=20_000)
            phone.screenshot(path=f"{keep}/widget-handoff-phone.png")
        browser.close()
        assert not problems, problems


def kept(page) -> dict:
    """What the widget keeps in the tab's sessionStorage: one conversation, nothing else."""
    import json

    stored = page.evaluate("Object.fromEntries(Object.entries(sessionStorage))")
    assert list(stored) == ["supportcrew-widget:" + page.evaluate("window.__service") + ":pk_live_acme"]
    value = json.loads(next(iter(stored.values())))
    assert set(value) == {"session_id", "token", "expires_at", "open"}
    return value


def test_the_conversation_survives_a_reload_and_a_resolve_starts_a_new_one(deployment):
    from playwright.sync_api import sync_playwright

    service = deployment["service"]
    name = site_page(deployment["folder"], "index.html", service)
    with sync_playwright() as p:
        browser = launch(p)
        problems: list[str] = []
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.add_init_script(f"window.__service = {service!r};")
        page.goto(f"{deployment['site']}/{name}")
        chat = open_widget(page)
        question = chat.get_by_label("Your question")
        question.fill("How long does a refund take?")
        question.press("Enter")
        answer = chat.locator("li.assistant").first
        answer.wait_for(timeout=60_000)
        source = answer.locator("ol.citations a").first
        cited = (source.inner_text(), source.get_attribute("href"))
        assert "refunds" in (cited[1] or "")
        # the newest reply's sources and rating buttons are scrolled into view with it
        question.fill("and how do I ask for it?")
        question.press("Enter")
        latest = chat.locator("li.assistant").nth(1)
        latest.locator(".feedback").wait_for(timeout=60_000)
        assert latest.locator(".feedback").evaluate(
            """(box) => box.getBoundingClientRect().bottom
                <= box.closest("ol").getBoundingClientRect().bottom + 1"""
        )
        first = kept(page)

        # the token is near its end when the page loads again: the widget renews it
        page.evaluate(
            """([name, value]) => sessionStorage.setItem(name, JSON.stringify(value))""",
            [f"supportcrew-widget:{service}:pk_live_acme", {**first, "expires_at": time.time() + 40}],
        )
        page.reload()
        chat = page.get_by_role("dialog", name="CloudDesk support")
        chat.locator("li.user").get_by_text("How long does a refund take?").wait_for(timeout=20_000)
        assert "5 to 7 business days" in chat.locator("li.assistant").first.inner_text()
        # the resumed answer links its source as it did before the reload
        resumed = chat.locator("li.assistant").first.locator("ol.citations a").first
        assert (resumed.inner_text(), resumed.get_attribute("href")) == cited
        page.wait_for_function(
            f"!Object.values(sessionStorage)[0].includes({first['token']!r})", timeout=20_000
        )
        renewed = kept(page)
        assert renewed["session_id"] == first["session_id"]
        assert renewed["expires_at"] > time.time() + 600

        chat.get_by_role("button", name="Talk to a person").click()
        chat.locator("#handoff").wait_for(state="visible", timeout=20_000)
        question.fill("It is order 1234.")
        question.press("Enter")
        waiting = "Thanks, a person from our team will reply here."
        chat.locator("li.note", has_text=waiting).wait_for(timeout=20_000)
        page.reload()  # the conversation still says it waits for a person, note and banner
        chat = page.get_by_role("dialog", name="CloudDesk support")
        chat.locator("li.note", has_text=waiting).wait_for(timeout=20_000)
        assert chat.locator("li.note").all_inner_texts() == ["Support: " + waiting]
        assert chat.locator("#handoff").is_visible()
        question = chat.get_by_label("Your question")
        session = renewed["session_id"]
        with httpx.Client(base_url=service, headers=bearer("ana"), timeout=30) as staff:
            assert staff.post(f"/v1/handoffs/{session}/take").status_code == 200
            replied = staff.post(
                f"/v1/sessions/{session}/agent-messages",
                json={
                    "message": "Hi, Ana here.\n\nWhich order is it? "
                    "See https://help.clouddesk.example/billing/refunds."
                },
            )
            assert replied.status_code in (200, 201), replied.text
            page.reload()  # the person's reply reaches a visitor who reloaded
            chat = page.get_by_role("dialog", name="CloudDesk support")
            reply = chat.locator("li.agent")
            reply.wait_for(timeout=20_000)
            assert "Ana here.\n\nWhich order is it?" in reply.inner_text()  # line breaks kept
            # a web address a person writes is a link (the sentence's full stop left out)
            link = reply.get_by_role("link", name="https://help.clouddesk.example/billing/refunds")
            assert link.get_attribute("href") == "https://help.clouddesk.example/billing/refunds"
            assert link.get_attribute("rel") == "noopener noreferrer"
            assert chat.locator("#handoff").is_visible()
            resolved = staff.post(f"/v1/sessions/{session}/resolve", json={"note": "order found"})
            assert resolved.status_code == 200, resolved.text
        chat.locator("#handoff").wait_for(state="hidden", timeout=20_000)
        chat.get_by_text("Your next message starts a new one").wait_for()

        question = chat.get_by_label("Your question")
        question.fill("How do I export all my files?")
        question.press("Enter")
        chat.locator("li.divider ~ li.assistant").wait_for(timeout=60_000)
        assert chat.locator(".banner.error").is_hidden()  # no 409: a new conversation took it
        assert kept(page)["session_id"] != session

        chat.get_by_role("button", name="New conversation").click()
        page.wait_for_function(
            "document.querySelector('#supportcrew-widget').shadowRoot"
            ".querySelectorAll('#messages li').length === 0"
        )
        assert kept(page)["session_id"] not in (session, renewed["session_id"])
        browser.close()
        assert not problems, problems


def test_a_visitor_rates_a_refusal_and_answers_the_closing_question(deployment):
    """Every reply can be rated ("I could not find this" too); after a person resolves the
    conversation, and when the visitor closes the panel after a reply, the widget asks "Did we
    solve your problem today?"; the lead's page counts the answers."""
    from playwright.sync_api import sync_playwright

    service = deployment["service"]
    name = site_page(deployment["folder"], "index.html", service)
    shots = Path(os.environ.get("WIDGET_SCREENSHOTS") or deployment["folder"])
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = launch(p)
        problems: list[str] = []
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.add_init_script(f"window.__service = {service!r};")
        page.goto(f"{deployment['site']}/{name}")
        chat = open_widget(page)
        question = chat.get_by_label("Your question")
        question.fill("Do you ship printed manuals to Mars?")
        question.press("Enter")
        refusal = chat.locator("li.assistant").first
        refusal.wait_for(timeout=60_000)
        assert refusal.get_attribute("data-verdict") == "idk", refusal.inner_text()
        refusal.get_by_role("button", name="Not helpful").click()
        refusal.get_by_text("Thanks for your feedback.").wait_for(timeout=10_000)
        prompt = chat.get_by_role("group", name="Did we solve your problem today?")
        assert prompt.is_hidden()  # not while the conversation goes on

        chat.get_by_role("button", name="Talk to a person").click()
        chat.locator("#handoff").wait_for(state="visible", timeout=20_000)
        # the button's hand-off line is a reply like any other: it is rated too
        line = chat.locator('li.assistant[data-verdict="handoff"]')
        line.get_by_role("button", name="Helpful", exact=True).click()
        line.get_by_text("Thanks for your feedback.").wait_for(timeout=10_000)
        session = kept(page)["session_id"]
        with httpx.Client(base_url=service, headers=bearer("ana"), timeout=30) as staff:
            assert staff.post(f"/v1/handoffs/{session}/take").status_code == 200
            replied = staff.post(
                f"/v1/sessions/{session}/agent-messages",
                json={"message": "We do not ship to Mars, but the PDF manual is free."},
            )
            assert replied.status_code in (200, 201), replied.text
            chat.locator("li.agent").wait_for(timeout=20_000)
            resolved = staff.post(f"/v1/sessions/{session}/resolve", json={"note": "PDF sent"})
            assert resolved.status_code == 200, resolved.text
        prompt.wait_for(state="visible", timeout=20_000)
        assert chat.locator(".feedback").count() == 0  # resolved: the closing question instead
        page.screenshot(path=str(shots / "widget-csat-desktop.png"))
        prompt.get_by_role("button", name="Yes", exact=True).click()
        chat.get_by_text("Thanks for telling us").wait_for(timeout=10_000)
        assert prompt.is_hidden()

        # a phone visitor gets an answer and closes the panel: the question comes first
        phone = browser.new_page(viewport={"width": 390, "height": 780})
        phone.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        phone.goto(f"{deployment['site']}/{name}")
        small = open_widget(phone)
        asked = small.get_by_label("Your question")
        asked.fill("How long does a refund take?")
        asked.press("Enter")
        small.locator("li.assistant").first.wait_for(timeout=60_000)
        small.get_by_role("button", name="Close the chat").click()
        closing = small.get_by_role("group", name="Did we solve your problem today?")
        closing.wait_for(state="visible", timeout=5_000)
        assert small.is_visible()  # the panel stays open for the one question
        phone.screenshot(path=str(shots / "widget-csat-phone.png"))
        closing.get_by_role("button", name="No", exact=True).click()
        # answered no: the panel stays on the offer of a person; Close again closes it
        small.locator("li.note", has_text="Sorry we did not solve it").wait_for(timeout=10_000)
        small.get_by_role("button", name="Close the chat").click()
        small.wait_for(state="hidden", timeout=10_000)

        lead = browser.new_page(viewport={"width": 1280, "height": 900})
        lead.goto(service + "/lead")
        lead.get_by_label("Lead key").fill("lead-key")
        lead.get_by_role("button", name="Open the dashboard").click()
        solved = lead.locator("#tiles .lead-tile", has_text="problem solved")
        solved.wait_for(timeout=20_000)
        assert "50%" in solved.inner_text() and "1 of 2 said yes" in solved.inner_text()
        browser.close()
    with httpx.Client(base_url=service, headers=bearer("lead"), timeout=30) as lead_api:
        report = lead_api.get("/v1/reports/outcomes").json()
    assert (report["totals"]["csat_answers"], report["totals"]["csat_yes"]) == (2, 1)
    rows = {c["session_id"]: c for c in report["conversations"]}
    assert rows[session]["label"] == "resolved_by_person" and rows[session]["csat"] == "yes"
    assert report["totals"]["feedback"] == 2 and report["totals"]["helpful"] == 1
    assert not problems, problems

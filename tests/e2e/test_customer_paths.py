"""What a customer reads is what happened, in real headless Chromium (issue 65): a hand-off
waits for a person until one takes it, then says who joined; leaving a waiting conversation
asks first and closes it as left; the web chat at ``/`` resumes after a reload as the widget
does; a goodbye gets a goodbye; a "No" to the closing question offers a person (and the
widget's panel stays open on that offer). Screenshots at 1280 and 390 px go to
``WIDGET_SCREENSHOTS`` when it names a folder."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_widget import deployment, kept, launch, open_widget, site_page
from tests.helpers import bearer

pytestmark = pytest.mark.integration
__all__ = ["deployment"]  # the widget's deployment: a site on an allowed origin, the service
WAITING = "Waiting for a person"
JOINED = "A person from our support team joined the conversation."


def shots(tmp_path: Path) -> Path:
    """Where this test's screenshots go: the developer's folder, else the test's own."""
    folder = Path(os.environ.get("WIDGET_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def ask(panel, text: str, nth: int):
    """``text`` sent in the chat ``panel``; the ``nth`` reply of the assistant, once shown."""
    question = panel.get_by_label("Your question")
    question.fill(text)
    question.press("Enter")
    reply = panel.locator("li.assistant").nth(nth)
    reply.wait_for(timeout=60_000)
    return reply


def watching(page, problems: list[str]):
    """``page`` with its console errors collected in ``problems``."""
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    return page


@contextmanager
def widget_opened(deployment) -> Iterator[tuple[Any, Any, Any, list[str], httpx.Client]]:
    """Chromium on the team's sample page on its allowed origin at 1280 px, the widget
    opened: (the browser, the page, the chat panel, console errors (checked to be none when
    the test is done), a client of the service for the staff's side)."""
    from playwright.sync_api import sync_playwright

    service = deployment["service"]
    name = site_page(deployment["folder"], "index.html", service)
    with sync_playwright() as p, httpx.Client(base_url=service, timeout=30) as api:
        browser = launch(p)
        problems: list[str] = []
        page = watching(browser.new_page(viewport={"width": 1280, "height": 800}), problems)
        page.add_init_script(f"window.__service = {service!r};")
        page.goto(f"{deployment['site']}/{name}")
        yield browser, page, open_widget(page), problems, api
        browser.close()
        assert not problems, problems


def test_a_handoff_waits_until_a_person_joins_and_leaving_it_asks_first(deployment, tmp_path):
    folder = shots(tmp_path)
    with widget_opened(deployment) as (_browser, page, chat, _problems, api):
        assert "shall I connect you" in ask(chat, "Do you ship to Antarctica?", 0).inner_text()
        chat.get_by_label("Your question").fill("yes")
        chat.get_by_label("Your question").press("Enter")
        banner = chat.locator("#handoff")
        banner.wait_for(state="visible", timeout=60_000)
        # nobody has taken it: it waits, it does not say a person is there
        assert banner.inner_text().startswith(WAITING), banner.inner_text()
        page.screenshot(path=str(folder / "widget-waiting-desktop.png"))
        session = kept(page)["session_id"]
        assert api.post(f"/v1/handoffs/{session}/take", headers=bearer("ana")).status_code == 200
        chat.locator("li.note", has_text=JOINED).wait_for(timeout=20_000)  # the widget polls
        assert "has joined this conversation" in banner.inner_text()
        page.screenshot(path=str(folder / "widget-joined-desktop.png"))

        # "New conversation" while a person is to reply: asked first; "Stay" keeps it all
        chat.get_by_role("button", name="New conversation").click()
        leave = chat.get_by_role("group", name="Our support team has not finished")
        leave.wait_for(state="visible")
        page.screenshot(path=str(folder / "widget-leave-desktop.png"))
        leave.get_by_role("button", name="Stay").click()
        assert leave.is_hidden() and chat.locator("li.note", has_text=JOINED).is_visible()
        waiting = api.get("/v1/handoffs", headers=bearer("ana")).json()["handoffs"]
        assert [row["session"]["session_id"] for row in waiting] == [session]
        # leaving closes the hand-off as left by the customer: the queue no longer shows it
        chat.get_by_role("button", name="New conversation").click()
        leave.get_by_role("button", name="Leave and start a new conversation").click()
        page.wait_for_function(
            "document.querySelector('#supportcrew-widget').shadowRoot"
            ".querySelectorAll('#messages li').length === 0"
        )
        assert banner.is_hidden()
        assert kept(page)["session_id"] != session
        assert api.get("/v1/handoffs", headers=bearer("ana")).json()["total"] == 0
        outcome = api.get(f"/v1/reports/outcomes/{session}", headers=bearer("lead")).json()["outcome"]
        assert outcome["label"] == "handed_off", outcome
        assert outcome["why"] == "handed off; the customer left before a person replied", outcome
        # the new conversation is an ordinary one
        assert "5 to 7 business days" in ask(chat, "How long does a refund take?", 0).inner_text()


def test_the_web_chat_resumes_after_a_reload_like_the_widget(deployment, tmp_path):
    from playwright.sync_api import sync_playwright

    service = deployment["service"]
    folder = shots(tmp_path)
    with sync_playwright() as p:
        browser = launch(p)
        problems: list[str] = []
        page = watching(browser.new_page(viewport={"width": 1280, "height": 800}), problems)
        page.goto(service)
        page.get_by_label("Access key").fill("backend-key")
        page.get_by_role("button", name="Start").click()
        assert "5 to 7 business days" in ask(page, "How long does a refund take?", 0).inner_text()
        page.get_by_role("button", name="Talk to a person").click()
        page.locator("#handoff").wait_for(state="visible", timeout=20_000)
        session = page.evaluate("state.session")

        page.reload()  # the conversation is still there, hand-off and all
        answer = page.locator("li.assistant").first
        answer.wait_for(timeout=20_000)
        assert "5 to 7 business days" in answer.inner_text()
        assert (
            answer.get_by_role("link", name="Refunds").get_attribute("href").endswith("/billing/refunds")
        )
        assert page.locator("#handoff").inner_text().startswith(WAITING)
        assert page.get_by_label("Access key").is_hidden()
        assert page.evaluate("state.session") == session
        page.screenshot(path=str(folder / "web-chat-resumed-desktop.png"))
        with httpx.Client(base_url=service, headers=bearer("ana"), timeout=30) as staff:
            assert staff.post(f"/v1/handoffs/{session}/take").status_code == 200
            sent = staff.post(
                f"/v1/sessions/{session}/agent-messages",
                json={"message": "Hi, Ana here: see https://help.clouddesk.example/billing/refunds."},
            )
            assert sent.status_code == 201, sent.text
        reply = page.locator("li.agent")
        reply.wait_for(timeout=20_000)  # it polls for people's replies after the reload too
        address = "https://help.clouddesk.example/billing/refunds"
        assert reply.get_by_role("link", name=address).get_attribute("href") == address

        phone = watching(browser.new_page(viewport={"width": 390, "height": 780}), problems)
        phone.goto(service)
        phone.get_by_label("Access key").fill("backend-key")
        phone.get_by_role("button", name="Start").click()
        ask(phone, "How long does a refund take?", 0)
        phone.reload()
        phone.locator("li.assistant").first.wait_for(timeout=20_000)
        phone.screenshot(path=str(folder / "web-chat-resumed-phone.png"), full_page=True)
        browser.close()
        assert not problems, problems


def test_a_goodbye_gets_a_goodbye_and_a_no_to_the_closing_question_offers_a_person(deployment, tmp_path):
    folder = shots(tmp_path)
    with widget_opened(deployment) as (browser, page, chat, problems, api):
        ask(chat, "How long does a refund take?", 0)
        goodbye = ask(chat, "bye", 1)
        assert "Goodbye" in goodbye.inner_text() and "Happy to help" not in goodbye.inner_text()
        closing = chat.get_by_role("group", name="Did we solve your problem today?")
        closing.wait_for(state="visible", timeout=10_000)  # a goodbye after a reply asks it
        closing.get_by_role("button", name="No", exact=True).click()
        offer = chat.locator("li.note", has_text="Sorry we did not solve it")
        offer.wait_for(timeout=10_000)
        page.screenshot(path=str(folder / "widget-not-solved-desktop.png"))
        offer.get_by_role("button", name="Talk to a person").click()
        banner = chat.locator("#handoff")
        banner.wait_for(state="visible", timeout=20_000)
        assert banner.inner_text().startswith(WAITING)
        session = kept(page)["session_id"]
        [row] = api.get("/v1/handoffs", headers=bearer("ana")).json()["handoffs"]
        assert row["session"]["session_id"] == session
        assert row["problem"] == "How long does a refund take?"
        assert row["why"] == "the customer said the problem was not solved"

        # a phone visitor closes the panel after an answer: "No" leaves it open on the offer
        phone = watching(browser.new_page(viewport={"width": 390, "height": 780}), problems)
        phone.goto(page.url)
        small = open_widget(phone)
        ask(small, "How long does a refund take?", 0)
        small.get_by_role("button", name="Close the chat").click()
        asked = small.get_by_role("group", name="Did we solve your problem today?")
        asked.wait_for(state="visible", timeout=5_000)
        asked.get_by_role("button", name="No", exact=True).click()
        offered = small.locator("li.note", has_text="Sorry we did not solve it")
        offered.wait_for(timeout=10_000)
        phone.wait_for_timeout(2_000)  # a "yes" closes the panel after 1.5 s; a "no" does not
        assert small.is_visible() and offered.get_by_role("button", name="Talk to a person").is_visible()
        phone.screenshot(path=str(folder / "widget-not-solved-phone.png"))
        small.get_by_role("button", name="Close the chat").click()  # Close again closes
        small.wait_for(state="hidden", timeout=5_000)

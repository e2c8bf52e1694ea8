"""What an agent reads on the desk is what happened, in real headless Chromium (issue 65): the
queue row and the suggested reply come from the question that led to the hand-off (not the
"yes" to the offer, not an earlier question), an email alone is no unanswered message, two
customers' rows differ; the customer's marks and closing answer stand beside the transcript,
sources are titles linking to their pages; closing a conversation nobody replied in is
"closed without reply" and its customer is not told it was resolved. Screenshots at 1280 and
390 px go to ``DESK_SCREENSHOTS`` when it names a folder."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_agent_desk import ARGS, open_desk
from tests.e2e.test_web_page import CHROMIUM
from tests.helpers import bearer, running_server

pytestmark = pytest.mark.integration


@pytest.fixture
def team(settings, example_kb, tmp_path):
    """A pilot over its own store, every role on the evidence path (as shipped), tenant acme:
    a public web key (``pub``), a signed-in customers' key (``web``), an agent who reads what
    customers read (``ana``) and a lead (``lead``: internal, every plan)."""
    from config.settings import ApiKey
    from service.auth import hash_key
    from tests.helpers import pilot_over_own_store

    def key(name: str, role: str = "customer", **slots: str) -> ApiKey:
        return ApiKey(name=name, sha256=hash_key(f"{name}-key"), tenant="acme", role=role, slots=slots)

    keys = [
        key("pub", access_level="public"),
        key("web", access_level="customer"),
        key("ana", "agent", access_level="customer"),
        key("lead", "admin", access_level="internal", tier="enterprise"),
    ]
    with (
        pilot_over_own_store(settings, example_kb, tmp_path / "data", *keys, roles="evidence") as (
            app,
            _,
        ),
        running_server(app) as (url, _server),
    ):
        yield url


def shots(tmp_path: Path, variable: str = "DESK_SCREENSHOTS") -> Path:
    """Where a test's screenshots go: the developer's folder (``variable``), else its own."""
    folder = Path(os.environ.get(variable) or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def web_chat(browser, server: str, key: str, problems: list[str], width: int = 1280):
    """The web chat at ``/`` opened with ``key``: (the page, its question box)."""
    page = browser.new_page(viewport={"width": width, "height": 800})
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.goto(server)
    page.get_by_label("Access key").fill(key)
    page.get_by_role("button", name="Start").click()
    question = page.get_by_label("Your question")
    question.wait_for(timeout=20_000)
    return page, question


def say(page, question, text: str, nth: int | None = None):
    """``text`` sent; with ``nth``, the assistant's ``nth`` reply once shown."""
    question.fill(text)
    question.press("Enter")
    if nth is None:
        page.locator("li.user", has_text=text).wait_for(timeout=20_000)
        page.locator("#send:enabled").wait_for(timeout=60_000)
        return None
    reply = page.locator("li.assistant").nth(nth)
    reply.wait_for(timeout=60_000)
    return reply


def test_the_queue_and_the_suggestion_come_from_the_question_behind_the_handoff(team, tmp_path):
    from playwright.sync_api import sync_playwright

    folder = shots(tmp_path)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        problems: list[str] = []
        # a public visitor whose pages do not answer: "yes" to the offer, then only an email
        first, question = web_chat(browser, team, "pub-key", problems)
        assert (
            "shall I connect you"
            in say(first, question, "How do I export all my files?", 0).inner_text()
        )
        say(first, question, "yes")
        first.locator("#handoff").wait_for(state="visible", timeout=60_000)
        say(first, question, "you can reach me at jo@example.com")
        first.get_by_text("a person will answer you at jo@example.com").wait_for()
        # another, answered twice, who then asks for a person with the button
        second, question = web_chat(browser, team, "pub-key", problems)
        say(second, question, "How do I reset my password?", 0)
        late = "My refund has not arrived after two weeks."
        # answered or offered a page (the page choice's miss is a strict xfail in
        # tests/integration/test_what_happened.py); then the button
        assert say(second, question, late, 1).get_attribute("data-verdict") in ("answered", "suggest")
        second.get_by_role("button", name="Talk to a person").click()
        second.locator("#handoff").wait_for(state="visible", timeout=20_000)

        agent = open_desk(browser.new_page(viewport={"width": 1280, "height": 900}), team, "ana-key")
        agent.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        rows = agent.locator("#queue button.row")
        rows.nth(1).wait_for()
        offered, button = rows.nth(0).inner_text(), rows.nth(1).inner_text()
        assert ": “How do I export all my files?”" in offered, offered
        assert "Handed off: accepted the offer of a person" in offered, offered
        assert "unanswered" not in offered, offered  # an email alone waits for no answer
        assert "Email: jo@example.com" in offered, offered
        assert f": “{late}”" in button, button  # not the earlier "How do I reset my password?"
        assert "reset my password" not in button, button
        # two anonymous visitors' rows differ in more than six letters of an id
        for text in (offered, button):
            assert "(handed off at " in text, text
        assert "Latest: “you can reach me at jo@example.com”" in offered, offered
        agent.screenshot(path=str(folder / "desk-queue-desktop.png"), full_page=True)

        # the suggestion answers the question behind the "yes", under the agent's own reach
        rows.nth(0).click()
        suggestion = agent.locator("#suggestion")
        suggestion.wait_for(state="visible", timeout=60_000)
        assert (
            agent.locator("#suggestion-for")
            .inner_text()
            .startswith("To: “How do I export all my files?”")
        )
        source = agent.locator("#suggestion-sources").get_by_role("link", name="Export your data")
        assert source.get_attribute("href") == "https://help.clouddesk.example/data/export"
        agent.screenshot(path=str(folder / "desk-suggestion-desktop.png"), full_page=True)
        phone = open_desk(browser.new_page(viewport={"width": 390, "height": 844}), team, "ana-key")
        phone.locator("#queue button.row").nth(1).wait_for()
        phone.screenshot(path=str(folder / "desk-queue-phone.png"), full_page=True)
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
        browser.close()
        assert not problems, problems


def test_the_desk_shows_marks_closing_answer_and_sources_and_closes_without_reply(team, tmp_path):
    from playwright.sync_api import sync_playwright

    folder = shots(tmp_path)
    with sync_playwright() as p, httpx.Client(base_url=team, timeout=30) as api:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        problems: list[str] = []
        customer, question = web_chat(browser, team, "pub-key", problems)
        answer = say(customer, question, "How long does a refund take?", 0)
        answer.get_by_role("button", name="Helpful", exact=True).click()
        customer.get_by_text("Thanks for your feedback.").wait_for()
        say(customer, question, "Thanks, bye!", 1)
        closing = customer.get_by_role("group", name="Did we solve your problem today?")
        closing.wait_for(state="visible", timeout=10_000)
        closing.get_by_role("button", name="No", exact=True).click()
        customer.locator("form.ask").get_by_role("button", name="Talk to a person").click()
        customer.locator("#handoff").wait_for(state="visible", timeout=20_000)
        session = customer.evaluate("state.session")

        agent = open_desk(browser.new_page(viewport={"width": 1280, "height": 900}), team, "ana-key")
        agent.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        agent.locator("#queue button.row").first.click()
        transcript = agent.locator("#transcript")
        rated = transcript.locator("li.assistant", has_text="5 to 7 business days")
        rated.wait_for()
        # the customer's mark beside the reply, its source a titled link, not a file path
        assert "— marked helpful" in rated.locator("strong").inner_text()
        link = rated.get_by_role("link", name="Refunds")
        assert link.get_attribute("href") == "https://help.clouddesk.example/billing/refunds"
        assert "billing/refunds.md" not in transcript.inner_text()
        said = agent.locator("#conversation-closing")
        assert said.inner_text().startswith("The customer said no to “Did we solve your problem today?”")
        # nobody took it or replied: closing it is not resolving it
        resolve = agent.locator("#resolve-button")
        assert resolve.inner_text() == "Close without reply"
        assert agent.locator("#resolve-untouched").is_visible()
        agent.screenshot(path=str(folder / "desk-conversation-desktop.png"), full_page=True)
        phone = open_desk(browser.new_page(viewport={"width": 390, "height": 844}), team, "ana-key")
        phone.locator("#queue button.row").first.click()
        phone.locator("#conversation-closing").wait_for()
        phone.screenshot(path=str(folder / "desk-conversation-phone.png"), full_page=True)
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
        agent.get_by_label("Resolution note").fill("duplicate of another ticket")
        resolve.click()
        done = agent.locator("#desk-done")
        done.wait_for(state="visible")
        assert done.inner_text().startswith("Closed without reply: Customer anonymous visitor")

        # the customer reads that it was closed, not that it was resolved, and can go on
        ended = customer.locator(".banner.ended")
        ended.wait_for(state="visible", timeout=20_000)
        assert ended.inner_text().startswith("Our support team closed this conversation without a reply")
        assert "resolved" not in ended.inner_text()
        assert customer.locator("form.ask").get_by_role("button", name="Talk to a person").is_visible()
        customer.screenshot(path=str(folder / "web-chat-closed-without-reply.png"))
        outcome = api.get(f"/v1/reports/outcomes/{session}", headers=bearer("lead")).json()["outcome"]
        assert (outcome["label"], outcome["why"]) == (
            "handed_off",
            "handed off, then closed by ana without a reply",
        )
        browser.close()
        assert not problems, problems

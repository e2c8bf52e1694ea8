"""The README stays one sitting long and every relative link in it and in docs/ resolves to a
file inside the repository (a clone has no ../shared)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
TOPICS = ("architecture", "answering", "pilot", "operations", "evaluation")


def relative_links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t) and not t.startswith("#")]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves_inside_the_repository(page):
    for target in relative_links(page):
        resolved = (page.parent / target.split("#", 1)[0]).resolve()
        assert resolved.is_relative_to(REPO), f"{page.name}: {target} leaves the repository"
        assert resolved.exists(), f"{page.name}: {target} does not exist"


def test_the_readme_is_short_and_links_every_topic_page():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    for topic in TOPICS:
        assert (REPO / "docs" / f"{topic}.md").exists(), topic
        assert f"(docs/{topic}.md)" in readme, topic


def test_a_link_out_of_the_repository_is_caught(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("See [the design](../shared/DESIGN.md) and [ok](https://example.com).")
    assert relative_links(page) == ["../shared/DESIGN.md"]

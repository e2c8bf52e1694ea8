"""The sources of the knowledge base: their settings, a Zendesk export, a sitemap."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from config.settings import ConfigError, load_settings
from config.sources import SourceSettings
from storage.kb.documents import DocumentError
from storage.kb.sources.site import SiteError, sitemap_urls
from storage.kb.sources.zendesk import body_markdown, read_export
from tests.conftest import REPO

EXPORT = REPO / "examples" / "zendesk" / "articles.json"
MAPPED = SourceSettings(
    kind="zendesk",
    location=str(EXPORT),
    segments={"360000000002": {"access": "customer"}},
    labels={"enterprise": {"tiers": ["enterprise"]}},
)


def test_an_export_gives_its_published_articles_with_their_slots_and_urls():
    documents, skipped = read_export(EXPORT, MAPPED)
    assert skipped == []
    by_title = {d.title: d for d in documents}
    assert "New pricing for 2027 (draft)" not in by_title  # drafts stay out
    assert len(documents) == 4
    public = by_title["Change the billing address on your invoices"]
    assert public.metadata == {"language": "en"}  # no segment: everyone
    assert public.source_id == public.url and public.url.startswith("https://clouddesk.zendesk.com/")
    assert public.text.startswith("## Billing address\n\nOpen Settings > Billing > Address")
    assert by_title["Download a full export of your workspace"].metadata["access"] == "customer"
    assert by_title["Audit log retention on Enterprise"].metadata["tiers"] == ["enterprise"]
    agents_only = by_title["Escalating a billing dispute (agents)"]
    assert agents_only.metadata["access"] == "internal"  # a segment nobody mapped: not public
    assert "360000000099" in agents_only.warnings[0]
    assert "under 500 EUR | team lead" in agents_only.text


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON"),
        ('{"sections": []}', "not a Zendesk articles export"),
        ("[1, 2]", "not a Zendesk articles export"),
    ],
)
def test_a_file_that_is_not_an_export_is_named(tmp_path, content, message):
    path = tmp_path / "export.json"
    path.write_text(content)
    with pytest.raises(DocumentError, match=message):
        read_export(path, MAPPED)


def test_a_bad_article_is_skipped_by_name_and_the_others_land(tmp_path):
    articles = json.loads(EXPORT.read_text())["articles"]
    articles[0]["html_url"] = "javascript:alert(1)"
    articles[1]["body"] = "<p> </p>"
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"articles": articles}))
    documents, skipped = read_export(path, MAPPED)
    assert len(documents) == 2
    assert [why for _, why in skipped] == ["no http(s) html_url to cite", "empty body"]
    assert "360010000001" in skipped[0][0]


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=400))
def test_any_body_becomes_text_without_raising(body):
    assert isinstance(body_markdown(body), str)


SITE = {"kind": "site", "location": "https://h.example/"}


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({"kind": "site", "location": "examples/kb"}, r"http\(s\) URL"),
        ({"kind": "site", "location": "ftp://help.example.com/"}, r"http\(s\) URL"),
        ({"kind": "zendesk", "location": "https://x.zendesk.com/e.json"}, "a path, not a URL"),
        ({"kind": "folder", "location": "kb", "slots": [{"path": "/a/"}]}, "apply to a site"),
        ({**SITE, "slots": [{"path": "a/"}]}, "starts with '/'"),
        ({**SITE, "labels": {"x": {}}}, "zendesk export"),
        ({**SITE, "slots": [{"path": "/a/", "access": "secret"}]}, "access"),
        ({"kind": "wiki", "location": "x"}, "kind"),
        ({**SITE, "concurrency": 0}, "concurrency"),
        ({**SITE, "surprise": 1}, "surprise"),
    ],
)
def test_a_malformed_source_is_refused_naming_what_is_wrong(source, message):
    with pytest.raises(ValidationError, match=message):
        SourceSettings.model_validate(source)


def test_a_malformed_source_in_the_file_names_its_key(tmp_path):
    path = tmp_path / "assistant.yaml"
    path.write_text("sources:\n  - {kind: site, location: https://h.example/, max_pages: 0}\n")
    with pytest.raises(ConfigError, match=r"sources\.0\.max_pages"):
        load_settings(path)


def test_a_sitemap_index_and_a_non_sitemap_are_told_apart():
    index = (
        b'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<sitemap><loc>https://h.example/a.xml</loc></sitemap></sitemapindex>"
    )
    assert sitemap_urls(index, "x") == ([], ["https://h.example/a.xml"])
    with pytest.raises(SiteError, match="not a sitemap"):
        sitemap_urls(b"<html><body/></html>", "x")
    with pytest.raises(SiteError, match="not XML"):
        sitemap_urls(b"Oops", "x")
    # an entity is never expanded, nothing is fetched while parsing
    bomb = (
        b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY a "aaaaaaaaaa">'
        b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>&b;</loc></url></urlset>'
    )
    pages, _ = sitemap_urls(bomb, "x")
    assert all("aaaaaaaaaa" not in page for page in pages)

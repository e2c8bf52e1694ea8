"""Entities of the knowledge base (GraphRAG's local search, in small).

At ingest every chunk gets the entities it mentions (error codes, ids and settings in
backticks, bold UI names, acronyms such as SSO or SCIM, plan names) in its ``entities``
payload field: the entity → chunk mapping lives in Qdrant. Entities that share a chunk are
related. At query time, entities named in the query, the conversation or entity memory pull in
the chunks that mention them.

Usage::

    kb_entities("Error `SSO-104` on **Enforce SSO** for Enterprise")
    # ['enforce sso', 'enterprise', 'sso', 'sso-104']
    query_entities("what does sso-104 mean?", vocabulary)   # ['sso-104']
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from storage.kb.fact_kinds import ERROR_CODE, PLAN
from storage.kb.model_files import BM25_ASSETS

_BACKTICK = re.compile(r"`([^`\n]{2,40})`")
_BOLD = re.compile(r"\*\*([^*\n]{2,40})\*\*")
_ACRONYM = re.compile(r"\b[A-Z][A-Z0-9]{1,5}\b(?!-\d)")
_NOT_ENTITIES = frozenset(
    {
        "id",
        "ok",
        "pdf",
        "url",
        "ui",
        "us",
        "eu",
        "utc",
        "cet",
        "faq",
        "http",
        "https",
        "json",
        "xml",
        "zip",
        "a",
        "i",
    }
)
# an acronym that is also an everyday word ("IT" team vs "it") is no entity in a question
_WORDS = frozenset((BM25_ASSETS / "english.txt").read_text(encoding="utf-8").split())


def _clean(term: str) -> str:
    return re.sub(r"\s+", " ", term.strip().strip(".,:;").lower())


def kb_entities(text: str) -> list[str]:
    """Entities one chunk mentions, lower-cased and sorted."""
    found: set[str] = set()
    for pattern in (ERROR_CODE, _BACKTICK, _BOLD, _ACRONYM, PLAN):
        for match in pattern.finditer(text):
            term = _clean(match.group(1) if match.groups() else match.group(0))
            if len(term) >= 2 and term not in _NOT_ENTITIES and term not in _WORDS:
                found.add(term)
    return sorted(found)


def query_entities(text: str, vocabulary: Iterable[str]) -> list[str]:
    """Knowledge-base entities named in ``text`` (case-insensitive, whole words)."""
    lowered = f" {text.lower()} "
    hits = []
    for term in vocabulary:
        if term in _WORDS or term not in lowered:  # a substring test first: most terms are absent
            continue
        if re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-])", lowered):
            hits.append(term)
    return sorted(hits)

"""A draft's title and file name come from the clearest question of the gap: short, one
sentence that asks something, cut at a word."""

from __future__ import annotations

from typing import Any

from service.articles import SLUG_CHARS, TITLE_CHARS, draft
from service.model_draft import ModelDraft

RAMBLING = (
    "Hello there, I hope you are all doing well today. Our research team is stationed at "
    "McMurdo for the whole season and we keep running out of spare parts for the field laptops, "
    "so I was wondering whether you could possibly ship hardware orders all the way down to "
    "Antarctica, and if you can, how long it would usually take and what it would cost us?"
)


class NoReplies:
    """A memory in which nobody replied to the gap's questions."""

    def tenant_turns(self, tenant: str, fields: Any) -> list[dict[str, Any]]:
        return []


def test_a_gap_drafts_a_short_title_from_its_clearest_question():
    proposal = draft(NoReplies(), "acme", [RAMBLING, "Thanks!", "Do you ship to Antarctica?"])
    assert proposal["title"] == "Do you ship to Antarctica?"
    assert proposal["slug"] == "do-you-ship-to-antarctica"
    assert proposal["text"].startswith("# Do you ship to Antarctica?\n")
    assert RAMBLING in proposal["text"]  # every question still heads its place for an answer


def test_a_rambling_question_alone_is_cut_at_a_word():
    proposal = draft(NoReplies(), "acme", [RAMBLING])
    title, slug = proposal["title"], proposal["slug"]
    assert len(title) <= TITLE_CHARS and len(slug) <= SLUG_CHARS, (title, slug)
    asked = RAMBLING[RAMBLING.index("Our research") :]  # the greeting's sentence left out
    assert title.endswith("…") and asked.startswith(title.removesuffix("…"))
    assert asked[len(title) - 1] == " "  # cut before a word, not inside one
    assert slug == "our-research-team-is-stationed-at-mcmurdo-for-the"


class OneReply:
    """A memory in which an agent replied to the gap's question (its encoders read which of
    the reply's sentences answer it)."""

    @property
    def encoders(self) -> Any:
        from config.settings import load_settings
        from storage.kb.embeddings import load_encoders

        return load_encoders(load_settings())

    def tenant_turns(self, tenant: str, fields: Any) -> list[dict[str, Any]]:
        return [
            {"session_id": "s1", "turn_index": 0, "user": "Do you ship to Mars?", "from": "customer"},
            {"session_id": "s1", "turn_index": 1, "answer": "We do not ship to Mars.", "from": "agent"},
        ]


def test_a_draft_says_who_wrote_it_and_asks_a_model_only_where_nobody_replied():
    asked: list[list[str]] = []

    def write(questions: Any) -> ModelDraft:
        asked.append(list(questions))
        return ModelDraft("Refunds take 5 days.\n\n(check: ...) Mars.", ["Mars."], ["refunds.md"])

    replied = draft(OneReply(), "acme", ["Do you ship to Mars?"], write)
    assert replied["drafted_by"] == "replies" and asked == []
    assert replied["text"] == "# Do you ship to Mars?\n\nWe do not ship to Mars.\n"
    modelled = draft(NoReplies(), "acme", ["Refund time?"], write)
    assert modelled["drafted_by"] == "model" and asked == [["Refund time?"]]
    assert modelled["unsupported"] == ["Mars."] and modelled["pages"] == ["refunds.md"]
    assert modelled["text"] == "# Refund time?\n\nRefunds take 5 days.\n\n(check: ...) Mars.\n"
    nothing = draft(NoReplies(), "acme", ["Refund time?"], lambda questions: None)
    assert nothing["drafted_by"] == "skeleton" and "## Refund time?" in nothing["text"]

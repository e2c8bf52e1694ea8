"""A draft's title and file name come from the clearest question of the gap: short, one
sentence that asks something, cut at a word."""

from __future__ import annotations

import functools
from typing import Any

from service.domain.model_draft import ModelDraft
from service.stores.articles import SLUG_CHARS, TITLE_CHARS, draft

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
    proposal = draft(NoReplies(), "acme", [RAMBLING, "Thanks!", "Do you ship to Antarctica?"], {})
    assert proposal.title == "Do you ship to Antarctica?"
    assert proposal.slug == "do-you-ship-to-antarctica"
    assert proposal.text.startswith("# Do you ship to Antarctica?\n")
    assert RAMBLING in proposal.text  # every question still heads its place for an answer


def test_a_rambling_question_alone_is_cut_at_a_word():
    proposal = draft(NoReplies(), "acme", [RAMBLING], {})
    title, slug = proposal.title, proposal.slug
    assert len(title) <= TITLE_CHARS and len(slug) <= SLUG_CHARS, (title, slug)
    asked = RAMBLING[RAMBLING.index("Our research") :]  # the greeting's sentence left out
    assert title.endswith("…") and asked.startswith(title.removesuffix("…"))
    assert asked[len(title) - 1] == " "  # cut before a word, not inside one
    assert slug == "our-research-team-is-stationed-at-mcmurdo-for-the"


@functools.cache
def encoders() -> Any:
    from config.settings import load_settings
    from storage.kb.embeddings import load_encoders

    return load_encoders(load_settings())


def one_reply(tmp_path: Any, reply: str = "We do not ship to Mars.", **slots: str) -> Any:
    """A memory in which an agent replied to the gap's question in a conversation under
    ``slots`` (its encoders read which of the reply's sentences answer it)."""
    from storage.memory import MemoryStore, Scope
    from storage.qdrant.edge_store import EdgeStore
    from storage.replies import PersonReplies

    memory = MemoryStore(EdgeStore(tmp_path / "memory"), encoders())
    scope = Scope("c-1", "acme")
    asked = {"user": "Do you ship to Mars? My name is Maria.", "slots": {**slots, "tenant": "acme"}}
    memory.add_turn(scope, "s1", 0, asked)
    memory.add_turn(scope, "s1", 1, {"user": "Do you ship to Mars?", "slots": asked["slots"]})
    PersonReplies(memory).add(scope, "s1", reply, agent="ana")
    return memory


def test_a_draft_says_who_wrote_it_and_asks_a_model_only_where_nobody_replied(tmp_path):
    asked: list[list[str]] = []

    def write(questions: Any) -> ModelDraft:
        asked.append(list(questions))
        return ModelDraft("Refunds take 5 days.\n\n(check: ...) Mars.", ["Mars."], ["refunds.md"])

    replied = draft(one_reply(tmp_path), "acme", ["Do you ship to Mars?"], {}, write)
    assert replied.drafted_by == "replies" and asked == []
    assert replied.text == "# Do you ship to Mars?\n\nWe do not ship to Mars.\n"
    modelled = draft(NoReplies(), "acme", ["Refund time?"], {}, write)
    assert modelled.drafted_by == "model" and asked == [["Refund time?"]]
    assert modelled.unsupported == ["Mars."] and modelled.pages == ["refunds.md"]
    assert modelled.text == "# Refund time?\n\nRefunds take 5 days.\n\n(check: ...) Mars.\n"
    nothing = draft(NoReplies(), "acme", ["Refund time?"], {}, lambda questions: None)
    assert nothing.drafted_by == "skeleton" and "## Refund time?" in nothing.text


def test_a_draft_leaves_out_greetings_sign_offs_and_the_customers_name(tmp_path):
    reply = (
        "Hi Maria,\n\nWe do not ship to Mars, Maria. Maria's parcels can go to the Moon "
        "instead.\n\nBest, Sam"
    )
    proposal = draft(one_reply(tmp_path, reply), "acme", ["Do you ship to Mars?"], {})
    body = proposal.text.split("\n\n", 1)[1]
    assert "Maria" not in body and "Sam" not in body and "Hi" not in body, body
    assert "We do not ship to Mars." in body and "Your parcels can go to the Moon" in body


def test_a_draft_quotes_only_replies_the_reader_may_read_and_carries_their_level(tmp_path):
    memory = one_reply(
        tmp_path, "We do not ship to Mars: use reason code OVR-9.", access_level="internal"
    )
    below = draft(memory, "acme", ["Do you ship to Mars?"], {"access_level": "public", "tenant": "acme"})
    assert below.drafted_by == "skeleton" and "OVR-9" not in below.text
    assert below.sources == [] and below.access == "public"
    at = draft(memory, "acme", ["Do you ship to Mars?"], {"access_level": "internal", "tenant": "acme"})
    assert at.drafted_by == "replies" and "OVR-9" in at.text
    assert at.access == "internal"

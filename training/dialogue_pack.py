"""The doc2dial training pack read as the answer decision's training data: real customer
turns in their conversations, with the page spans the agent's reply was grounded on, and
each turn's unanswerable twin built the way the evaluation packs built theirs.

``../shared/datasets/doc2dial-support-train`` (283 dialogues, 1,719 grounded customer turns,
158 pages; training data only: no evaluation dialogue or page is in it). What this module
makes of it, the same way for every script of ``training/``:

* **question turns** (``is_question``): a grounded customer turn is kept as a question when
  it opens its conversation (how customers start one: ``opener``), or when the agent's reply
  (every agent turn up to the next customer turn) asks nothing back (no "?"); in both cases
  the turn does not open with a yes/no word ("ok yes", "no, not me", "sure, ...") and has
  three words or more;
* each turn with the **conversation before it** (``history``: the earlier customer turns,
  each with the agent's reply and the page the dialogue is about as what it cited: the
  conversation the assistant has at that point when it answered from the right page);
* **page clusters** (``clusters``): two pages share a cluster when they share a title or
  either holds at least 15 % of the other's word 5-grams (the evaluation packs' rule; the
  pack's ``twins.jsonl`` was built from the same clusters, and ``check_twins`` proves it);
* **folds grouped by page cluster** (``folds``): the clusters of the dialogues' pages are
  dealt to ``FOLDS`` folds by a fixed seed, so every turn about one cluster is held out
  together and no cluster is in two folds;
* **unanswerable twins** (``twins.jsonl``): the same turn asked of ``kb/`` without the whole
  cluster of every page that holds its evidence (``PackTurn.leave_out``); pages of the same
  programme outside the cluster stay in (on-topic pages that do not answer). Only ``clean``
  twins are unanswerable examples: no page left holds 25 % of the evidence's 5-grams or one
  of its sentences of six words or more. A later turn's twin keeps its conversation, which
  then cites the page that reads closest to the dialogue's page among those left in
  (``nearest_page``): without its page, the assistant would have answered the earlier turns
  from the nearest one, and a follow-up that page does not answer is what a twin must teach
  (else every later turn's twin lacks the conversation's page, and "the conversation's page
  is a candidate" alone tells answerable from not).

Usage::

    turns = question_turns()
    turns[0].text, turns[0].history, turns[0].gold, turns[0].fold, turns[0].clean
    python -m training.dialogue_pack            # writes training/DOC2DIAL_PACK.md (the data card)
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import frontmatter

from evaluation.reporting import DATASETS, ROOT
from storage.text import WORD_CHARS
from tasks.schemas import HistoryTurn

PACK = DATASETS / "doc2dial-support-train"
CARD = ROOT / "training" / "DOC2DIAL_PACK.md"
FOLDS = 5
SEED = 13
MIN_WORDS = 3
GRAM = 5  # word n-grams that make two pages one cluster
CLUSTER_SHARE = 0.15  # ... when either holds this share of the other's
# a turn that opens with one of these answers what the agent asked ("ok yes", "Not
# applicable to me, no"); the agent's next reply grounds on the page, but the turn asks nothing
YES_NO = frozenset({"yes", "no", "ok", "okay", "yeah", "yep", "nope", "sure", "nah", "not"})
_WORD = re.compile(r"[a-z0-9']+")


@dataclass(frozen=True)
class PackTurn:
    """One customer question of the pack, in its conversation, with its twin."""

    dialogue: str  # "t001"
    turn: int  # its number in the dialogue
    text: str
    history: tuple[HistoryTurn, ...]  # the conversation before it, oldest first
    evidence: tuple[str, ...]  # the page text the agent's reply was grounded on
    gold: tuple[str, ...]  # every page that holds the evidence (``doc_ids``)
    page: str  # the page the dialogue is about
    domain: str
    fold: int
    cluster: str  # the cluster of the dialogue's page (what is held out together)
    leave_out: tuple[str, ...] = ()  # the pages its unanswerable twin removes
    clean: bool = False  # the twin passes the evaluation packs' leak filter
    opener: bool = False  # the dialogue's first customer turn
    test_like: bool = False  # an opener that also passes the test pack's candidate rule

    @property
    def key(self) -> str:
        return f"{self.dialogue}/{self.turn}"

    @property
    def first(self) -> bool:
        """Whether this is the conversation's first question (no customer turn before it)."""
        return not self.history


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def is_question(text: str, reply: str, opener: bool = False) -> bool:
    """The rule that keeps a grounded customer turn as a question (see the module's doc).

    >>> is_question("What if I served in the military?", "You may be eligible.")
    True
    >>> is_question("ok yes", "Our mission is to deliver services.")
    False
    >>> is_question("How do I apply?", "Are you a veteran?")
    False
    >>> is_question("How do I apply for benefits?", "Are you a veteran?", opener=True)
    True
    """
    said = words(text)
    return (opener or "?" not in reply) and len(said) >= MIN_WORDS and said[0] not in YES_NO


@cache
def dialogues(pack: Path = PACK) -> tuple[dict, ...]:
    with (pack / "dialogues.jsonl").open(encoding="utf-8") as lines:
        return tuple(json.loads(line) for line in lines if line.strip())


@cache
def twins(pack: Path = PACK) -> dict[tuple[str, int], dict]:
    """(dialogue, turn) -> its line of ``twins.jsonl``."""
    with (pack / "twins.jsonl").open(encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines if line.strip()]
    return {(r["dialogue"], r["turn"]): r for r in rows}


def _reply(turns: list[dict], index: int) -> str:
    """The agent's reply to turn ``index``: every agent turn up to the next customer turn."""
    reply = []
    for later in turns[index + 1 :]:
        if later["role"] == "user":
            break
        reply.append(later["text"])
    return " ".join(reply)


def _grams(text: str) -> frozenset[tuple[str, ...]]:
    said = WORD_CHARS.findall(text.lower())
    return frozenset(tuple(said[i : i + GRAM]) for i in range(len(said) - GRAM + 1))


@cache
def clusters(pack: Path = PACK) -> dict[str, str]:
    """Page -> its cluster (the alphabetically first page of it): pages that share a title or
    of which either holds ``CLUSTER_SHARE`` of the other's word ``GRAM``-grams, joined."""
    pages = {}
    for path in sorted((pack / "kb").glob("*.md")):
        post = frontmatter.load(path)
        pages[str(post["id"])] = (str(post["title"]), _grams(post.content))
    parent = {page: page for page in pages}

    def root(page: str) -> str:
        while parent[page] != page:
            parent[page] = parent[parent[page]]
            page = parent[page]
        return page

    names = sorted(pages)
    for index, one in enumerate(names):
        title, grams = pages[one]
        for other in names[index + 1 :]:
            other_title, other_grams = pages[other]
            shared = len(grams & other_grams)
            if (
                title == other_title
                or (grams and shared / len(grams) >= CLUSTER_SHARE)
                or (other_grams and shared / len(other_grams) >= CLUSTER_SHARE)
            ):
                parent[max(root(one), root(other))] = min(root(one), root(other))
    return {page: root(page) for page in names}


@cache
def _page_vectors(pack: Path = PACK) -> tuple[list[str], Any]:
    from sklearn.feature_extraction.text import TfidfVectorizer

    names = sorted(clusters(pack))
    texts = [frontmatter.load(pack / "kb" / f"{name}.md").content for name in names]
    return names, TfidfVectorizer(sublinear_tf=True, stop_words="english").fit_transform(texts)


def nearest_page(page: str, leaving: Sequence[str], pack: Path = PACK) -> str:
    """The page that reads closest to ``page`` (TF-IDF cosine) among those ``leaving`` leaves
    in: what an assistant without ``page`` would have cited in its place."""
    names, vectors = _page_vectors(pack)
    similarity = (vectors @ vectors[names.index(page)].T).toarray().ravel()
    out = set(leaving) | {page}
    return max((n for n in names if n not in out), key=lambda n: (similarity[names.index(n)], n))


def check_twins(pack: Path = PACK) -> None:
    """Refuse a pack whose twins did not leave out exactly the clusters of their pages."""
    cluster_of = clusters(pack)
    members: dict[str, set[str]] = {}
    for page, cluster in cluster_of.items():
        members.setdefault(cluster, set()).add(page)
    for (dialogue, turn), twin in twins(pack).items():
        expected = set().union(*(members[cluster_of[p]] for p in twin["doc_ids"]))
        if expected != set(twin["leave_out"]):
            raise ValueError(
                f"twins.jsonl {dialogue}/{turn}: leaves out {sorted(twin['leave_out'])}, "
                f"not the clusters of its pages {sorted(expected)}"
            )


@cache
def folds(pack: Path = PACK, count: int = FOLDS, seed: int = SEED) -> dict[str, int]:
    """Page -> fold: the clusters shuffled by ``seed`` and dealt, largest first, to the fold
    with the fewest question turns so far (folds of about equal size)."""
    cluster_of = clusters(pack)
    weight = Counter(cluster_of[d["doc_id"]] for d in dialogues(pack) for _ in _questions(d))
    order = sorted(set(cluster_of.values()))
    random.Random(seed).shuffle(order)
    order.sort(key=lambda c: -weight[c])  # stable: ties keep the seeded order
    load = [0] * count
    fold_of_cluster: dict[str, int] = {}
    for cluster in order:
        target = min(range(count), key=lambda f: load[f])
        load[target] += weight[cluster]
        fold_of_cluster[cluster] = target
    return {page: fold_of_cluster[cluster] for page, cluster in cluster_of.items()}


def _questions(dialogue: dict) -> list[int]:
    turns = dialogue["turns"]
    users = [i for i, t in enumerate(turns) if t["role"] == "user"]
    return [
        i
        for i in users
        if turns[i].get("evidence")
        and is_question(turns[i]["text"], _reply(turns, i), opener=i == users[0])
    ]


@cache
def question_turns(pack: Path = PACK) -> tuple[PackTurn, ...]:
    """Every question turn of the pack with its conversation, evidence, gold pages, fold and
    twin."""
    check_twins(pack)
    fold_of, cluster_of, twin_of = folds(pack), clusters(pack), twins(pack)
    kept: list[PackTurn] = []
    for dialogue in dialogues(pack):
        turns = dialogue["turns"]
        questions = set(_questions(dialogue))
        history: list[HistoryTurn] = []
        for index, turn in enumerate(turns):
            if turn["role"] != "user":
                continue
            text = " ".join(turn["text"].split())
            if index in questions:
                twin = twin_of[(dialogue["id"], turn["turn"])]
                kept.append(
                    PackTurn(
                        dialogue=dialogue["id"],
                        turn=turn["turn"],
                        text=text,
                        history=tuple(history),
                        evidence=tuple(turn["evidence"]),
                        gold=tuple(turn["doc_ids"]),
                        page=dialogue["doc_id"],
                        domain=dialogue["domain"],
                        fold=fold_of[dialogue["doc_id"]],
                        cluster=cluster_of[dialogue["doc_id"]],
                        leave_out=tuple(twin["leave_out"]),
                        clean=bool(twin["clean"]),
                        opener=bool(twin["opener"]),
                        test_like=bool(twin["test_like"]),
                    )
                )
            grounded = bool(turn.get("evidence"))
            history.append(
                HistoryTurn(
                    user=text,
                    answer=" ".join(_reply(turns, index).split()),
                    sources=[dialogue["doc_id"]] if grounded else [],
                )
            )
    return tuple(kept)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def card_lines(pack: Path = PACK) -> list[str]:
    """The data card: the rule, the counts and the hashes."""
    turns = question_turns(pack)
    grounded = sum(
        1 for d in dialogues(pack) for t in d["turns"] if t["role"] == "user" and t.get("evidence")
    )
    openers = sum(1 for t in twins(pack).values() if t["opener"])
    fold_of, cluster_of = folds(pack), clusters(pack)
    per_fold = Counter(t.fold for t in turns)
    clean_per_fold = Counter(t.fold for t in turns if t.clean)
    clusters_per_fold = Counter(fold_of[c] for c in set(cluster_of.values()))
    kept_openers = sum(t.opener for t in turns)
    several = sum(len(t.gold) > 1 for t in turns)
    return [
        "# Data card: the doc2dial training pack as the answer decision's training data",
        "",
        "Written by `python -m training.dialogue_pack` (`training/dialogue_pack.py`); do not edit.",
        "",
        f"- Source: `{pack.relative_to(DATASETS.parent.parent)}` (doc2dial v1.0.1, IBM, CC BY 3.0); "
        f"`dialogues.jsonl` sha256 `{_sha256(pack / 'dialogues.jsonl')}`, `twins.jsonl` sha256 "
        f"`{_sha256(pack / 'twins.jsonl')}`, {len(cluster_of)} pages in `kb/`.",
        "- Rule (`is_question`): a grounded customer turn is a question when it opens its "
        "conversation or the agent's reply (every agent turn up to the next customer turn) has "
        f"no '?'; and its first word is not one of {', '.join(sorted(YES_NO))}; and it has "
        f"{MIN_WORDS} words or more.",
        f"- Kept: {len(turns)} of {grounded} grounded customer turns: {kept_openers} openers "
        f"(of {openers}; {sum(t.test_like for t in turns)} test-like), "
        f"{len(turns) - kept_openers} later turns; {several} with more than one page holding "
        "the evidence.",
        "- Context: each turn carries the conversation before it (the earlier customer turns with "
        "the agent's reply, citing the dialogue's page when the turn was grounded).",
        f"- Page clusters: {len(set(cluster_of.values()))} (a shared title, or "
        f"{CLUSTER_SHARE:.0%} of the other's word {GRAM}-grams); `twins.jsonl` leaves out "
        "exactly these clusters (checked on load).",
        f"- Unanswerable twins: each turn asked of `kb/` without its `leave_out` pages (the "
        f"clusters of its `doc_ids`); clean twins only: {sum(t.clean for t in turns)} of "
        f"{len(turns)} kept turns ({sum(t.clean for t in turns if t.opener)} of the openers). "
        "A clean twin can still be partly answered by a page that stays (the evaluation packs' "
        "last step, a person rejecting those, is not repeated): the labels are slightly noisy.",
        f"- Folds: {FOLDS}, grouped by the cluster of the dialogue's page (no cluster in two "
        f"folds), seed {SEED}. Question turns per fold: "
        + ", ".join(f"{f}: {per_fold[f]} ({clean_per_fold[f]} clean twins)" for f in range(FOLDS))
        + "; clusters per fold: "
        + ", ".join(f"{f}: {clusters_per_fold[f]}" for f in range(FOLDS))
        + ".",
        "- Turns by domain: "
        + ", ".join(f"{d} {n}" for d, n in sorted(Counter(t.domain for t in turns).items()))
        + ".",
        "- Keys of the kept turns (dialogue/turn), sha256: "
        f"`{hashlib.sha256(' '.join(t.key for t in turns).encode()).hexdigest()}`.",
        "",
    ]


def main() -> None:
    lines = card_lines()
    CARD.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()

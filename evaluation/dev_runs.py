"""Runs over the dev sets that both the benches and the training scripts read: an answer set's
knowledge base opened, the product's turn over a pack (``main.py eval answers``), and the
kickoff conversation scripts scored turn by turn.

A scored turn with ``expect: {verdict: answered, cites: [...]}`` is right when it answers
citing one of those pages; ``verdict: idk`` or ``handoff`` is right when it does not answer.

Usage::

    opened = open_answer_set(ROOT / "examples" / "answer-sets" / "near-miss", data_dir)
    rows = product_rows(pack, data_dir, "crewai")
    turns = run_scripts("crewai", ["conversations.yaml"], data_dir)
    figures(turns)["answered_right"]                      # "68/71"
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.build import build_runtime
from config.settings import Settings, load_settings
from evaluation.answer_sets import AnswerSet, load_answer_set
from evaluation.answers import answer_set_settings, evaluate_answers, percentile
from evaluation.kickoff import load_script, run_script
from evaluation.reporting import DATASETS, ROOT
from storage.kb.ingest import ingest_paths
from storage.kb.knowledge_base import KnowledgeBase
from storage.retrieval.request import RetrievalRequest
from storage.retrieval.retriever import QdrantRetriever
from tasks.evidence import EvidenceScorer
from tasks.schemas import Passage

DEV_KB = DATASETS / "doc2dial-support-dev" / "kb"
SCRIPTS = ROOT / "examples" / "kickoff"
FIGURES = (
    "answered_right",
    "refused_right",
    "precision",
    "wrong_page_answers",
    "page_choice",
    "evidence_held",
    "turns",
    "p50_s",
    "p95_s",
)


@dataclass
class OpenedSet:
    answer_set: AnswerSet
    settings: Settings
    kb: KnowledgeBase
    retriever: QdrantRetriever
    scorer: EvidenceScorer

    def search(self, question: str, top_k: int | None = None) -> list[Passage]:
        request = RetrievalRequest([question], self.answer_set.slots, top_k=top_k)
        found = self.retriever.search_queries(request)
        return Passage.numbered(found.results)

    def close(self) -> None:
        self.kb.close()


def open_answer_set(directory: Path, data_dir: Path, settings: Settings | None = None) -> OpenedSet:
    """The answer set's knowledge base ingested (idempotently) into ``data_dir``."""
    settings = settings or load_settings()
    answer_set = load_answer_set(directory)
    kb = KnowledgeBase.open(settings, data_dir)
    ingest_paths(kb, [answer_set.kb], prune=True)
    scorer = EvidenceScorer(kb.encoders, settings.evidence, kb.term_statistics)
    return OpenedSet(answer_set, settings, kb, QdrantRetriever(kb=kb), scorer)


def product_rows(
    pack: Path, data_dir: Path, engine: str, settings: Settings | None = None
) -> list[dict[str, Any]]:
    """``main.py eval answers`` on ``pack``: every question as the first turn of a new
    conversation, through the product's turn on ``engine`` (``settings``: another
    configuration than the loaded one)."""
    settings = answer_set_settings(settings or load_settings(), pack.name, data_dir)
    opened = open_answer_set(pack, data_dir, settings)  # ingests, idempotently
    answer_set = opened.answer_set
    opened.close()
    runtime = build_runtime(settings, data_dir, engine=engine, process="sequential")
    try:
        return list(evaluate_answers(runtime, answer_set).rows)
    finally:
        runtime.close()


def scored(line: dict[str, Any]) -> dict[str, Any] | None:
    """One scored turn of a kickoff's output line, or None when the script expects nothing."""
    expect = line.get("expect") or {}
    want = expect.get("verdict")
    if want is None:
        return None
    cited = {c["source_id"] for c in line["citations"]}
    answered = line["verdict"] == "answered"
    right_page = answered and bool(cited & set(expect.get("cites", [])))
    gates = [s["detail"] for s in line["trace"]["steps"] if s["name"] == "evidence_gate"]
    gate_source = gates[-1]["source"] if gates else ""
    return {
        "conversation": line["conversation_id"],
        "turn": line["turn_index"],
        "user": line["user"],
        "want": want,
        "verdict": line["verdict"],
        "cited": sorted(cited),
        "answered": answered,
        "right": right_page if want == "answered" else not answered,
        "seconds": line["trace"]["duration_ms"] / 1000,
        # the gate's final reading, answered or not: what its risk-coverage curve needs
        "probability": gates[-1]["answerable"] if gates else None,
        "gate_source": gate_source,
        "gate_right": want == "answered" and gate_source in expect.get("cites", []),
        "cites": expect.get("cites", []),
        # the words the right sentences hold (``contains``): does the answer quote them?
        "holds_evidence": all(t.lower() in line["answer"].lower() for t in expect["contains"])
        if expect.get("contains") and want == "answered"
        else None,
        # the page choice's candidates, features and scores (training/fit_decision.py)
        "candidates": gates[-1].get("candidates", []) if gates else [],
    }


def figures(turns: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``FIGURES`` of scored turns."""
    answerable = [t for t in turns if t["want"] == "answered"]
    refusable = [t for t in turns if t["want"] != "answered"]
    answered = [t for t in turns if t["answered"]]
    seconds = sorted(t["seconds"] for t in turns)
    named = [t for t in answerable if t.get("holds_evidence") is not None]
    return {
        "answered_right": f"{sum(t['right'] for t in answerable)}/{len(answerable)}",
        "refused_right": f"{sum(t['right'] for t in refusable)}/{len(refusable)}",
        "precision": round(
            sum(t["want"] == "answered" and t["right"] for t in answered) / len(answered), 3
        )
        if answered
        else None,
        # answers citing a page that does not answer the turn (or answering one no page answers)
        "wrong_page_answers": sum(not (t["want"] == "answered" and t["right"]) for t in answered),
        # the decision's chosen page is a gold one, answered or not (answerable turns)
        "page_choice": round(sum(t["gate_right"] for t in answerable) / len(answerable), 3)
        if answerable
        else None,
        # of the answerable turns that name the words of their right sentences: quoted
        "evidence_held": f"{sum(bool(t['holds_evidence']) for t in named)}/{len(named)}"
        if named
        else None,
        "turns": len(turns),
        "p50_s": round(percentile(seconds, 0.5), 2),
        "p95_s": round(percentile(seconds, 0.95), 2),
    }


def knowledge_base_of(script: str) -> Path:
    """The pages a script is written over: the doc2dial dev pack's for its dev conversations,
    else examples/kb."""
    return DEV_KB if script.startswith("doc2dial-dev") else ROOT / "examples" / "kb"


def run_scripts(
    engine: str, scripts: list[str], data_dir: Path, settings: Settings | None = None
) -> list[dict[str, Any]]:
    """The scored turns of ``scripts`` through this checkout's turn on ``engine``
    (``settings``: another configuration than the loaded one), each over its own knowledge
    base (``knowledge_base_of``)."""
    settings = settings or load_settings()
    turns = []
    for pages in dict.fromkeys(knowledge_base_of(name) for name in scripts):
        where = data_dir / pages.parent.name
        kb = KnowledgeBase.open(settings, where)
        ingest_paths(kb, [pages], prune=True)
        kb.close()
        runtime = build_runtime(settings, where, engine=engine, process="sequential")
        try:
            for name in (n for n in scripts if knowledge_base_of(n) == pages):
                for line in run_script(load_script(SCRIPTS / name), runtime):
                    turn = scored(line)
                    if turn is not None:
                        turns.append({"set": name, **turn})
        finally:
            runtime.close()
    return turns

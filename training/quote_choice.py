"""Which sentences to quote, measured on the doc2dial training pack's held-out turns: the
window reading's focus (``tasks.answerability.quote`` over ``Focus``) against the
cross-encoder's (``tasks.answerability.learned_focus``), each quoting from the page that
answers the turn, scored by the evidence the agent grounded the reply on.

Per turn of the folds named: the answering page as one passage, the quote of each method,
its token recall of the evidence (how much of what the agent said it quotes) and its precision
(how much of the quote is that evidence).

    python -m training.quote_choice --model-dir /tmp/ce-A/ship --folds 3,4

Writes bench/results/quote_choice.{md,json}.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from config.settings import load_settings
from config.telemetry import apply_telemetry_policy
from evaluation.answers import answer_tokens
from evaluation.reporting import table, write_results
from storage.kb.ingest import ingest_paths
from storage.kb.knowledge_base import KnowledgeBase
from tasks.answerability import focus_in, learned_focus, quote
from tasks.evidence import EvidenceScorer
from training.dialogue_pack import PACK, question_turns
from training.support_pairs import load_pages


def recall_precision(quoted: str, evidence: str) -> tuple[float, float]:
    """Token recall of ``evidence`` in ``quoted`` and the share of ``quoted`` that is evidence."""
    said, wanted = answer_tokens(quoted), answer_tokens(evidence)
    if not said or not wanted:
        return 0.0, 0.0
    have = set(wanted)
    pool = set(said)
    return sum(t in pool for t in wanted) / len(wanted), sum(t in have for t in said) / len(said)


def page_text(units) -> str:
    return "\n".join(f"## {u.text}" if u.kind == "heading" else u.text for u in units)


def main() -> None:
    apply_telemetry_policy()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model-dir", type=Path)
    parser.add_argument("--folds", default="3,4")
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/supportcrew-pack"))
    args = parser.parse_args()
    settings = load_settings()
    evidence_settings = settings.evidence.model_copy(update={"model_dir": args.model_dir})
    kb = KnowledgeBase.open(settings, args.data_dir)
    ingest_paths(kb, [PACK / "kb"], prune=True)
    scorer = EvidenceScorer(kb.encoders, evidence_settings, kb.term_statistics)
    pages = {p.source_id: p for p in load_pages((PACK / "kb",))}
    folds = {int(f) for f in args.folds.split(",")}
    figures: dict[str, list[tuple[float, float, int]]] = {"window reading": [], "cross-encoder": []}
    for turn in question_turns():
        page = next((pages[g] for g in turn.gold if g in pages), None)
        if turn.fold not in folds or page is None:
            continue
        text = page_text(page.units)
        found = focus_in(scorer, turn.text, text)
        if found is None:
            continue
        gold = " ".join(turn.evidence)
        for name, focus in (
            ("window reading", found.focus),
            ("cross-encoder", learned_focus(scorer, turn.text, found.focus, page.title)),
        ):
            quoted = " ".join(quote(focus, turn.text, settings.evidence.answer_words))
            figures[name].append((*recall_precision(quoted, gold), len(quoted.split())))
    kb.close()
    rows = [
        (
            name,
            len(values),
            round(float(np.mean([v[0] for v in values])), 3),
            round(float(np.mean([v[1] for v in values])), 3),
            round(float(np.mean([v[0] >= 0.5 for v in values])), 3),
            round(float(np.median([v[2] for v in values])), 1),
        )
        for name, values in figures.items()
    ]
    lines = [
        "# Which sentences to quote: the pack's held-out turns (training/quote_choice.py)",
        "",
        f"Folds {args.folds}; the answering page as one passage; "
        f"cross-encoder {args.model_dir or 'shipped'}.",
        "",
        *table(
            (
                "quote by",
                "turns",
                "evidence recall",
                "evidence precision",
                "recall >= 0.5",
                "words (median)",
            ),
            rows,
        ),
        "",
    ]
    write_results("quote_choice", lines, {"rows": rows, "model_dir": str(args.model_dir)})


if __name__ == "__main__":
    main()

"""Agent assist against the customer-facing decision: how often each cites a right page.

For every answerable question of doc2dial dev and the examples/ answer sets: the customer's
turn (the question as a first turn, the set's slots) and the suggested reply an agent would
see for the same question left unanswered in a conversation (``service/domain/agent_assist.py``,
under the same slots: an agent's key may read more, never less). Both run on the shipped
defaults over the set's knowledge base.

    python -m bench.agent_assist [--data-dir DIR]

Writes bench/results/agent_assist.{md,json}.
"""

from __future__ import annotations

from typing import Any

from agents.build import build_runtime
from agents.turn import run_turn
from bench._common import ROOT, comparison_parser, open_answer_set, table, write_results
from config.settings import load_settings
from evaluation.answers import answer_set_settings
from service.domain.agent_assist import suggested_reply
from tasks.schemas import TurnRequest

PACKS = [
    ROOT.parent / "shared" / "datasets" / "doc2dial-support-dev",
    *(
        ROOT / "examples" / "answer-sets" / n
        for n in ("near-miss", "support-problems", "support-requests")
    ),
]


def pack_row(pack: Any, data_dir: Any) -> dict[str, Any]:
    settings = answer_set_settings(load_settings(), pack.name, data_dir)
    opened = open_answer_set(pack, data_dir / pack.name, settings)
    questions = [q for q in opened.answer_set.questions if q.answerable]
    slots = dict(opened.answer_set.slots)
    opened.close()
    runtime = build_runtime(settings, data_dir / pack.name)
    customer = assisted = both = 0
    try:
        for number, question in enumerate(questions):
            result = run_turn(
                TurnRequest(session_id=f"c-{number}", message=question.question, slots=slots),
                runtime,
            )
            answered = result.verdict == "answered" and any(
                c.source_id in question.doc_ids for c in result.citations
            )
            turns = [{"turn_index": 0, "user": question.question, "verdict": "idk"}]
            suggestion = suggested_reply(runtime, turns, slots, f"a-{number}")
            suggested = (
                suggestion is not None
                and suggestion.verdict == "answered"
                and any(c.source_id in question.doc_ids for c in suggestion.citations)
            )
            customer += answered
            assisted += suggested
            both += answered and suggested
    finally:
        runtime.close()
    return {
        "set": pack.name,
        "answerable": len(questions),
        "customer_decision_right": customer,
        "suggested_reply_right": assisted,
        "both": both,
    }


def main() -> None:
    parser = comparison_parser(__doc__, "/tmp/supportcrew-bench-assist")
    args = parser.parse_args()
    rows = [pack_row(pack, args.data_dir) for pack in PACKS if pack.exists()]
    columns = ("set", "answerable", "customer_decision_right", "suggested_reply_right", "both")
    lines = [
        "# Agent assist: the suggested reply against the customer-facing decision",
        "",
        "Answerable questions; a row counts an answer citing a right page. Same slots, shipped "
        "defaults (no model).",
        "",
        *table(columns, ((r[c] for c in columns) for r in rows)),
        "",
    ]
    write_results("agent_assist", lines, rows)


if __name__ == "__main__":
    main()

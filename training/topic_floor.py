"""Choose the similarity floor under which a conversation's topic is "other".

The lead's report names a conversation no answer named after the page nearest its question
(``service/domain/topics.py``). A question on a subject the knowledge base lacks still has a nearest
page ("Do you ship to Antarctica?" -> Payment methods), so a name is kept only when the
question's MiniLM cosine to that page's passage reaches the floor. Questions that belong to a
page: the answerable ones of the examples/ answer sets (a page of examples/kb answers each);
questions that do not: ``examples/gaps/paraphrase-groups.jsonl`` (subjects examples/kb does not
cover). The unanswerable questions of the answer sets touch a page without being answered by
it: listed, not fitted. Each floor is read by the share of each kept named / sent to "other";
the shipped floor is the highest that keeps every answerable question named. At that floor,
the same is read for the answerability model's probability that the nearest passage answers
the question (``service.domain.topics.TOPIC_ANSWERS_FLOOR``: near in words is not about it).

    python -m training.topic_floor [--data-dir DIR]

Writes bench/results/topic_floor.{md,json}.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from config.settings import load_settings
from config.telemetry import apply_telemetry_policy
from evaluation.answer_sets import load_answer_set
from evaluation.dev_runs import open_answer_set
from evaluation.reporting import ROOT, table, write_results
from service.domain.topics import TOPIC_ANSWERS_FLOOR, TOPIC_FLOOR, nearest_page, similarity
from tasks.evidence import EvidenceScorer

SETS = ROOT / "examples" / "answer-sets"
PACKS = ("near-miss", "support-problems", "support-requests")
GAPS = ROOT / "examples" / "gaps" / "paraphrase-groups.jsonl"
FLOORS = [round(0.20 + 0.02 * n, 2) for n in range(16)]
ANSWERS_FLOORS = [round(0.01 * n, 2) for n in range(11)]


def scored(data_dir: Any) -> list[dict[str, Any]]:
    """Every question with its kind, nearest page, cosine to that page's passage and the
    answerability model's probability that the passage answers it."""
    opened = open_answer_set(SETS / PACKS[0], data_dir)  # the three packs share examples/kb
    slots = dict(opened.answer_set.slots)
    nearest = nearest_page(opened.retriever, slots)
    kb = opened.kb
    answers = EvidenceScorer(kb.encoders, load_settings().evidence, kb.term_statistics).answerable
    asked = [
        (q.question, "answerable" if q.answerable else "touched", q.doc_ids)
        for pack in PACKS
        for q in load_answer_set(SETS / pack).questions
    ]
    rows = [json.loads(line) for line in GAPS.read_text(encoding="utf-8").splitlines() if line]
    asked += [(r["text"], "uncovered", []) for r in rows]
    found = []
    for text, kind, pages in asked:
        page = nearest(text)
        passage = str(page.fields.get("hit_text") or "") if page else ""
        found.append(
            {
                "question": text,
                "kind": kind,
                "page": page.source_id if page else "",
                "right_page": bool(page and page.source_id in pages),
                "cosine": round(similarity(opened.kb.encoders.dense.encode, text, passage), 3),
                "answers": round(answers(text, [passage])[0], 3) if passage else 0.0,
            }
        )
    opened.close()
    return found


def main() -> None:
    apply_telemetry_policy()  # where the training process starts
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/supportcrew-topic-floor"))
    args = parser.parse_args()
    rows = scored(args.data_dir)
    by_kind = {
        k: [r["cosine"] for r in rows if r["kind"] == k] for k in ("answerable", "touched", "uncovered")
    }
    cuts = [
        {
            "floor": floor,
            "answerable_named": sum(c >= floor for c in by_kind["answerable"]),
            "touched_named": sum(c >= floor for c in by_kind["touched"]),
            "uncovered_other": sum(c < floor for c in by_kind["uncovered"]),
        }
        for floor in FLOORS
    ]
    keeps_all = max(c["floor"] for c in cuts if c["answerable_named"] == len(by_kind["answerable"]))
    n = {k: len(v) for k, v in by_kind.items()}
    near = [r for r in rows if r["cosine"] >= TOPIC_FLOOR]  # named by the shipped cosine floor
    answer_cuts = [
        {
            "floor": floor,
            **{
                f"{kind}_named": sum(r["answers"] >= floor for r in near if r["kind"] == kind)
                for kind in ("answerable", "touched")
            },
            "uncovered_other": n["uncovered"]
            - sum(r["answers"] >= floor for r in near if r["kind"] == "uncovered"),
        }
        for floor in ANSWERS_FLOORS
    ]
    keeps_all_answers = max(c["floor"] for c in answer_cuts if c["answerable_named"] == n["answerable"])
    lines = [
        f"# Topic similarity floor ({n['answerable']} answerable, {n['touched']} touched, "
        f"{n['uncovered']} uncovered questions)",
        "",
        *table(
            ["floor", "answerable named", "touched named", "uncovered to other"],
            [
                [
                    c["floor"],
                    f"{c['answerable_named']}/{n['answerable']}",
                    f"{c['touched_named']}/{n['touched']}",
                    f"{c['uncovered_other']}/{n['uncovered']}",
                ]
                for c in cuts
            ],
        ),
        "",
        f"Lowest answerable cosine {min(by_kind['answerable'])}; highest uncovered "
        f"{max(by_kind['uncovered'])}. The highest floor keeping every answerable question "
        f"named: {keeps_all}; shipped: {TOPIC_FLOOR}.",
        "",
        f"At the cosine floor {TOPIC_FLOOR}, the answerability model's probability that the "
        "nearest passage answers the question, under which the page is no topic either:",
        "",
        *table(
            ["answers floor", "answerable named", "touched named", "uncovered to other"],
            [
                [
                    c["floor"],
                    f"{c['answerable_named']}/{n['answerable']}",
                    f"{c['touched_named']}/{n['touched']}",
                    f"{c['uncovered_other']}/{n['uncovered']}",
                ]
                for c in answer_cuts
            ],
        ),
        "",
        "Lowest answerable probability "
        f"{min(r['answers'] for r in rows if r['kind'] == 'answerable')}. The highest answers "
        f"floor keeping every answerable question named: {keeps_all_answers}; shipped: "
        f"{TOPIC_ANSWERS_FLOOR}.",
    ]
    write_results(
        "topic_floor",
        lines,
        {
            "cuts": cuts,
            "keeps_all": keeps_all,
            "shipped": TOPIC_FLOOR,
            "answer_cuts": answer_cuts,
            "keeps_all_answers": keeps_all_answers,
            "shipped_answers": TOPIC_ANSWERS_FLOOR,
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()

"""The support check (the verifier of drafted answers) on replies written by people.

doc2dial's agent replies are grounded in the gold page by the people who wrote them: the
closest thing here to a strong model's fluent answer. For every answerable question of a pack:

* **kept**: the reply checked against its own page (the page's passages, as retrieved text);
  a correct fluent answer should be kept;
* **mismatched kept**: the same reply against the next question's page; must not be kept;
* **changed facts kept**: the gold evidence span with one number (or, without numbers, one
  capitalised name) changed, against its own page; must never be kept.

``--packs ours`` reads ``examples/verifier/replies.jsonl``: replies written for supportcrew
over ``examples/kb``, faithful paraphrases (must be kept) and claims the page does not make or
denies (must not be kept), each against its own page.

    python -m bench.verifier [--packs dev,ours,test] [--data-dir DIR]

Tune on dev and ours; test is reported. Writes bench/results/verifier.{md,json}.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from bench._common import ROOT, comparison_parser, open_answer_set, table, write_results
from storage.qdrant.store import Match
from tasks.evidence import verified

PACKS = {
    "dev": ROOT.parent / "shared" / "datasets" / "doc2dial-support-dev",
    "test": ROOT.parent / "shared" / "datasets" / "doc2dial-support",
}
OURS = ROOT / "examples" / "verifier" / "replies.jsonl"
OURS_KB_SET = ROOT / "examples" / "answer-sets" / "near-miss"  # its kb/ is examples/kb


def changed_fact(text: str) -> str | None:
    """``text`` with its first number changed, else its first capitalised word after the
    first; None when it has neither."""
    number = re.search(r"\d+", text)
    if number:
        value = str(int(number.group()) + 7)
        return text[: number.start()] + value + text[number.end() :]
    name = re.search(r"(?<=\s)[A-Z][a-z]{3,}", text)
    if name:
        return text[: name.start()] + "Zorblax" + text[name.end() :]
    return None


def page_passages(opened: Any, doc_id: str) -> list[str]:
    records = opened.kb.store.scroll(opened.kb.collection, Match("source_id", (doc_id,)))
    return [r.payload["text"] for r in sorted(records, key=lambda r: r.payload["split_id"])]


def kept(opened: Any, reply: str, passages: list[str]) -> bool:
    return verified(opened.scorer.support(reply, passages))


def run_pack(name: str, directory: Path, data_dir: Path) -> dict[str, Any]:
    opened = open_answer_set(directory, data_dir / name)
    questions = [q for q in opened.answer_set.questions if q.answerable and q.answer]
    rows = []
    for index, question in enumerate(questions):
        own = page_passages(opened, question.doc_ids[0])
        other = page_passages(opened, questions[(index + 1) % len(questions)].doc_ids[0])
        changed = [c for c in (changed_fact(e) for e in question.evidence) if c]
        rows.append(
            {
                "id": question.id,
                "reply": question.answer,
                "kept": kept(opened, question.answer, own),
                "mismatched_kept": kept(opened, question.answer, other),
                "changed": changed[:1],
                "changed_kept": bool(changed) and kept(opened, changed[0], own),
            }
        )
    opened.close()
    return {
        "pack": name,
        "replies": len(rows),
        "kept": sum(r["kept"] for r in rows),
        "mismatched_kept": sum(r["mismatched_kept"] for r in rows),
        "changed": sum(bool(r["changed"]) for r in rows),
        "changed_kept": sum(r["changed_kept"] for r in rows),
        "rows": rows,
    }


def run_ours(data_dir: Path) -> dict[str, Any]:
    opened = open_answer_set(OURS_KB_SET, data_dir / "ours")
    rows = []
    for line in OURS.read_text(encoding="utf-8").splitlines():
        reply = json.loads(line)
        rows.append(
            {**reply, "kept": kept(opened, reply["reply"], page_passages(opened, reply["page"]))}
        )
    opened.close()
    faithful = [r for r in rows if r["supported"]]
    return {
        "pack": "ours",
        "replies": len(faithful),
        "kept": sum(r["kept"] for r in faithful),
        "unsupported": len(rows) - len(faithful),
        "unsupported_kept": sum(r["kept"] for r in rows if not r["supported"]),
        "rows": rows,
    }


def main() -> None:
    parser = comparison_parser(__doc__, "/tmp/supportcrew-verifier")
    parser.add_argument("--packs", default="dev,ours,test")
    args = parser.parse_args()
    names = args.packs.split(",")
    results = [run_pack(name, PACKS[name], args.data_dir) for name in names if name != "ours"]
    ours = run_ours(args.data_dir) if "ours" in names else None
    lines = [
        "# The support check on replies written by people",
        "",
        *table(
            ("pack", "replies", "kept (own page)", "mismatched kept", "changed facts kept"),
            (
                (
                    r["pack"],
                    r["replies"],
                    f"{r['kept']} ({r['kept'] / r['replies']:.2f})",
                    r["mismatched_kept"],
                    f"{r['changed_kept']}/{r['changed']}",
                )
                for r in results
            ),
        ),
        "",
    ]
    if ours:
        lines += [
            "examples/verifier (ours, over examples/kb):",
            "",
            *table(
                ("faithful replies", "kept", "unsupported or denied claims", "kept"),
                [(ours["replies"], ours["kept"], ours["unsupported"], ours["unsupported_kept"])],
            ),
            "",
        ]
        results.append(ours)
    lines += [
        "Replies not kept on dev:",
        "",
        *(
            f"- {row['id']}: {row['reply'][:140]!r}"
            for r in results
            if r["pack"] == "dev"
            for row in r["rows"]
            if not row["kept"]
        ),
    ]
    write_results("verifier", lines, results)


if __name__ == "__main__":
    main()

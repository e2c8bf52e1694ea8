"""A SQuAD 2.0 answer pack: the product's whole answer decision measured on SQuAD articles.

Writes a pack (``kb/`` + ``questions.jsonl``, the layout of doc2dial-support) to a folder outside
the repository: every paragraph of the chosen articles is one page (title: the article's), and
a seeded sample of their questions, half answerable (``doc_ids`` = the paragraph, ``evidence``
= the sentence that holds the first gold answer) and half unanswerable (SQuAD 2.0's adversarial
questions: their paragraph *is* in the knowledge base, holding the plausible answer written to
fool word overlap: the "neighbouring page" kind of miss, at its hardest).

``--articles held-out`` (default) takes the articles the answerability model never saw in
training (``answerability_data.held_out_titles``, seed 13): the pack then measures the learned
model and the logistic gate side by side on the same unseen data. ``--articles train`` takes
the others (data the gates may be fitted on).

    python -m bench.squad_pack --out /tmp/squad-held-out [--articles held-out] [--questions 600]
    python main.py eval answers --dataset /tmp/squad-held-out --json --output result.json
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

from bench._common import ROOT
from evaluation.squad import SQUAD, held_out_titles, load_squad
from tasks.passage_text import split_units

SEED = 13


def slug(title: str) -> str:
    """A page id from an article title: ``Super_Bowl_50`` -> ``super-bowl-50``."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def page(page_id: str, title: str, text: str) -> str:
    """One knowledge-base page: front matter, then the paragraph."""
    return (
        f"---\nid: {page_id}\ntitle: {json.dumps(title)}\nsource: SQuAD 2.0 dev "
        f"(CC BY-SA 4.0)\n---\n\n{text.strip()}\n"
    )


def answer_sentence(context: str, start: int) -> str:
    """The unit (sentence or line) of ``context`` that holds character ``start``."""
    position = 0
    for unit in (u.text for u in split_units(context)):
        found = context.find(unit, position)
        if found < 0:
            continue
        if found <= start < found + len(unit):
            return unit
        position = found + len(unit)
    return context


def pack_rows(articles: list[dict], questions: int, seed: int) -> tuple[dict[str, str], list[dict]]:
    """The pages (id -> Markdown) and a balanced seeded sample of the articles' questions."""
    pages: dict[str, str] = {}
    answerable, unanswerable = [], []
    for article in articles:
        title = article["title"].replace("_", " ")
        for number, paragraph in enumerate(article["paragraphs"], start=1):
            page_id = f"{slug(article['title'])}-{number:03d}"
            pages[page_id] = page(page_id, title, paragraph["context"])
            for qa in paragraph["qas"]:
                row = {"id": qa["id"], "question": qa["question"].strip()}
                if qa.get("is_impossible"):
                    unanswerable.append({**row, "answerable": False, "doc_ids": []})
                else:
                    first = qa["answers"][0]
                    answerable.append(
                        {
                            **row,
                            "answerable": True,
                            "doc_ids": [page_id],
                            "answer": first["text"],
                            "evidence": [answer_sentence(paragraph["context"], first["answer_start"])],
                        }
                    )
    rng = random.Random(seed)
    half = questions // 2
    chosen = rng.sample(answerable, min(half, len(answerable))) + rng.sample(
        unanswerable, min(questions - half, len(unanswerable))
    )
    rng.shuffle(chosen)
    return pages, chosen


def write_pack(out: Path, pages: dict[str, str], rows: list[dict]) -> None:
    """The pack on disk; refuses a folder that holds anything but an earlier pack."""
    if out.exists() and any(p.name not in {"kb", "questions.jsonl"} for p in out.iterdir()):
        raise SystemExit(f"{out}: not empty and not a pack this script wrote; choose another --out")
    (out / "kb").mkdir(parents=True, exist_ok=True)
    for old in (out / "kb").glob("*.md"):
        old.unlink()
    for page_id, text in pages.items():
        (out / "kb" / f"{page_id}.md").write_text(text, encoding="utf-8")
    (out / "questions.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True, help="the pack's folder (outside the repo)")
    parser.add_argument("--articles", choices=("held-out", "train"), default="held-out")
    parser.add_argument("--questions", type=int, default=600, help="sampled, half unanswerable")
    parser.add_argument(
        "--max-articles", type=int, default=0, help="with --articles train: the first N of them (0: all)"
    )
    args = parser.parse_args()
    if args.out.resolve().is_relative_to(ROOT):
        raise SystemExit(
            f"{args.out}: write the pack outside the repository (shared data stays in ../shared)"
        )
    articles = load_squad(SQUAD)
    held = set(held_out_titles(articles, SEED))
    chosen = [a for a in articles if (a["title"] in held) == (args.articles == "held-out")]
    if args.max_articles:
        chosen = chosen[: args.max_articles]
    pages, rows = pack_rows(chosen, args.questions, SEED)
    write_pack(args.out, pages, rows)
    answerable = sum(r["answerable"] for r in rows)
    print(
        f"{args.out}: {len(pages)} pages from {len(chosen)} articles, {len(rows)} questions "
        f"({answerable} answerable, {len(rows) - answerable} unanswerable)"
    )


if __name__ == "__main__":
    main()

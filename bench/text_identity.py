"""The text primitives against an earlier checkout: do the chunker, the passage units, the
sentence splitter and the word patterns give the same output on the same texts?

Texts: examples/kb pages, the doc2dial dev pages and questions, and the lines of the example
scripts. Each checkout hashes its outputs in a process of its own, started in its folder with
that folder as ``PYTHONPATH`` (its own code, never this one's); equal hashes mean a refactoring
changed nothing a verdict could see.

    python -m bench.text_identity --baseline-repo /path/to/earlier/checkout

Writes bench/results/text_identity.{md,json}.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bench._common import ROOT, comparison_parser, table, write_results

PROBE = r"""
import hashlib, json, sys
from pathlib import Path
root, dev = Path(sys.argv[1]), Path(sys.argv[2])
texts = [p.read_text(encoding="utf-8") for p in sorted((root / "examples" / "kb").rglob("*.md"))]
texts += [p.read_text(encoding="utf-8", errors="replace") for p in sorted((dev / "kb").rglob("*.md"))]
for line in (dev / "questions.jsonl").read_text(encoding="utf-8").splitlines():
    texts += [v for v in json.loads(line).values() if isinstance(v, str)]
for script in sorted((root / "examples").rglob("*.yaml")):
    texts += [l for l in script.read_text(encoding="utf-8").splitlines() if l.strip()]
from storage.kb.chunking import chunk_text, estimate_tokens
from tasks import courtesy, facts, followups, spelling
from tasks.passage_text import split_units
from evaluation.answers import answer_tokens
try:
    from storage.text import split_sentences
except ImportError:  # a checkout from before storage/text.py
    from tasks.passage_text import split_sentences
def digest(value): return hashlib.sha256(json.dumps(value, default=str).encode()).hexdigest()[:16]
print(json.dumps({
    "texts": len(texts),
    "chunks": digest([
        [(c.split_id, c.start, c.text, c.section)
         for c in chunk_text(t, max_tokens=200, overlap_sentences=1)]
        for t in texts
    ]),
    "token estimates": digest([estimate_tokens(t) for t in texts]),
    "passage units": digest([[(u.kind, u.text) for u in split_units(t)] for t in texts]),
    "sentences": digest([split_sentences(" ".join(t.split())) for t in texts]),
    "content words": digest([sorted(courtesy.content_words(t)) for t in texts]),
    "spelling words": digest([spelling._WORD.findall(t) for t in texts]),
    "support-check words": digest([facts._WORD.findall(t) for t in texts]),
    "answer tokens": digest([answer_tokens(t) for t in texts]),
    "subject terms": digest([followups.subject_terms(t[:500]) for t in texts[:300]]),
}))
"""
DEV = ROOT.parent / "shared" / "datasets" / "doc2dial-support-dev"


def own_code(repo: Path) -> dict[str, str]:
    """The environment of a process that imports ``repo``'s packages before any other copy."""
    path = os.pathsep.join(p for p in (str(repo.resolve()), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


def hashes(repo: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT), str(DEV)],
        cwd=repo,
        env=own_code(repo),
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"{repo}: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    args = comparison_parser(__doc__, "/tmp/supportcrew-bench-text").parse_args()
    if not args.baseline_repo:
        raise SystemExit("--baseline-repo: the checkout to compare with")
    now, before = hashes(ROOT), hashes(args.baseline_repo)
    rows = [(k, now[k], before[k], "same" if now[k] == before[k] else "DIFFERENT") for k in now]
    lines = [
        f"# Text primitives against {args.baseline_repo.name}: {now['texts']} texts",
        "",
        *table(("output", "now", "before", ""), rows),
    ]
    write_results("text_identity", lines, {"now": now, "before": before})


if __name__ == "__main__":
    main()

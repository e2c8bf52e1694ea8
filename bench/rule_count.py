"""How much of the answer decision is hand-written rules: regexes and listed words in tasks/.

Counts, per module of ``tasks/``: ``re.compile`` calls, and the string items of literal tuples,
lists and sets of five or more strings (word lists; a ``Literal[...]`` type is not one, nor a
tuple that names a model's features, ``FEATURES = ("reading", ...)``: names, not rules).

    python -m bench.rule_count [--json]
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LISTED_AT_LEAST = 5


def count(path: Path) -> tuple[int, int]:
    """(regexes, listed words) of one module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing = {
        id(n.slice)
        for n in ast.walk(tree)
        if isinstance(n, ast.Subscript) and getattr(n.value, "id", "") == "Literal"
    } | {
        id(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign)
        and any(getattr(t, "id", "").endswith("FEATURES") for t in n.targets)
    }
    regexes = words = 0
    for node in ast.walk(tree):
        if id(node) in typing:  # Literal["answered", ...] names values, lists no words
            continue
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "compile"
            and getattr(node.func.value, "id", "") == "re"
        ):
            regexes += 1
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            strings = [e for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if len(strings) >= LISTED_AT_LEAST:
                words += len(strings)
    return regexes, words


def main() -> None:
    rows = {p.name: count(p) for p in sorted((ROOT / "tasks").glob("*.py"))}
    total = (sum(r for r, _ in rows.values()), sum(w for _, w in rows.values()))
    if "--json" in sys.argv:
        print(json.dumps({"modules": rows, "regexes": total[0], "listed_words": total[1]}))
        return
    for name, (regexes, words) in rows.items():
        if regexes or words:
            print(f"{name:28} {regexes:3} regexes {words:4} listed words")
    print(f"{'tasks/ total':28} {total[0]:3} regexes {total[1]:4} listed words (sum {sum(total)})")


if __name__ == "__main__":
    main()

"""How much of the answer decision is hand-written rules: regexes and listed words in tasks/
and storage/kb/.

Counts, per module: ``re.compile`` calls; the string items of literal tuples, lists and sets of
five or more strings (word lists; a ``Literal[...]`` type is not one, nor a tuple that names a
model's features or payload fields, ``FEATURES = ("reading", ...)``, ``fields=(...)``: names,
not rules); and the words of a word list written as one string, ``_set("yes yeah yep ...")``
or ``"yes yeah yep ...".split()`` (the ``split`` receiver or a set helper's argument, five or
more lower-case words).

    python -m bench.rule_count [--json] [--root CHECKOUT]
"""

from __future__ import annotations

import argparse
import ast
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LISTED_AT_LEAST = 5
FOLDERS = ("tasks", "storage/kb")
# tuples assigned to these names, or passed as ``fields=``, name payload fields or model
# features: names, not rules
NAMES = ("FEATURES", "FIELDS")
_LOWER_WORD = re.compile(r"[a-z][a-z'-]*")


def _string_list(node: ast.AST) -> int:
    """The words of a word list written as one string, else 0."""
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return 0
    words = node.value.split()
    if len(words) < LISTED_AT_LEAST or not all(_LOWER_WORD.fullmatch(w) for w in words):
        return 0
    return len(words)


def _listed_in_call(node: ast.Call) -> int:
    """Word-list strings a call reads: the receiver of ``.split()``, or the argument of a
    set-making helper (``_set("yes yeah ...")``)."""
    name = getattr(node.func, "id", "") or getattr(node.func, "attr", "")
    if name == "split" and isinstance(node.func, ast.Attribute):
        return _string_list(node.func.value)
    return sum(_string_list(a) for a in node.args) if "set" in name.lower() else 0


def count(path: Path) -> tuple[int, int]:
    """(regexes, listed words) of one module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing = (
        {
            id(n.slice)
            for n in ast.walk(tree)
            if isinstance(n, ast.Subscript) and getattr(n.value, "id", "") == "Literal"
        }
        | {
            id(n.value)
            for n in ast.walk(tree)
            if isinstance(n, ast.Assign) and any(getattr(t, "id", "").endswith(NAMES) for t in n.targets)
        }
        | {
            id(k.value)
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
            for k in n.keywords
            if k.arg == "fields"
        }
    )
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
        if isinstance(node, ast.Call):
            words += _listed_in_call(node)
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            strings = [e for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if len(strings) >= LISTED_AT_LEAST:
                words += len(strings)
    return regexes, words


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to count")
    args = parser.parse_args()
    rows = {
        str(p.relative_to(args.root)): count(p)
        for folder in FOLDERS
        for p in sorted((args.root / folder).glob("*.py"))
    }
    total = (sum(r for r, _ in rows.values()), sum(w for _, w in rows.values()))
    if args.json:
        print(json.dumps({"modules": rows, "regexes": total[0], "listed_words": total[1]}))
        return
    for name, (regexes, words) in rows.items():
        if regexes or words:
            print(f"{name:36} {regexes:3} regexes {words:4} listed words")
    print(f"{'total':36} {total[0]:3} regexes {total[1]:4} listed words (sum {sum(total)})")


if __name__ == "__main__":
    main()

"""Usage examples in module docstrings must be true: they parse, and every call of a function
or class the module defines (or imports) binds to its real signature. Modules whose examples are
exact run as doctests."""

from __future__ import annotations

import ast
import doctest
import importlib
import inspect
import re
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("config", "storage", "tasks", "agents", "integrations", "service", "terminal")
DOCTESTED = (
    "config.settings",
    "storage.lru",
    "storage.qdrant.store",
    "tasks.facts",
    "tasks.passage_text",
    "tasks.answerability_model",
    "tasks.phrasings",
    "tasks.gap_report",
    "tasks.courtesy",
    "tasks.entities",
    "tasks.spelling",
    "agents.progress",
    "evaluation.answers",
    "tasks.schemas",
    "tasks.decision",
    "tasks.outcomes",
    "tasks.followups",
    "service.domain.outcomes",
    "service.web.article_page",
    "terminal.chat",
    "terminal.safe_text",
    "service.web.etag",
    "storage.records",
    "service.domain.queue",
    "service.domain.conversation",
    "service.stores.rate_limits",
    "tasks.page_choice",
    "storage.kb.sources.urls",
    "storage.retrieval.filters",
    "service.stores.articles",
)


def module_names() -> list[str]:
    names = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def usage_block(doc: str) -> str | None:
    """The Python of the docstring's ``Usage::`` block (doctest prompts removed)."""
    found = re.search(r"Usage[^\n:]*::\n", doc)
    if found is None:
        return None
    lines = []
    for line in doc[found.end() :].splitlines():
        if line.strip() and not line.startswith("    "):
            break
        lines.append(line)
    block = textwrap.dedent("\n".join(lines))
    if ">>>" in block:
        block = "\n".join(line[4:] for line in block.splitlines() if line.startswith((">>> ", "... ")))
    return block


def resolve(node: ast.expr, namespace: dict) -> object | None:
    if isinstance(node, ast.Name):
        return namespace.get(node.id)
    if isinstance(node, ast.Attribute):
        owner = resolve(node.value, namespace)
        if inspect.isclass(owner) or inspect.ismodule(owner):
            return getattr(owner, node.attr, None)
    return None


@pytest.mark.parametrize("name", module_names())
def test_usage_examples_parse_and_match_the_signatures(name):
    module = importlib.import_module(name)
    block = usage_block(module.__doc__ or "")
    if block is None:
        return
    tree = ast.parse(block.replace("...", "None"), filename=f"{name} docstring")
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        target = resolve(call.func, vars(module))
        if target is None or not callable(target):
            continue
        try:
            signature = inspect.signature(target)
        except (TypeError, ValueError):
            continue
        if any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords
        ):
            continue
        try:
            signature.bind(*[None] * len(call.args), **{k.arg: None for k in call.keywords})
        except TypeError as exc:
            pytest.fail(f"{name}: `{ast.unparse(call)}` does not fit {signature}: {exc}")


@pytest.mark.parametrize("name", DOCTESTED)
def test_exact_examples_run(name):
    module = importlib.import_module(name)
    failed, tried = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert tried > 0 and failed == 0

"""Deterministic entity extraction from a customer's message.

Patterns for ids the support team uses (orders, invoices, refund references), emails, error
codes and plans.

Usage::

    extract("Order ORD-55812 failed with PAY-102, mail me at ana@example.com")
    # [Entity(type='order', value='ORD-55812'), Entity(type='error_code', value='PAY-102'),
    #  Entity(type='email', value='ana@example.com')]
"""

from __future__ import annotations

import re

from storage.kb.fact_kinds import CUSTOMER_REFERENCE, ERROR_CODE, PLAN_NAMES, REFERENCE_PREFIXES
from storage.memory import Entity, RememberedEntity

PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("order", CUSTOMER_REFERENCE["order"]),
    # "order number 12345", "order #12345", "order: 12345" and plainly "order 12345"
    ("order", re.compile(r"\border\s*(?:number|no\.?|#)?\s*:?\s*#?(\d{4,})\b", re.IGNORECASE)),
    ("invoice", CUSTOMER_REFERENCE["invoice"]),
    ("refund", CUSTOMER_REFERENCE["refund"]),
    ("email", CUSTOMER_REFERENCE["email"]),
    (
        "error_code",
        re.compile(
            r"\b(?!" + "|".join(REFERENCE_PREFIXES) + ")" + ERROR_CODE.pattern.removeprefix(r"\b")
        ),
    ),
    (
        "plan",
        re.compile(r"\b(" + "|".join(PLAN_NAMES) + r")\s+(?:plan|tier|workspace)\b", re.IGNORECASE),
    ),
)


# what says whose case it is, not what is asked: no help page holds a customer's own order id
CUSTOMER_REFERENCES = frozenset({"order", "invoice", "refund", "email"})
# when it happened is the customer's case too ("for our March charge", "since Tuesday"); "May"
# only with a day, as "May I ...?" asks permission
_DATE = re.compile(
    r"\b(?:(?:January|February|March|April|June|July|August|September|October|"
    r"November|December|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|"
    r"Sunday)(?:\s+\d{1,2}(?:st|nd|rd|th)?)?|May\s+\d{1,2}(?:st|nd|rd|th)?)\b"
)
_LABEL_BEFORE = re.compile(
    r"\b(?P<word>order|invoice|refund|reference|ref)\s*(?:number|no\.?|id|#)?"
    r"\s*:?\s*#?\s*$",
    re.IGNORECASE,
)


def _canonical(kind: str, match: re.Match[str]) -> str:
    value = match.group(1) if match.groups() else match.group(0)
    if kind == "order" and value.isdigit():
        return f"ORD-{value}"
    if kind in ("order", "invoice", "refund"):
        return value.upper()
    if kind == "email":
        return value.lower()
    if kind == "plan":
        return value.lower()
    return value


def extract(text: str) -> list[Entity]:
    """Entities found in ``text``, each once, in order of appearance."""
    found: list[tuple[int, Entity]] = []
    seen: set[tuple[str, str]] = set()
    for kind, pattern in PATTERNS:
        for match in pattern.finditer(text):
            entity = Entity(kind, _canonical(kind, match))
            if (entity.type, entity.value) not in seen:
                seen.add((entity.type, entity.value))
                found.append((match.start(), entity))
    return [entity for _, entity in sorted(found, key=lambda item: item[0])]


def without_references(text: str, named: str = "") -> str:
    """``text`` without the customer's own references (order, invoice and refund ids, email
    addresses, the word that labels one too unless the pages use it; month and weekday names)
    that ``named`` (the pages read) does not hold: "How long does a refund take for order
    ORD-55812?" asks what the refund page answers, and no page holds ORD-55812.

    >>> without_references("How do I export my files? (order ORD-01002)")
    'How do I export my files? ()'
    >>> without_references("How long does a refund take for order 98765?")
    'How long does a refund take for ?'
    >>> without_references("Where is invoice INV-2026-000871?", "Invoices are listed in ...")
    'Where is invoice ?'
    >>> without_references("I moved from ana@example.com. How do I change my email?")
    'I moved from . How do I change my email?'
    >>> without_references("Where is invoice INV-2026-004512?", "e.g. INV-2026-004512")
    'Where is invoice INV-2026-004512?'
    >>> without_references("Why was I charged twice in March?", "You are charged once ...")
    'Why was I charged twice in ?'
    >>> without_references("What happened in the March outage?", "The outage of 3 March ...")
    'What happened in the March outage?'
    """
    spans = []
    folded = named.casefold()
    for kind, pattern in PATTERNS:
        if kind not in CUSTOMER_REFERENCES:
            continue
        for match in pattern.finditer(text):
            if (
                _canonical(kind, match).casefold() not in folded
                and match.group(0).casefold() not in folded
            ):
                label = _LABEL_BEFORE.search(text, 0, match.start())
                if label and re.search(rf"\b{label.group('word').casefold()}", folded):
                    label = None  # the pages use the word ("invoice"): it may be the subject
                spans.append((label.start() if label else match.start(), match.end()))
    spans += [
        (m.start(), m.end())
        for m in _DATE.finditer(text)
        if not re.search(rf"\b{re.escape(m.group(0).casefold())}\b", folded)
    ]
    kept, position = [], 0
    for start, end in sorted(spans):  # overlapping spans are cut once
        kept.append(text[position : max(position, start)])
        position = max(position, end)
    kept.append(text[position:])
    return re.sub(r"[ \t]{2,}", " ", "".join(kept)) if spans else text


_REFERS = {
    "order": re.compile(r"\b(my|the|that|this)\s+order\b", re.IGNORECASE),
    "invoice": re.compile(r"\b(my|the|that|this)\s+invoice\b", re.IGNORECASE),
    "refund": re.compile(r"\b(my|the|that|this)\s+refund\b", re.IGNORECASE),
    "error_code": re.compile(
        r"\b(the|that|this|same)\s+(error|code|error\s+code|"
        r"error\s+message)\b",
        re.IGNORECASE,
    ),
    "plan": re.compile(r"\b(my|the|that|this|our)\s+(plan|tier|subscription)\b", re.IGNORECASE),
}


def referenced(text: str, known: list[RememberedEntity]) -> list[RememberedEntity]:
    """Known entities the message points at without naming them ("where is my order?")."""
    hits = []
    for kind, pattern in _REFERS.items():
        if pattern.search(text):
            latest = next((e for e in known if e.type == kind), None)
            if latest and latest.value.lower() not in text.lower():
                hits.append(latest)
    return hits

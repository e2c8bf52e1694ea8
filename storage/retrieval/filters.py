"""Slots → Qdrant payload conditions. The security boundary of retrieval lives here.

* **Enforced** rules (tier, access level, customer, tenant by default) always produce a
  condition, even when the slot is missing: a missing slot falls back to the rule's
  ``default`` or to "only documents that are not restricted on this field".
* **Advisory** filters (product, language by default) come from slots or from the model; they
  can only narrow. An advisory filter that names an enforced slot or field is ignored and
  reported, never merged.
* **Drafts** (an article saved but not published: its chunks carry a ``draft`` field) are
  hidden from every search, whatever the configured rules; only a search whose trusted slots
  carry that draft's ``draft`` value (the article check, ``service/stores/articles.py``) sees it,
  beside what its other enforced slots show.

``admits`` answers the same rules for one document before it is stored (a lead may only save
an article its own key could read).

Usage::

    plan = build_filters(settings.slots, {"tier": "basic", "access_level": "customer"},
                         advisory={"product": "cloud", "access_level": "internal"})
    plan.condition        # enforced AND advisory
    plan.ignored          # ["access_level: enforced slots cannot be set as advisory filters"]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from config.settings import SlotRule
from storage.qdrant.store import AnyOf, Condition, Match, Missing, all_of

DRAFT = "draft"  # slot and payload field of a draft's preview value (see the docstring)


class SlotError(ValueError):
    """A slot name or value is not acceptable; the message names the slot."""


@dataclass(frozen=True)
class FilterPlan:
    enforced: Condition | None
    advisory: Condition | None
    applied: dict[str, str] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)

    @property
    def condition(self) -> Condition | None:
        return all_of(self.enforced, self.advisory)


def _scalar(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise SlotError(f"slot {name}: expected one text value, got {type(value).__name__}")
    text = str(value).strip()
    return text or None


def _known_value(name: str, rule: SlotRule, value: str) -> None:
    """Refuse a value outside what the rule lists (its ``levels`` for ``at_most``, else its
    ``values`` when it has them), naming them."""
    allowed = (rule.levels or []) if rule.match == "at_most" else rule.values
    if allowed is not None and value not in allowed:
        raise SlotError(f"slot {name}: {value!r} is not one of {', '.join(allowed)}")


def _rule_condition(name: str, rule: SlotRule, value: str | None) -> tuple[Condition, str]:
    if rule.match == "at_most":
        levels = rule.levels or []
        level = value if value is not None else rule.default
        if level is None:
            return Missing(rule.field), f"{rule.field} absent"
        _known_value(name, rule, level)
        allowed = tuple(levels[: levels.index(level) + 1])
        return Match(rule.field, allowed), f"{rule.field} in {list(allowed)}"
    value = value if value is not None else rule.default
    if value is None:
        return Missing(rule.field), f"{rule.field} absent"
    _known_value(name, rule, value)
    return AnyOf((Missing(rule.field), Match(rule.field, (value,)))), (
        f"{rule.field} absent or {value!r}"
    )


def build_filters(
    rules: Mapping[str, SlotRule],
    slots: Mapping[str, Any],
    advisory: Mapping[str, Any] | None = None,
    strict: bool = True,
) -> FilterPlan:
    """Build the filter plan for one search.

    ``slots`` come from the session (trusted to the extent the caller is); ``advisory`` from a
    model or a request body. With ``strict``, an unknown slot name raises :class:`SlotError`;
    otherwise unknown slots are ignored (a Rasa tracker carries many unrelated slots).
    """
    applied: dict[str, str] = {}
    ignored: list[str] = []
    enforced_parts: list[Condition] = []
    advisory_parts: list[Condition] = []
    enforced_fields = {r.field for r in rules.values() if r.mode == "enforced"}

    for name in slots:
        if name not in rules and name != DRAFT and strict:
            known = ", ".join(sorted(rules))
            raise SlotError(f"unknown slot {name!r}; known slots: {known}")

    for name, rule in rules.items():
        value = _scalar(name, slots.get(name))
        if rule.mode == "enforced":
            condition, description = _rule_condition(name, rule, value)
            enforced_parts.append(condition)
            applied[name] = f"enforced: {description}"
        elif value is not None:
            condition, description = _rule_condition(name, rule, value)
            advisory_parts.append(condition)
            applied[name] = f"advisory: {description}"

    for name, raw in (advisory or {}).items():
        asked: SlotRule | None = rules.get(name)
        if asked is None:
            by_field = [n for n, r in rules.items() if r.field == name]
            asked = rules[by_field[0]] if by_field else None
            name = by_field[0] if by_field else name
        if asked is None:
            ignored.append(f"{name}: not a known filter")
            continue
        if asked.mode == "enforced" or asked.field in enforced_fields:
            ignored.append(f"{name}: enforced slots cannot be set as advisory filters")
            continue
        try:
            value = _scalar(name, raw)
        except SlotError as exc:
            ignored.append(str(exc))
            continue
        if value is None or name in applied:
            continue
        try:
            condition, description = _rule_condition(name, asked, value)
        except SlotError as exc:  # a value outside the rule's values: ignored, said
            ignored.append(str(exc))
            continue
        advisory_parts.append(condition)
        applied[name] = f"advisory: {description}"

    draft = _scalar(DRAFT, slots.get(DRAFT))
    enforced_parts.append(
        Missing(DRAFT) if draft is None else AnyOf((Missing(DRAFT), Match(DRAFT, (draft,))))
    )
    applied[DRAFT] = "enforced: published documents" + (" and one draft" if draft else "")

    return FilterPlan(
        enforced=all_of(*enforced_parts),
        advisory=all_of(*advisory_parts),
        applied=applied,
        ignored=ignored,
    )


def _absent(value: Any) -> bool:
    """What Qdrant's is-empty condition matches: no field, null or an empty list."""
    return value is None or value == []


def _admitted(rule: SlotRule, value: str | None, stored: Any) -> bool:
    """Whether one enforced rule, for a caller whose slot is ``value``, shows a document whose
    field holds ``stored`` (the Python twin of :func:`_rule_condition`)."""
    wanted = value if value is not None else rule.default
    if rule.match == "at_most":
        if wanted is None:
            return _absent(stored)
        levels = rule.levels or []
        return stored in levels[: levels.index(wanted) + 1]
    if _absent(stored):
        return True
    if wanted is None:
        return False
    return wanted in stored if isinstance(stored, list) else stored == wanted


def admits(
    rules: Mapping[str, SlotRule], slots: Mapping[str, Any], payload: Mapping[str, Any]
) -> list[str]:
    """The payload fields whose enforced rule would hide a document with ``payload`` from a
    caller with ``slots`` ([] when the caller may read it): the rules :func:`build_filters`
    gives Qdrant, applied to one document before it is stored.

    >>> from config.settings import load_settings
    >>> rules = load_settings().slots
    >>> admits(rules, {"access_level": "customer", "tier": "basic"},
    ...        {"access": "internal", "tiers": ["enterprise"]})
    ['tiers', 'access']
    >>> admits(rules, {"access_level": "customer"}, {"access": "public"})
    []
    """
    hidden = []
    for name, rule in rules.items():
        if rule.mode != "enforced":
            continue
        value = _scalar(name, slots.get(name))
        if value is not None:
            _known_value(name, rule, value)
        if not _admitted(rule, value, payload.get(rule.field)):
            hidden.append(rule.field)
    if not _admitted_draft(slots.get(DRAFT), payload.get(DRAFT)):
        hidden.append(DRAFT)
    return hidden


def _admitted_draft(value: Any, stored: Any) -> bool:
    return _absent(stored) or (value is not None and stored == value)


def document_fields(rules: Mapping[str, SlotRule], slots: Mapping[str, Any]) -> dict[str, Any]:
    """The payload fields that make a record readable by a caller with ``slots`` and by every
    caller whose enforced slots reach at least as far (an answer's memory keeps its answer's
    reach): an ``at_most`` level as it is, a ``contains_or_absent`` value as a one-item list,
    an ``equals_or_absent`` value as it is; a rule the slots leave empty sets no field.

    >>> from config.settings import load_settings
    >>> document_fields(load_settings().slots, {"tier": "pro", "access_level": "internal"})
    {'tiers': ['pro'], 'access': 'internal'}
    >>> document_fields(load_settings().slots, {})
    {'access': 'public'}
    """
    fields: dict[str, Any] = {}
    for name, rule in rules.items():
        if rule.mode != "enforced":
            continue
        value = _scalar(name, slots.get(name))
        wanted = value if value is not None else rule.default
        if wanted is not None:
            fields[rule.field] = [wanted] if rule.match == "contains_or_absent" else wanted
    return fields


def widest_reach(rules: Mapping[str, SlotRule], reads: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """One set of enforced slots for what was read under each of ``reads``: the highest level
    of each ``at_most`` slot, the first value of the others (a conversation's turns run under
    one key's slots, so they agree).

    >>> from config.settings import load_settings
    >>> widest_reach(load_settings().slots, [{"access_level": "public", "tier": "pro"},
    ...                                      {"access_level": "internal"}])
    {'tier': 'pro', 'access_level': 'internal'}
    """
    reach: dict[str, str] = {}
    for name, rule in rules.items():
        if rule.mode != "enforced":
            continue
        values = [v for v in (_scalar(name, r.get(name)) for r in reads) if v is not None]
        if rule.match == "at_most" and values:
            levels = rule.levels or []
            known = [v for v in values if v in levels] or values
            reach[name] = max(known, key=lambda v: levels.index(v) if v in levels else len(levels))
        elif values:
            reach[name] = values[0]
    return reach


def highest_levels(rules: Mapping[str, SlotRule]) -> dict[str, str]:
    """The highest level of each enforced ``at_most`` rule: the reach of a record whose
    reader is unknown (shown only to callers at that level).

    >>> from config.settings import load_settings
    >>> highest_levels(load_settings().slots)
    {'access_level': 'internal'}
    """
    return {
        n: r.levels[-1]
        for n, r in rules.items()
        if r.mode == "enforced" and r.match == "at_most" and r.levels
    }


def above(
    rules: Mapping[str, SlotRule], record: Mapping[str, Any], other: Mapping[str, Any]
) -> list[str]:
    """The payload fields on which some caller who may read ``record`` may not read
    ``other`` ([]: every reader of ``record`` reads ``other`` too), each enforced rule
    weighed over every value a caller could hold (its levels or values, the two records'
    own, none).

    >>> from config.settings import load_settings
    >>> rules = load_settings().slots
    >>> above(rules, {"access": "public"}, {"access": "internal", "tiers": ["pro"]})
    ['tiers', 'access']
    >>> above(rules, {"access": "internal", "tiers": ["pro"]}, {"access": "customer"})
    []
    """
    hidden = []
    for rule in rules.values():
        if rule.mode != "enforced":
            continue
        mine, theirs = record.get(rule.field), other.get(rule.field)
        if rule.match == "at_most":
            callers: list[str | None] = [None, *(rule.levels or [])]
        else:
            held = [v for field in (mine, theirs) for v in _as_list(field) if v]
            callers = [None, *(rule.values or []), *held]
        if any(_admitted(rule, c, mine) and not _admitted(rule, c, theirs) for c in callers):
            hidden.append(rule.field)
    return hidden


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def level_rules(rules: Mapping[str, SlotRule]) -> dict[str, SlotRule]:
    """The ordered enforced rules (``at_most``: the access level). What staff write in a
    conversation is judged on them: a plan (tier) is no level (``storage.replies``)."""
    return {n: r for n, r in rules.items() if r.mode == "enforced" and r.match == "at_most"}

"""Slots → Qdrant payload conditions. The security boundary of retrieval lives here.

* **Enforced** rules (tier, access level, customer, tenant by default) always produce a
  condition, even when the slot is missing: a missing slot falls back to the rule's
  ``default`` or to "only documents that are not restricted on this field".
* **Advisory** filters (product, language by default) come from slots or from the model; they
  can only narrow. An advisory filter that names an enforced slot or field is ignored and
  reported, never merged.

Usage::

    plan = build_filters(settings.slots, {"tier": "basic", "access_level": "customer"},
                         advisory={"product": "cloud", "access_level": "internal"})
    plan.condition        # enforced AND advisory
    plan.ignored          # ["access_level: enforced slots cannot be set as advisory filters"]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from config.settings import SlotRule
from storage.qdrant.store import AnyOf, Condition, Match, Missing, all_of


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


def _rule_condition(name: str, rule: SlotRule, value: str | None) -> tuple[Condition, str]:
    if rule.match == "at_most":
        levels = rule.levels or []
        level = value if value is not None else rule.default
        if level is None:
            return Missing(rule.field), f"{rule.field} absent"
        if level not in levels:
            raise SlotError(f"slot {name}: {level!r} is not one of {', '.join(levels)}")
        allowed = tuple(levels[: levels.index(level) + 1])
        return Match(rule.field, allowed), f"{rule.field} in {list(allowed)}"
    value = value if value is not None else rule.default
    if value is None:
        return Missing(rule.field), f"{rule.field} absent"
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
        if name not in rules and strict:
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
        condition, description = _rule_condition(name, asked, value)
        advisory_parts.append(condition)
        applied[name] = f"advisory: {description}"

    return FilterPlan(
        enforced=all_of(*enforced_parts),
        advisory=all_of(*advisory_parts),
        applied=applied,
        ignored=ignored,
    )

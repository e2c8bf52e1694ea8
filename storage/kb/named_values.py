"""The values of a slot the knowledge base's pages name: a team's own plan names are known.

A rule may list the values its slot takes (``tier: values: [basic, pro, enterprise]`` as
shipped): a value outside the list is refused, not turned into a filter that silently hides
every tiered page (``tier=enterprize``). A new team's pages name their own plans
(``tiers: [business]``): the values a rule accepts are the ones it lists **and** the ones the
knowledge base's pages name on its field, read from the store when the runtime is built. So
a team's plans work on the first run after ingesting them, a typo that no page names is still
refused, and ``ingest`` / ``sync`` say which values the pages name that the configuration does
not list (a typo in a page shows there too) and how to list them.

Usage::

    settings = with_named_values(settings, kb)      # the rules as the runtime applies them
    extra = unlisted(configured.slots, kb)          # {"tier": ["business"]}
    for line in advice(extra, configured.slots):    # what ingest and sync say
        print(line)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from config.settings import Settings, SlotRule

if TYPE_CHECKING:
    from storage.kb.knowledge_base import KnowledgeBase


def listing_rules(rules: Mapping[str, SlotRule]) -> dict[str, SlotRule]:
    """The rules that list their values (the others take any value)."""
    return {n: r for n, r in rules.items() if r.values is not None and r.match != "at_most"}


def unlisted(rules: Mapping[str, SlotRule], kb: KnowledgeBase) -> dict[str, list[str]]:
    """Per rule that lists its values: the values the knowledge base's pages name on its field
    that the rule does not list (sorted; rules with none left out)."""
    found: dict[str, list[str]] = {}
    for name, rule in listing_rules(rules).items():
        extra = sorted(set(kb.field_values(rule.field)) - set(rule.values or []))
        if extra:
            found[name] = extra
    return found


def with_named_values(settings: Settings, kb: KnowledgeBase) -> Settings:
    """``settings`` whose rules also accept the values the knowledge base's pages name."""
    extra = unlisted(settings.slots, kb)
    if not extra:
        return settings
    slots = {
        name: rule.model_copy(update={"values": [*(rule.values or []), *extra[name]]})
        if name in extra
        else rule
        for name, rule in settings.slots.items()
    }
    return settings.model_copy(update={"slots": slots})


def advice(extra: Mapping[str, list[str]], rules: Mapping[str, SlotRule]) -> list[str]:
    """What ``ingest`` and ``sync`` say about values the pages name that the config does not
    list: which, that they are accepted, and the line that lists them.

    >>> from config.settings import load_settings
    >>> line = advice({"tier": ["business"]}, load_settings().slots)[0]
    >>> line.startswith("the pages name tier values the configuration does not list: business.")
    True
    >>> "slots.tier.values: [basic, pro, enterprise, business] in config/assistant.yaml" in line
    True
    """
    lines = []
    for name, values in extra.items():
        listed = [*(rules[name].values or []), *values]
        env = ", ".join(f'"{v}"' for v in listed)
        lines.append(
            f"the pages name {name} values the configuration does not list: "
            f"{', '.join(values)}. Keys and customers on them are served (the pages name "
            f"them); if one is a typo, fix the page; to list them, set slots.{name}.values: "
            f"[{', '.join(listed)}] in config/assistant.yaml (or "
            f"SUPPORTCREW_SLOTS__{name.upper()}__VALUES='[{env}]')."
        )
    return lines

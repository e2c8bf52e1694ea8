"""The word lists and patterns the answer decision's features read, from one versioned data
file (storage/kb/assets/decision/rules.yaml), so a fitted model can name the rules it was
fitted with and start-up can refuse a mismatch.

Usage::

    RULES.courtesy          # frozenset({"thanks", "hello", ...})
    RULES.how_quantity.sub(r"\\1", "How long does it take?")   # 'How does it take?'
    RULES_VERSION           # '3f9c2a7d01be': the first 12 hex digits of the content's sha256
    check_rules("3f9c2a7d01be", "gate (gate.yaml)")   # raises ValueError on another version
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

RULES_FILE = Path(__file__).resolve().parents[1] / "storage/kb/assets/decision/rules.yaml"


@dataclass(frozen=True)
class Rules:
    """The parsed rule set (see rules.yaml for what each list is)."""

    courtesy: frozenset[str]
    small_talk: frozenset[str]  # courtesy included
    how_quantity: re.Pattern[str]
    what_means: re.Pattern[str]
    navigation_link: re.Pattern[str]
    navigation_words: int


def rules_version(content: dict[str, object]) -> str:
    """The version of a parsed rule set: its canonical JSON's sha256, 12 hex digits."""
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def load_rules(path: Path = RULES_FILE) -> tuple[Rules, str]:
    """The rule set of ``path`` and its version; a missing list or a bad pattern is an error
    naming the key."""
    content = yaml.safe_load(path.read_text(encoding="utf-8"))
    try:
        courtesy = frozenset(str(w) for w in content["courtesy"])
        rules = Rules(
            courtesy=courtesy,
            small_talk=courtesy | frozenset(str(w) for w in content["small_talk"]),
            how_quantity=re.compile(content["how_quantity"], re.IGNORECASE),
            what_means=re.compile(content["what_means"], re.IGNORECASE),
            navigation_link=re.compile(content["navigation_link"], re.IGNORECASE),
            navigation_words=int(content["navigation_words"]),
        )
    except KeyError as missing:
        raise ValueError(f"{path}: the rule set has no {missing.args[0]!r}") from None
    except re.error as error:
        raise ValueError(f"{path}: a pattern does not compile: {error}") from None
    return rules, rules_version(content)


RULES, RULES_VERSION = load_rules()


def check_rules(fitted_with: str, what: str) -> None:
    """Refuse a model fitted with another version of the rules (an empty version: a model
    that reads none of them, or one written by hand)."""
    if fitted_with and fitted_with != RULES_VERSION:
        raise ValueError(
            f"the {what} was fitted with rules {fitted_with}, but {RULES_FILE.name} is now "
            f"{RULES_VERSION}: refit it (python -m training.fit_decision --write) or restore the rules"
        )

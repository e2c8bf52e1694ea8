"""Translate storage conditions into a Qdrant library's filter objects, for either backend.

Each backend supplies a :class:`FilterDialect` of four constructors; the walk over
``AllOf`` / ``AnyOf`` / ``Match`` / ``Missing`` lives here once.

Usage::

    qdrant_filter = translate_filter(Match("access", ("public",)), EDGE_DIALECT)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from storage.qdrant.store import AllOf, AnyOf, Condition, Match, Missing


@dataclass(frozen=True)
class FilterDialect:
    must: Callable[[list[Any]], Any]
    should: Callable[[list[Any]], Any]
    match_one: Callable[[str, Any], Any]
    match_any: Callable[[str, Sequence[Any]], Any]
    is_empty: Callable[[str], Any]


def translate_filter(condition: Condition | None, dialect: FilterDialect) -> Any | None:
    """The library's Filter for ``condition`` (None stays None)."""
    if condition is None:
        return None
    return _filter(condition, dialect)


def _filter(condition: Condition, dialect: FilterDialect) -> Any:
    if isinstance(condition, AllOf):
        return dialect.must([_condition(c, dialect) for c in condition.conditions])
    if isinstance(condition, AnyOf):
        return dialect.should([_condition(c, dialect) for c in condition.conditions])
    return dialect.must([_condition(condition, dialect)])


def _condition(condition: Condition, dialect: FilterDialect) -> Any:
    if isinstance(condition, Match):
        values = list(condition.values)
        if len(values) == 1 or isinstance(values[0], bool):
            return dialect.match_one(condition.key, values[0])
        return dialect.match_any(condition.key, values)
    if isinstance(condition, Missing):
        return dialect.is_empty(condition.key)
    return _filter(condition, dialect)

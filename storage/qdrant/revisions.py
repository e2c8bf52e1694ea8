"""Compare-and-set of one record in Qdrant: each write carries a new revision and the last
few it replaced, and is applied only while the stored record still holds the revision the
writer read (:meth:`storage.qdrant.store.Store.update_if`, one atomic step in Qdrant). Read
back, a write has landed when its revision is stored or among those a later write replaced,
so a writer never takes a write that a faster writer built on for a lost one.

Usage::

    new = revised(current, {"count": 3})            # current: the payload read, or None
    store.update_if(name, point_of(new), expected(current))
    landed(read_again(), new)                       # True: applied; False: read and retry
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from storage.qdrant.store import Condition, Match, Missing

KEPT_REVS = 8  # revisions a record remembers: a write is recognised under 8 more on top


def revised(current: Mapping[str, Any] | None, changes: Mapping[str, Any]) -> dict[str, Any]:
    """``current`` with ``changes``, a new ``rev``, and the revision it replaces in ``revs``.

    >>> first = revised(None, {"n": 1})
    >>> second = revised(first, {"n": 2})
    >>> second["n"], second["revs"] == [first["rev"]], landed(second, first)
    (2, True, True)
    """
    base = current or {}
    read = base.get("rev")
    earlier = ([read] if read else []) + list(base.get("revs", []))
    return {**base, **changes, "rev": uuid.uuid4().hex, "revs": earlier[:KEPT_REVS]}


def expected(current: Mapping[str, Any]) -> Condition:
    """The condition under which a write built on ``current`` may replace it."""
    read = current.get("rev")
    return Match("rev", (read,)) if read else Missing("rev")


def landed(stored: Mapping[str, Any] | None, written: Mapping[str, Any]) -> bool:
    """Whether ``written`` was applied: it is stored, or a later write replaced it."""
    return stored is not None and (
        stored.get("rev") == written["rev"] or written["rev"] in stored.get("revs", [])
    )

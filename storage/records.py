"""Reading a stored record against its definition: a payload that does not fit is a
:class:`BrokenRecord` naming the record (its collection and key) and the fields at fault, where
it is read, never a ``KeyError`` three calls later. The pilot's records
(``service/domain/records.py``) and memory's turns (``storage/memory.py``) read through it.

Usage::

    TURN = TypeAdapter(StoredTurn)
    turn = parsed(TURN, point.payload, "sessions acme/c1/s1/0")
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import TypeAdapter, ValidationError

R = TypeVar("R")


class BrokenRecord(ValueError):
    """A stored record that does not fit its definition: says which record and which field."""


def parsed(kind: TypeAdapter[R], payload: object, record: str) -> R:
    """``payload`` read as ``kind``, or :class:`BrokenRecord` naming ``record`` (its
    collection and key) and the fields at fault.

    >>> from typing_extensions import TypedDict
    >>> class Mark(TypedDict):
    ...     rating: int
    >>> parsed(TypeAdapter(Mark), {"rating": "meh"}, "pilot_feedback acme/s1/0")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    storage.records.BrokenRecord: stored record pilot_feedback acme/s1/0 ... rating: Input should be ...
    """
    try:
        return kind.validate_python(payload)
    except ValidationError as exc:
        faults = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(record)'}: {e['msg']}" for e in exc.errors()
        )
        raise BrokenRecord(f"stored record {record} does not parse: {faults}") from None

"""The slot rules of a customer's session: which slots a request may set when it opens one
(listed in the rules, advisory, values the rules accept), which customer it may name, and
the slots its turns run under (the session's, the key's over them, the tenant).

Usage::

    check_new_session(pilot, who, customer_id=None, slots={"product": "router"})  # or 4xx
    accepted_slots(pilot, turn_slots(header, who))   # 422 when the rules now refuse one
"""

from __future__ import annotations

from collections.abc import Mapping

from service.auth import Caller
from service.context import PilotContext
from service.domain.records import SessionHeader
from service.errors import ApiError
from storage.retrieval.filters import SlotError, build_filters


def check_new_session(
    pilot: PilotContext, who: Caller, customer_id: str | None, slots: Mapping[str, str]
) -> None:
    """Refuse a new session's request: a slot the rules do not list (422) or one the key
    enforces (403), a value the rules refuse (422), a customer named by a key that may not
    name customers, a widget session's token opening another session (403)."""
    rules = pilot.settings.slots
    for name in slots:
        if name not in rules:
            raise ApiError(
                422,
                "unknown_slot",
                f"unknown slot {name!r}",
                {"known": [*sorted(rules)]},
                field=f"slots.{name}",
            )
        if rules[name].mode == "enforced":
            raise ApiError(
                403,
                "enforced_slot",
                f"slot {name!r} is set by your API key, not by requests",
                field=f"slots.{name}",
            )
    accepted_slots(pilot, {**slots, **who.slots})
    if customer_id and not who.trust_customer_id:
        raise ApiError(
            403, "customer_not_allowed", "this API key cannot name customers", field="customer_id"
        )
    if who.session_id is not None:
        raise ApiError(
            403,
            "session_token",
            "a widget session's token cannot open sessions: POST /v1/widget/sessions",
        )


def accepted_slots(pilot: PilotContext, slots: Mapping[str, str]) -> None:
    """422 naming the slot, its value and the values it takes, when the rules (as the runtime
    applies them: listed, and named by the knowledge base's pages) refuse one of ``slots``: a
    request that would fail every turn is told so, never answered "trouble reaching"."""
    try:
        build_filters(pilot.runtime.settings.slots, slots, strict=False)
    except SlotError as exc:
        raise ApiError(422, "invalid_slot", str(exc), field="slots") from None


def turn_slots(header: SessionHeader, who: Caller) -> dict[str, str]:
    """The slots a session's turns run under: the session's, the caller's key's over them, and
    the caller's tenant (stored on every turn, a message to a person too: what the gap
    report reads as what its asker could read)."""
    slots = {**header["slots"], **who.slots}
    if who.tenant:
        slots["tenant"] = who.tenant
    return slots

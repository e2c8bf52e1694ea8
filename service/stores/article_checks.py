"""An article's last check, kept at the level it ran under: its rows quote what the checking
key's slots could read (its answers, the pages it cited, the replayed questions' replies), so
they are stored with that key's reach as the knowledge base's fields (``access``, ``tiers``:
:func:`storage.retrieval.filters.document_fields`) and read back through the reader's slots,
filtered in the store like every other staff read. A lead below the checker's level reads no
row of it (``hidden``), and runs the check again under its own slots to publish.

Usage::

    checks = ArticleChecks(store, encoders, settings.slots)
    checks.write("acme", "shipping", check, {"access_level": "internal", "tenant": "acme"})
    checks.read("acme", ["shipping"], {"access_level": "public", "tenant": "acme"})  # {}
    checks.exists("acme", "shipping")                                            # True
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from config.settings import SlotRule
from service.domain.records import CHECK, ArticleCheck
from storage.qdrant.store import AllOf, Condition, Match, PointData, Store, ensure_records
from storage.records import parsed
from storage.retrieval.filters import build_filters, document_fields

if TYPE_CHECKING:
    from storage.kb.embeddings import Encoders

CHECKS = "pilot_article_checks"
_NAMESPACE = uuid.UUID("5e2b7c1d-3f4a-4b6c-8d9e-0a1b2c3d4e5f")


def reach_rules(rules: Mapping[str, SlotRule]) -> dict[str, SlotRule]:
    """The enforced rules a staff record's reach is stamped with: all but the tenant (the
    records are the tenant's already) and the customer (staff read across customers)."""
    return {
        n: r
        for n, r in rules.items()
        if r.mode == "enforced" and r.field not in ("tenant", "customer_id")
    }


def within(
    rules: Mapping[str, SlotRule], tenant: str, slots: Mapping[str, str] | None, *more: Condition
) -> Condition:
    """The tenant's records (matched as stamped, ``""`` for no tenant) that a reader with
    ``slots`` may read, as a search under them would decide on every other enforced field
    (None: every record of the tenant, for the service itself)."""
    parts: list[Condition] = [Match("tenant", (tenant,)), *more]
    if slots is not None:
        reader = build_filters(reach_rules(rules), slots, strict=False).enforced
        if reader is not None:
            parts.append(reader)
    return AllOf(tuple(parts))


class ArticleChecks:
    """The last check of each article, one record per tenant and slug, stamped with the
    reach of the key that ran it."""

    def __init__(self, store: Store, encoders: Encoders, rules: Mapping[str, SlotRule]) -> None:
        self.store, self.rules = store, rules
        self.vector = encoders.dense.encode(["article check"])[0].dense
        ensure_records(store, CHECKS, encoders.dense.dim, ("tenant", "slug"))

    def _id(self, tenant: str, slug: str) -> str:
        return str(uuid.uuid5(_NAMESPACE, f"{tenant}/{slug}"))

    def write(self, tenant: str, slug: str, check: ArticleCheck, ran_under: Mapping[str, str]) -> None:
        """Keep ``check`` as the article's last, readable under slots that reach as far as
        ``ran_under`` (the checking key's enforced slots)."""
        reach = {k: v for k, v in ran_under.items() if k in reach_rules(self.rules)}
        payload = {
            **document_fields(reach_rules(self.rules), reach),
            "tenant": tenant,
            "slug": slug,
            "check": dict(check),
            "ran_under": reach,
        }
        self.store.upsert(
            CHECKS, [PointData(id=self._id(tenant, slug), dense=self.vector, payload=payload)]
        )

    def read(
        self, tenant: str, slugs: Sequence[str] | None, slots: Mapping[str, str] | None
    ) -> dict[str, ArticleCheck]:
        """The last checks of the tenant's articles ``slugs`` (None: all) that ``slots`` may
        read (None: every one), by slug."""
        more = (Match("slug", tuple(slugs)),) if slugs is not None else ()
        if slugs is not None and not slugs:
            return {}
        found = self.store.scroll(CHECKS, within(self.rules, tenant, slots, *more))
        return {
            str(r.payload["slug"]): parsed(
                CHECK, r.payload["check"], f"{CHECKS} {tenant}/{r.payload['slug']}"
            )
            for r in found
        }

    def exists(self, tenant: str, slug: str) -> bool:
        """Whether the article has a last check at all (at any level)."""
        return bool(self.read(tenant, [slug], None))

    def clear(self, tenant: str, slug: str) -> None:
        """The article changed: its last check no longer speaks for it."""
        self.store.delete(CHECKS, AllOf((Match("tenant", (tenant,)), Match("slug", (slug,)))))

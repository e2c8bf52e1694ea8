"""Where the knowledge base comes from: the ``sources:`` of assistant.yaml, re-run by
``main.py sync`` (and by the pilot every ``pilot.sync_every_minutes``).

Three kinds:

* ``folder``: Markdown, text, HTML, PDF files (``main.py ingest``'s rules);
* ``site``: a help-center website, from its sitemap (``.../sitemap.xml``) or a start URL;
* ``zendesk``: a Zendesk Guide articles export (the Help Center API's JSON).

Slots come from the source: ``slots`` rules by URL path for a site (applied by
``storage/kb/sources/urls.page_slots``, to every spelling of a path), ``segments`` (user
segment id) and ``labels`` for a Zendesk export. Every rule that matches adds its slots; a
later rule wins a key an earlier one set.

In assistant.yaml::

    sources:
      - kind: site
        location: https://help.example.com/sitemap.xml
        slots:
          - {path: /enterprise/, tiers: [enterprise]}
          - {path: /internal/, access: internal}
      - kind: zendesk
        location: exports/articles.json
        segments: {"360001": {access: customer}}
        labels: {sso: {product: sso}}

Usage::

    source = SourceSettings(kind="site", location="https://help.example.com/sitemap.xml")
    source.slots                                          # [] without rules
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class DocumentSlots(BaseModel):
    """The slots a source gives its documents (the front-matter keys of a Markdown page)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tiers: list[str] | None = Field(None, min_length=1)
    access: Literal["public", "customer", "internal"] | None = None
    product: str | None = None
    language: str | None = None
    tenant: str | None = None

    def as_metadata(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class PathSlots(DocumentSlots):
    """Slots for the pages whose URL path starts with ``path`` (``/enterprise/``)."""

    path: str = Field(min_length=1)

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError(f"a URL path starts with '/' (got {value!r})")
        return value

    def as_metadata(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True, exclude={"path"})


class SourceSettings(BaseModel):
    """One source of the knowledge base (see the module docstring).

    ``max_pages``: a site's cap; ``concurrency`` requests at once and at most
    ``requests_per_second`` in all; a page over ``max_page_bytes`` or slower than
    ``timeout_s`` is reported and the sync does not complete (nothing is pruned then).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["folder", "site", "zendesk"]
    location: str = Field(min_length=1)
    name: str = ""
    slots: list[PathSlots] = Field(default_factory=list)
    segments: dict[str, DocumentSlots] = Field(default_factory=dict)
    labels: dict[str, DocumentSlots] = Field(default_factory=dict)
    prune: bool = True
    max_pages: int = Field(2000, ge=1, le=100_000)
    concurrency: int = Field(4, ge=1, le=32)
    requests_per_second: float = Field(8.0, gt=0, le=1000)
    max_page_bytes: int = Field(2_000_000, ge=1000, le=50_000_000)
    timeout_s: float = Field(10.0, gt=0, le=120)

    @model_validator(mode="after")
    def _fits_its_kind(self) -> SourceSettings:
        if self.kind == "site":
            parts = urlsplit(self.location)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(f"a site's location is an http(s) URL (got {self.location!r})")
        elif self.location.startswith(("http://", "https://")):
            raise ValueError(f"a {self.kind}'s location is a path, not a URL ({self.location!r})")
        if self.slots and self.kind != "site":
            raise ValueError("slots by URL path apply to a site; use segments / labels for zendesk")
        if (self.segments or self.labels) and self.kind != "zendesk":
            raise ValueError("segments and labels apply to a zendesk export")
        return self

    @property
    def label(self) -> str:
        """How reports name the source."""
        return self.name or self.location

"""Read knowledge-base files into :class:`Document` objects.

Supported: Markdown with YAML front matter (``.md``), plain text (``.txt``), HTML (``.html``,
``.htm``, text extracted with BeautifulSoup), PDF (``.pdf``, pypdf) and BEIR ``corpus.jsonl``.

Front-matter keys: ``id``, ``title``, ``url``, ``product``, ``tiers`` (list; absent = every tier),
``access`` (``public`` < ``customer`` < ``internal``; absent = public), ``language``, and the
scoping keys ``customer_id`` and ``tenant``. Anything else is kept as extra metadata.

Usage::

    for doc in read_path(Path("examples/kb/billing/refunds.md"), root=Path("examples/kb")):
        print(doc.source_id, doc.title, doc.metadata["access"])
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import frontmatter
import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

SUPPORTED_SUFFIXES = (".md", ".markdown", ".txt", ".html", ".htm", ".pdf", ".jsonl")


SAFE_URL_SCHEMES = ("http", "https")


class DocumentError(ValueError):
    """A file cannot be ingested; the message says why (the rest of a batch still lands)."""


class FrontMatter(BaseModel):
    """The validated metadata of one document."""

    model_config = ConfigDict(extra="allow")

    id: str | None = None
    title: str | None = None
    url: str | None = None
    product: str | None = None
    tiers: list[str] | None = None
    access: Literal["public", "customer", "internal"] = "public"
    language: str | None = None
    customer_id: str | None = None
    tenant: str | None = None

    @field_validator("id", "title", "url", "product", "language", "customer_id", "tenant", mode="before")
    @classmethod
    def _scalar_to_str(cls, value: Any) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        return value

    @field_validator("tiers", mode="before")
    @classmethod
    def _tiers_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [value]
        if isinstance(value, list) and not value:
            # Qdrant's is-empty matches [], so the document would be open to every tier
            raise ValueError(
                "an empty list would open the document to every tier; name the "
                "tiers, or leave tiers out to mean every tier"
            )
        return value


@dataclass
class Document:
    source_id: str
    title: str
    text: str
    url: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    origin: str = ""
    warnings: list[str] = field(default_factory=list)
    # a fetched page's HTTP validators (``etag``, ``last_modified``): stored beside its chunks
    # for the next sync's conditional request, not part of its content
    validators: dict[str, str] = field(default_factory=dict)
    # the sync source that fetched it (a site's normalised location): what that source prunes,
    # stored beside its chunks as ``sync_source``, not part of its content
    sync_source: str | None = None

    @property
    def content_hash(self) -> str:
        blob = json.dumps([self.title, self.url, self.text, self.metadata], sort_keys=True, default=str)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


def _validated(meta: dict[str, Any], where: str) -> FrontMatter:
    try:
        return FrontMatter(**meta)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise DocumentError(f"{where}: bad front matter: {problems}") from None


def safe_link(url: str) -> bool:
    """An http(s) link, or a path on the service that serves it (``/help/articles/...``: a
    desk article published without ``pilot.public_url``); never ``javascript:``, ``data:``
    or a scheme-relative ``//host``.

    >>> [safe_link(u) for u in ("https://x.test/a", "/help/a", "//evil.test/a", "javascript:x")]
    [True, True, False, False]
    """
    link = url.strip()
    if urlsplit(link).scheme.lower() in SAFE_URL_SCHEMES:
        return True
    return link.startswith("/") and not link.startswith("//") and "\\" not in link


def _make_document(
    text: str, meta: FrontMatter, default_id: str, default_title: str, origin: str
) -> Document:
    if not text.strip():
        raise DocumentError(f"{origin}: empty document")
    fields = meta.model_dump(exclude_none=True)
    source_id = fields.pop("id", None) or default_id
    title = fields.pop("title", None) or default_title
    url = fields.pop("url", None)
    warnings = []
    if url is not None and not safe_link(url):
        warnings.append(f"{origin}: url {url[:80]!r} dropped: only http(s) links are kept, and paths")
        url = None
    return Document(
        source_id=source_id,
        title=title,
        text=text,
        url=url,
        metadata=fields,
        origin=origin,
        warnings=warnings,
    )


def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DocumentError(f"{path}: unreadable ({exc.strerror or exc})") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def _title_from_markdown(body: str, fallback: str) -> str:
    for line in body.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return fallback


def _read_markdown(path: Path, source_id: str) -> Document:
    text = _read_text(path)
    try:
        post = frontmatter.loads(text)
    except yaml.YAMLError as exc:
        message = f"{path}: front matter is not valid YAML ({exc})".replace("\n", " ")
        raise DocumentError(message) from None
    if not isinstance(post.metadata, dict):
        raise DocumentError(f"{path}: front matter must be a mapping")
    meta = _validated(dict(post.metadata), str(path))
    body = post.content
    return _make_document(body, meta, source_id, _title_from_markdown(body, path.stem), str(path))


def _read_plain(path: Path, source_id: str) -> Document:
    return _make_document(_read_text(path), FrontMatter(), source_id, path.stem, str(path))


def _read_html(path: Path, source_id: str) -> Document:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(_read_text(path), "html.parser")
    for tag in soup(["script", "style", "nav", "footer", "noscript"]):
        tag.decompose()
    meta: dict[str, Any] = {}
    for tag in soup.find_all("meta"):
        name, content = tag.get("name"), tag.get("content")
        if name and content and name in FrontMatter.model_fields:
            text = str(content)
            meta[name] = [t.strip() for t in text.split(",")] if name == "tiers" else text
    title = soup.title.get_text(strip=True) if soup.title else ""
    heading = soup.find("h1")
    title = title or (heading.get_text(strip=True) if heading else path.stem)
    body = soup.body or soup
    lines = [line.strip() for line in body.get_text("\n").splitlines()]
    text = "\n".join(line for line in lines if line)
    return _make_document(text, _validated(meta, str(path)), source_id, title, str(path))


def _read_pdf(path: Path, source_id: str) -> Document:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(str(path))
        pages = [page.extract_text() or "" for page in reader.pages]
        info_title = (reader.metadata.title if reader.metadata else None) or path.stem
    except (PdfReadError, OSError, ValueError) as exc:
        raise DocumentError(f"{path}: unreadable PDF ({exc})") from None
    return _make_document("\n\n".join(pages), FrontMatter(), source_id, str(info_title), str(path))


def read_beir_corpus(path: Path) -> Iterator[Document]:
    """Yield the documents of a BEIR ``corpus.jsonl`` (``_id``, ``title``, ``text``)."""
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise DocumentError(f"{path}: unreadable ({exc.strerror or exc})") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                doc_id, text = str(row["_id"]), str(row.get("text") or "")
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise DocumentError(f"{path}:{number}: not a BEIR corpus row ({exc})") from None
            title = str(row.get("title") or "")
            yield Document(source_id=doc_id, title=title, text=text or title, origin=f"{path}#{doc_id}")


_READERS = {
    ".md": _read_markdown,
    ".markdown": _read_markdown,
    ".txt": _read_plain,
    ".html": _read_html,
    ".htm": _read_html,
    ".pdf": _read_pdf,
}


def read_file(path: Path, root: Path) -> Iterator[Document]:
    """Yield the document(s) of one file; ``source_id`` defaults to the path below ``root``."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        yield from read_beir_corpus(path)
        return
    reader = _READERS.get(suffix)
    if reader is None:
        raise DocumentError(f"{path}: unsupported file type {suffix or '(none)'}")
    try:
        relative = path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        relative = path.name
    doc = reader(path, relative)
    doc.origin = str(path.resolve())
    yield doc


def count_documents(files: list[tuple[Path, Path]]) -> int:
    """How many documents ``files`` hold (a BEIR corpus holds one per line)."""
    total = 0
    for path, _ in files:
        if path.suffix.lower() == ".jsonl" and path.is_file():
            with path.open("rb") as handle:
                total += sum(1 for line in handle if line.strip())
        else:
            total += 1
    return total


def discover(paths: list[Path]) -> list[tuple[Path, Path]]:
    """Expand files and folders into ``(file, root)`` pairs of supported files, sorted."""
    found: list[tuple[Path, Path]] = []
    for path in paths:
        if path.is_dir():
            for file in sorted(path.rglob("*")):
                if file.is_file() and file.suffix.lower() in SUPPORTED_SUFFIXES:
                    found.append((file, path))
        else:
            found.append((path, path.parent))
    return found

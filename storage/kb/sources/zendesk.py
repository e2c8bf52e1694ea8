"""Read a Zendesk Guide articles export (the Help Center API's JSON) into documents.

The export is what ``GET /api/v2/help_center/{locale}/articles.json`` returns: an object
with ``articles`` (one page of them), a list of such pages, or a list of articles. Each
article has ``id``, ``title``, ``body`` (HTML), ``html_url``, ``locale``, ``label_names``,
``user_segment_id`` (null: everyone), ``section_id`` and ``draft``.

* drafts are skipped;
* the article's ``html_url`` is its id and its citation;
* its body's headings, paragraphs and list items become Markdown (sections kept);
* slots: ``segments`` maps a user segment id to slots, ``labels`` a label to slots; an
  article whose user segment is not mapped is ``access: internal`` (it is not public, and
  nothing says who may see it), with a warning; the locale gives the language (``en-us``
  -> ``en``).

Usage::

    documents, skipped = read_export(Path("articles.json"), source)
    documents[0].source_id, documents[0].metadata   # 'https://help.../articles/360...', {...}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from config.sources import SourceSettings
from storage.kb.documents import Document, DocumentError

_BLOCKS = {"h1": "# ", "h2": "## ", "h3": "### ", "h4": "#### ", "li": "- ", "p": "", "pre": ""}


def body_markdown(html: str) -> str:
    """An article body as Markdown: headings, paragraphs, list items and table rows, in order.

    >>> body_markdown("<h2>Reset</h2><p>Open <b>Settings</b>.</p><ul><li>One</li></ul>")
    '## Reset\\n\\nOpen Settings.\\n\\n- One'
    """
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html or "", "html.parser")
    for tag in soup(["script", "style"]):
        tag.decompose()
    blocks: list[str] = []
    for element in soup.find_all([*_BLOCKS, "tr"]):
        if element.find_parent(["li", "p", "pre", "tr"]) is not None:
            continue  # inside a block already taken whole
        if element.name == "tr":
            cells = [c.get_text(" ", strip=True) for c in element.find_all(["td", "th"])]
            text = " | ".join(c for c in cells if c)
        else:
            text = " ".join(element.get_text(" ", strip=True).split())
        if text:
            blocks.append(_BLOCKS.get(element.name, "") + text)
    if not blocks:  # a body of bare text
        blocks = [" ".join(soup.get_text(" ", strip=True).split())]
    return "\n\n".join(b for b in blocks if b).replace(" .", ".").replace(" ,", ",")


def _articles(data: Any, where: Path) -> list[dict[str, Any]]:
    pages = data if isinstance(data, list) else [data]
    articles: list[dict[str, Any]] = []
    for page in pages:
        if isinstance(page, dict) and isinstance(page.get("articles"), list):
            articles.extend(page["articles"])
        elif isinstance(page, dict) and "html_url" in page:
            articles.append(page)
        else:
            raise DocumentError(f"{where}: not a Zendesk articles export (no 'articles' list)")
    return articles


def article_slots(article: dict[str, Any], source: SourceSettings) -> tuple[dict[str, Any], list[str]]:
    """The slots of one article and any warning about them."""
    slots: dict[str, Any] = {}
    warnings: list[str] = []
    locale = str(article.get("locale") or "")
    if locale:
        slots["language"] = locale.split("-")[0].lower()
    segment = article.get("user_segment_id")
    if segment is not None:
        mapped = source.segments.get(str(segment))
        if mapped is None:
            slots["access"] = "internal"
            warnings.append(
                f"article {article.get('id')}: user segment {segment} is not in the source's "
                "segments: stored as access internal"
            )
        else:
            slots.update(mapped.as_metadata())
    for label in article.get("label_names") or []:
        if str(label) in source.labels:
            slots.update(source.labels[str(label)].as_metadata())
    return slots, warnings


def export_origin(path: Path) -> str:
    """The origin prefix of the documents of one export file (what pruning matches)."""
    return f"zendesk:{path.resolve()}#"


def read_export(path: Path, source: SourceSettings) -> tuple[list[Document], list[tuple[str, str]]]:
    """The published articles of the export at ``path`` and the articles skipped with why
    (the others still land); DocumentError when the file is not an export at all."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DocumentError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DocumentError(f"{path}: unreadable ({exc})") from None
    except json.JSONDecodeError as exc:
        raise DocumentError(f"{path}: not JSON ({exc})") from None
    documents: list[Document] = []
    skipped: list[tuple[str, str]] = []
    for number, article in enumerate(_articles(data, path), start=1):
        if not isinstance(article, dict):
            skipped.append((f"{path}: article {number}", "not an object"))
            continue
        where = f"{path}: article {article.get('id', number)}"
        if article.get("draft"):
            continue
        url = str(article.get("html_url") or "")
        text = body_markdown(str(article.get("body") or ""))
        if not url.startswith(("http://", "https://")):
            skipped.append((where, "no http(s) html_url to cite"))
        elif not text.strip():
            skipped.append((where, "empty body"))
        else:
            slots, warnings = article_slots(article, source)
            documents.append(
                Document(
                    source_id=url,
                    title=str(article.get("title") or url),
                    text=text,
                    url=url,
                    metadata=slots,
                    origin=export_origin(path) + str(article.get("id", number)),
                    warnings=warnings,
                )
            )
    return documents, skipped

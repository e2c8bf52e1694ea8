"""A published desk article as a page a browser shows: its Markdown rendered by markdown-it
(CommonMark) with raw HTML off, so a tag written in the article is shown as text; a bare web
address is a link as a written one is; links keep markdown-it's own check (no
``javascript:``). The page carries a Content-Security-Policy that runs no script, loads
nothing from anywhere and is never framed.

Usage::

    html = article_page("Shipping to Mars", "# Shipping to Mars\\n\\nParcels arrive in 3 weeks.")
    wants_html("text/html,application/xhtml+xml,*/*;q=0.8")   # True: a browser opening a link
"""

from __future__ import annotations

import base64
import hashlib
import html

from markdown_it import MarkdownIt

# bare web addresses become links too (linkify; markdown-it's link check still applies)
_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": True}).enable("linkify")
_STYLE = (
    "body{font:16px/1.5 system-ui,sans-serif;color:#1d1d1f;max-width:44rem;margin:2rem auto;"
    "padding:0 1rem}code{background:#f3f4f6;padding:0 .2rem;border-radius:3px}"
    "pre{overflow-x:auto;background:#f3f4f6;padding:.75rem}"
)
_STYLE_HASH = base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode()
# its own style only (by hash): no script, no image, font or frame from anywhere
PAGE_HEADERS = {
    "Content-Security-Policy": (
        f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; frame-ancestors 'none'; "
        "base-uri 'none'; form-action 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Vary": "Accept",  # the same address is Markdown or this page by what the client accepts
}


def wants_html(accept: str) -> bool:
    """Whether an ``Accept`` header names HTML (a browser following a link does; an API
    client sending ``*/*`` or nothing gets the Markdown).

    >>> wants_html("text/html,application/xhtml+xml,*/*;q=0.8"), wants_html("*/*"), wants_html("")
    (True, False, False)
    >>> wants_html("TEXT/HTML"), wants_html("text/html;q=0, */*")
    (True, False)
    """
    for part in accept.lower().split(","):
        kind, *params = [p.replace(" ", "") for p in part.split(";")]
        if kind == "text/html":
            weight = next((p[2:] for p in params if p.startswith("q=")), "1")
            try:
                return float(weight) > 0
            except ValueError:  # a weight no browser sends: not a request for HTML
                return False
    return False


def article_page(title: str, markdown: str) -> str:
    """The whole page: ``title`` (escaped) and the article rendered.

    >>> page = article_page("A <b>", "# Mars\\n\\n<script>alert(1)</script> [x](javascript:alert(1))")
    >>> "<h1>Mars</h1>" in page, "<script>" in page, 'href="javascript' in page, "A &lt;b&gt;" in page
    (True, False, False, True)
    >>> '<a href="https://help.example.com/x">' in article_page("x", "See https://help.example.com/x.")
    True
    """
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body><main>{_MARKDOWN.render(markdown)}</main></body></html>\n"
    )

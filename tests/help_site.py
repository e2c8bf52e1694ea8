"""A small help-center website on 127.0.0.1, for the sync tests and bench/site_sync.py: the
Markdown pages of a folder (examples/kb) rendered as HTML with navigation, a cookie banner and
a footer, a sitemap, robots.txt (``Disallow: /internal/``), ETags with 304s, and a log of every
request. Pages can be changed, added and removed while it runs; a few paths misbehave on
purpose (``add_trap``). Like nginx, it serves a request's path percent-decoded with its dot
segments removed (``/public/../%69nternal/x.html`` is ``/internal/x.html``), and logs that path.

Usage::

    with HelpSite.from_folder(Path("examples/kb")) as site:
        site.url("/sitemap.xml")            # http://127.0.0.1:PORT/sitemap.xml
        site.pages["/billing/refunds.html"] = ("Refunds", "# Refunds\\n\\nNew text.")
        site.requests                       # ["/robots.txt", "/sitemap.xml", ...]
"""

from __future__ import annotations

import hashlib
import html
import posixpath
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from urllib.parse import unquote

import frontmatter

ROBOTS = "User-agent: *\nDisallow: /internal/\n"
NAV = (
    '<nav><a href="/">Home</a> <a href="/billing/refunds.html">Billing</a> '
    '<a href="/sso/saml-setup.html">SSO</a></nav>'
)
BANNER = (
    '<div class="cookie-banner">We use cookies to improve your experience. '
    "<button>Accept all cookies</button></div>"
)
FOOTER = "<footer>(c) 2026 CloudDesk Inc. Privacy policy. Terms of service. Status page.</footer>"


def inline_html(text: str) -> str:
    """Escaped text with ``**bold**`` as <strong>."""
    return re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", html.escape(text))


def markdown_html(text: str) -> str:
    """Headings, list items and paragraphs of simple Markdown as HTML."""
    blocks: list[str] = []
    for block in text.strip().split("\n\n"):
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        if not lines:
            continue
        if lines[0].startswith("#"):
            level = len(lines[0]) - len(lines[0].lstrip("#"))
            blocks.append(f"<h{level}>{html.escape(lines[0].lstrip('#').strip())}</h{level}>")
            lines = lines[1:]
        items = [line[2:] for line in lines if line.startswith(("- ", "* "))]
        if items and len(items) == len(lines):
            blocks.append("<ul>" + "".join(f"<li>{inline_html(i)}</li>" for i in items) + "</ul>")
        elif lines:
            blocks.append(f"<p>{inline_html(' '.join(lines))}</p>")
    return "\n".join(blocks)


def page_html(title: str, markdown: str) -> str:
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)} | CloudDesk Help"
        f"</title></head><body>{BANNER}{NAV}<main><article>{markdown_html(markdown)}</article></main>"
        f"{FOOTER}</body></html>"
    )


Trap = Callable[[BaseHTTPRequestHandler], None]


class HelpSite:
    """The site (see the module docstring); ``pages`` maps a path to (title, Markdown)."""

    def __init__(self, pages: dict[str, tuple[str, str]]) -> None:
        self.pages = dict(pages)
        self.traps: dict[str, Trap] = {}
        self.listed_extra: list[str] = []  # paths the sitemap lists besides the pages
        self.requests: list[str] = []
        self.served: list[str] = []  # pages sent whole (200), not answered 304
        self.sitemap_body: bytes | None = None  # set to serve something else as the sitemap
        self.sitemaps: dict[str, list[str]] = {}  # more sitemaps: their path -> the paths listed
        self.robots = ROBOTS
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @classmethod
    def from_folder(cls, folder: Path) -> HelpSite:
        pages = {}
        for path in sorted(folder.rglob("*.md")):
            post = frontmatter.load(path)
            relative = path.relative_to(folder).with_suffix(".html").as_posix()
            pages[f"/{relative}"] = (str(post.get("title") or path.stem), post.content)
        return cls(pages)

    def url(self, path: str) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}{path}"

    def add_trap(self, path: str, trap: Trap, listed: bool = True) -> None:
        """Serve ``path`` with ``trap``; ``listed``: the sitemap lists it."""
        self.traps[path] = trap
        if listed:
            self.listed_extra.append(path)

    def fetched(self, path: str) -> int:
        """How many requests asked for ``path``."""
        return self.requests.count(path)

    def sitemap(self, listed: list[str] | None = None) -> bytes:
        if self.sitemap_body is not None and listed is None:
            return self.sitemap_body
        paths = [*self.pages, *self.listed_extra] if listed is None else listed
        urls = "".join(f"<url><loc>{html.escape(self.url(p))}</loc></url>" for p in paths)
        return (
            '<?xml version="1.0" encoding="UTF-8"?><urlset '
            f'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
        ).encode()

    def home(self) -> str:
        links = "".join(
            f'<li><a href="{p}">{html.escape(t)}</a></li>' for p, (t, _) in self.pages.items()
        )
        return (
            f"<html><head><title>CloudDesk Help</title></head><body>{NAV}<main>"
            f"<h1>CloudDesk Help</h1><ul>{links}</ul></main>{FOOTER}</body></html>"
        )

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def send(self, status: int, body: bytes, kind: str, etag: str = "") -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                if etag:
                    self.send_header("ETag", etag)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                path = served_path(self.path)
                site.requests.append(path)
                if path in site.traps:
                    site.traps[path](self)
                elif path == "/robots.txt":
                    self.send(200, site.robots.encode(), "text/plain")
                elif path == "/sitemap.xml":
                    self.send(200, site.sitemap(), "application/xml")
                elif path in site.sitemaps:
                    self.send(200, site.sitemap(site.sitemaps[path]), "application/xml")
                elif path == "/":
                    self.send(200, site.home().encode(), "text/html; charset=utf-8")
                elif path in site.pages:
                    body = page_html(*site.pages[path]).encode()
                    etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
                    if self.headers.get("If-None-Match") == etag:
                        self.send_response(304)
                        self.send_header("ETag", etag)
                        self.end_headers()
                        return
                    site.served.append(path)
                    self.send(200, body, "text/html; charset=utf-8", etag)
                else:
                    self.send(404, b"<html><body>Not found</body></html>", "text/html")

        return Handler

    def __enter__(self) -> HelpSite:
        self.thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.server.shutdown()
        self.server.server_close()


def served_path(target: str) -> str:
    """The path a request asks for, as nginx serves it: decoded, dot segments removed.

    >>> served_path("/public/../%69nternal/keys.html?x=1"), served_path("/a/")
    ('/internal/keys.html', '/a/')
    """
    path = unquote(target.split("?")[0])
    normal = posixpath.normpath(path) if path not in ("", "/") else "/"
    return normal + ("/" if path.endswith("/") and normal != "/" else "")


def slow(seconds: float) -> Trap:
    def trap(handler: BaseHTTPRequestHandler) -> None:
        time.sleep(seconds)
        handler.send_response(200)
        handler.end_headers()

    return trap


def redirect(target: str) -> Trap:
    def trap(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(302)
        handler.send_header("Location", target)
        handler.end_headers()

    return trap


def huge(size: int) -> Trap:
    def trap(handler: BaseHTTPRequestHandler) -> None:
        body = b"<html><body><p>" + b"a " * (size // 2) + b"</p></body></html>"
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.end_headers()  # no Content-Length: the cap holds on the bytes read
        handler.wfile.write(body)

    return trap


def trickle(seconds: float, every_s: float) -> Trap:
    """A page that sends one byte every ``every_s`` for ``seconds`` (each read is quick: only
    a deadline on the whole page stops it); it stops when the client goes."""

    def trap(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.end_headers()
        handler.wfile.flush()
        ends = time.monotonic() + seconds
        try:
            while time.monotonic() < ends:
                handler.wfile.write(b" ")
                handler.wfile.flush()
                time.sleep(every_s)
            handler.wfile.write(b"<html><body><p>Finally here.</p></body></html>")
        except OSError:  # the client hung up
            return

    return trap

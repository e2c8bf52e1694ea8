"""Fetch a help-center website into documents: polite, incremental, on the site only.

* the pages come from the sitemap (``.../sitemap.xml``, a sitemap index followed) or, for a
  start URL, from its links, breadth first, on the same origin, at most ``max_pages``;
* ``robots.txt`` is honoured (a disallowed page is never requested);
* at most ``concurrency`` requests at once and ``requests_per_second`` in all;
* a page stored before is asked for conditionally (``If-None-Match`` / ``If-Modified-Since``
  from its stored ETag / Last-Modified): a 304 costs no download and no encoding;
* the main content is extracted with trafilatura (navigation, footers and cookie banners
  stay out; headings kept as Markdown, so chunks keep their sections); the page URL is the
  document id and its citation;
* every URL (sitemap entries, links, redirect targets) is normalised first (RFC 3986:
  ``storage/kb/sources/urls.py``), so the same-site check, ``robots.txt`` and the slot rules
  see the page the server will serve; a redirect is checked like a link (on the site, not
  disallowed) and the slot rules apply to where it lands;
* a page has ``timeout_s`` in all (the whole response, redirects included, not each read):
  a server that trickles bytes cannot hold the sync;
* a page that fails (a 404, a timeout, a redirect off the site, over the size cap, not HTML)
  is reported by URL and the fetch is incomplete: the caller then prunes nothing;
* crawling from a start URL, the pages stored before are asked for too (an unchanged page's
  304 has no links to follow): one that answers 404 / 410 and that no link reaches is gone.

Usage::

    fetched = fetch_site(source, known=stored_validators)
    fetched.documents, fetched.unchanged, fetched.failures, fetched.requests
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urldefrag, urljoin, urlsplit, urlunsplit
from urllib.robotparser import RobotFileParser

import httpx

from config.sources import SourceSettings
from storage.kb.documents import Document
from storage.kb.sources.urls import comparable_path, normal_url, page_slots, same_site

USER_AGENT = "supportcrew-sync/1.0"
HTML_TYPES = ("text/html", "application/xhtml+xml")
MAX_SITEMAPS = 50  # sitemaps of one sitemap index followed


class SiteError(ValueError):
    """The site cannot be synced at all (its sitemap or robots.txt); the message says why."""


class Disallowed(ValueError):
    """A redirect into a path ``robots.txt`` disallows: the page is not fetched."""


@dataclass
class SiteFetch:
    """What one fetch of a site found."""

    documents: list[Document] = field(default_factory=list)  # fetched anew (200)
    unchanged: list[str] = field(default_factory=list)  # URLs answered 304
    failures: list[tuple[str, str]] = field(default_factory=list)  # (URL, why)
    disallowed: list[str] = field(default_factory=list)  # URLs robots.txt keeps us from
    gone: list[str] = field(default_factory=list)  # stored pages no link reaches that answer 404/410
    requests: int = 0

    @property
    def complete(self) -> bool:
        """Every page listed was fetched or found unchanged."""
        return not self.failures

    @property
    def seen(self) -> set[str]:
        """The page URLs that still exist (fetched, unchanged, or failed this time)."""
        failed = {url for url, _ in self.failures}
        return {d.source_id for d in self.documents} | set(self.unchanged) | failed


def page_id(url: str) -> str:
    """A page's id: its URL normalised, without the fragment (ValueError: not a page URL).

    >>> page_id("https://Help.example.com/billing/./refunds.html#annual")
    'https://help.example.com/billing/refunds.html'
    """
    return normal_url(urldefrag(url)[0])


def robots_allow(robots: RobotFileParser, url: str) -> bool:
    """Whether ``robots.txt`` lets us fetch ``url``, under its own spelling and under the loose
    one the slot rules match (``/Internal/`` is refused where ``/internal/`` is)."""
    parts = urlsplit(url)
    loose = urlunsplit((parts.scheme, parts.netloc, comparable_path(parts.path), parts.query, ""))
    return robots.can_fetch(USER_AGENT, url) and robots.can_fetch(USER_AGENT, loose)


def sitemap_urls(xml: bytes, where: str) -> tuple[list[str], list[str]]:
    """(page URLs, nested sitemap URLs) of a sitemap or sitemap index; SiteError when it is
    not a sitemap. Entities are not resolved and nothing is fetched while parsing."""
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    try:
        root = etree.fromstring(xml, parser)
    except etree.XMLSyntaxError as exc:
        raise SiteError(f"{where}: the sitemap is not XML ({exc})") from None
    if root is None:
        raise SiteError(f"{where}: the sitemap is empty")
    kind = etree.QName(root).localname
    locations = [
        (element.text or "").strip()
        for element in root.iter()
        if isinstance(element.tag, str) and etree.QName(element).localname == "loc"
    ]
    if kind == "sitemapindex":
        return [], [u for u in locations if u]
    if kind != "urlset":
        raise SiteError(f"{where}: not a sitemap (root element <{kind}>)")
    return [u for u in locations if u], []


def page_links(html: str, base: str) -> list[str]:
    """The absolute URLs a page links to (``<a href>``), fragments dropped."""
    from lxml import html as lxml_html

    try:
        tree = lxml_html.fromstring(html)
    except (ValueError, TypeError):
        return []
    return [urljoin(base, href) for href in tree.xpath("//a/@href") if isinstance(href, str)]


def extract(html: str, url: str) -> tuple[str, str]:
    """(title, main content as Markdown) of a page; "" content when there is none."""
    import trafilatura

    text = trafilatura.extract(
        html,
        url=url,
        output_format="markdown",
        include_formatting=True,
        include_tables=True,
        include_comments=False,
        include_links=False,
        include_images=False,
    )
    metadata = trafilatura.extract_metadata(html, default_url=url)
    title = (metadata.title if metadata else None) or urlsplit(url).path.rsplit("/", 1)[-1] or url
    return title.strip(), (text or "").strip()


class _Pacer:
    """At most ``rate`` request starts per second, across all workers."""

    def __init__(self, rate: float) -> None:
        self.interval = 1.0 / rate
        self.next_start = 0.0
        self.lock = asyncio.Lock()

    async def wait(self) -> None:
        async with self.lock:
            now = time.monotonic()
            delay = self.next_start - now
            self.next_start = max(now, self.next_start) + self.interval
        if delay > 0:
            await asyncio.sleep(delay)


class _Fetcher:
    def __init__(self, source: SourceSettings, client: httpx.AsyncClient) -> None:
        self.source = source
        self.client = client
        self.pacer = _Pacer(source.requests_per_second)
        self.gate = asyncio.Semaphore(source.concurrency)
        self.requests = 0
        self.robots: RobotFileParser | None = None  # once read, redirects are held to it

    async def get(
        self, url: str, headers: Mapping[str, str] | None = None
    ) -> tuple[httpx.Response, str]:
        """One GET on the site and the URL it ended at: redirects followed like links (on the
        site, allowed by robots.txt), the body read up to the size cap, all of it within
        ``timeout_s`` (the pacer's waits not counted); ValueError naming what is wrong,
        TimeoutError past the deadline."""
        loop = asyncio.get_running_loop()
        async with self.gate:
            left = self.source.timeout_s
            for _ in range(5):
                await self.pacer.wait()
                self.requests += 1
                started = loop.time()
                async with asyncio.timeout(left):
                    response, target = await self._once(url, headers)
                left -= loop.time() - started
                if response is not None:
                    return response, url
                url = target
            raise ValueError("too many redirects")

    async def _once(
        self, url: str, headers: Mapping[str, str] | None
    ) -> tuple[httpx.Response | None, str]:
        """(the response, ``url``), or (None, where a redirect points, checked like a link)."""
        async with self.client.stream("GET", url, headers=headers) as response:
            if response.has_redirect_location:
                target = normal_url(urljoin(url, response.headers.get("location", "")))
                if not same_site(target, self.source.location):
                    raise ValueError(f"redirected off the site to {target}")
                if self.robots is not None and not robots_allow(self.robots, target):
                    raise Disallowed(f"redirected to {target}, which robots.txt disallows")
                return None, target
            cap = self.source.max_page_bytes
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > cap:
                raise ValueError(f"over the size cap ({declared} > {cap} bytes)")
            body = bytearray()
            async for piece in response.aiter_bytes():
                body.extend(piece)
                if len(body) > cap:
                    raise ValueError(f"over the size cap ({cap} bytes)")
            return (
                httpx.Response(
                    response.status_code,
                    headers=response.headers,
                    content=bytes(body),
                    request=response.request,
                ),
                url,
            )


async def _robots(fetcher: _Fetcher, root: str) -> RobotFileParser:
    parser = RobotFileParser()
    parts = urlsplit(root)
    url = f"{parts.scheme}://{parts.netloc}/robots.txt"
    try:
        response, _ = await fetcher.get(url)
    except (httpx.HTTPError, ValueError, TimeoutError) as exc:
        raise SiteError(f"{url}: cannot be read ({exc or type(exc).__name__})") from None
    if response.status_code >= 500:
        raise SiteError(f"{url}: HTTP {response.status_code} (a site's robots.txt must be readable)")
    parser.parse(response.text.splitlines() if response.status_code == 200 else [])
    fetcher.robots = parser
    return parser


async def _sitemap(fetcher: _Fetcher, url: str) -> list[str]:
    pending, pages, read = [url], [], 0
    while pending and read < MAX_SITEMAPS:
        where = pending.pop(0)
        read += 1
        try:
            response, _ = await fetcher.get(where)
        except (httpx.HTTPError, ValueError, TimeoutError) as exc:
            raise SiteError(f"{where}: {exc or type(exc).__name__}") from None
        if response.status_code != 200:
            raise SiteError(f"{where}: HTTP {response.status_code}")
        found, nested = sitemap_urls(response.content, where)
        pages.extend(found)
        pending.extend(u for u in nested if same_site(u, url))
    return pages


class _Crawl:
    """One fetch of a site into a :class:`SiteFetch`."""

    def __init__(self, source: SourceSettings, known: Mapping[str, Mapping[str, str]]) -> None:
        self.source = source
        self.known = known
        self.found = SiteFetch()
        self.unlinked: set[str] = set()  # stored pages asked for though no link reached them

    def conditional(self, url: str) -> dict[str, str]:
        stored = self.known.get(url, {})
        headers = {}
        if stored.get("etag"):
            headers["If-None-Match"] = stored["etag"]
        if stored.get("last_modified"):
            headers["If-Modified-Since"] = stored["last_modified"]
        return headers

    async def page(self, fetcher: _Fetcher, url: str) -> str:
        """Fetch one page into ``found``; its HTML ("" when none)."""
        try:
            response, landed = await fetcher.get(url, self.conditional(url))
        except (httpx.TimeoutException, TimeoutError):
            self.found.failures.append((url, f"timed out: not whole within {self.source.timeout_s:g} s"))
            return ""
        except Disallowed:
            self.found.disallowed.append(url)
            return ""
        except (httpx.HTTPError, ValueError) as exc:
            self.found.failures.append((url, str(exc) or type(exc).__name__))
            return ""
        if response.status_code == 304:
            self.found.unchanged.append(url)
            return ""
        if response.status_code in (404, 410) and url in self.unlinked:
            self.found.gone.append(url)
            return ""
        if response.status_code != 200:
            self.found.failures.append((url, f"HTTP {response.status_code}"))
            return ""
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind not in HTML_TYPES:
            self.found.failures.append((url, f"not an HTML page ({kind or 'no content type'})"))
            return ""
        html = response.text
        title, text = extract(html, url)
        if not text:
            self.found.failures.append((url, "no main content found"))
            return html
        validators = {
            key: response.headers[header]
            for key, header in (("etag", "etag"), ("last_modified", "last-modified"))
            if header in response.headers
        }
        self.found.documents.append(
            Document(
                source_id=url,
                title=title,
                text=text,
                url=url,
                metadata=page_slots(self.source.slots, landed),
                origin=url,
                validators=validators,
            )
        )
        return html

    def allowed(self, robots: RobotFileParser, urls: Iterable[str]) -> list[str]:
        """``urls`` normalised, once each, on the site and not disallowed (those noted)."""
        kept: list[str] = []
        for url in dict.fromkeys(_page_ids(urls)):
            if not same_site(url, self.source.location):
                continue
            if not robots_allow(robots, url):
                self.found.disallowed.append(url)
                continue
            kept.append(url)
        return kept

    async def run(self, client: httpx.AsyncClient) -> SiteFetch:
        fetcher = _Fetcher(self.source, client)
        try:
            robots = await _robots(fetcher, self.source.location)
            if urlsplit(self.source.location).path.endswith(".xml"):
                pages = self.allowed(robots, await _sitemap(fetcher, self.source.location))
                pages = pages[: self.source.max_pages]
                await asyncio.gather(*(self.page(fetcher, url) for url in pages))
            else:
                await self.follow_links(fetcher, robots)
        finally:
            self.found.requests = fetcher.requests
        return self.found

    async def follow_links(self, fetcher: _Fetcher, robots: RobotFileParser) -> None:
        """Breadth first from the start URL, in waves of ``concurrency`` pages; the stored
        pages no link reached are asked for last."""
        queue = deque(self.allowed(robots, [self.source.location]))
        queued = set(queue)
        while queue:
            await self.wave(fetcher, robots, queue, queued)
            if not queue:
                stored = [u for u in self.allowed(robots, self.known) if u not in queued]
                self.unlinked.update(stored)
                queued.update(stored)
                queue.extend(stored)

    async def wave(
        self, fetcher: _Fetcher, robots: RobotFileParser, queue: deque[str], queued: set[str]
    ) -> None:
        """Fetch the next ``concurrency`` pages of ``queue``; queue the links they hold."""
        if queue:
            wave = [queue.popleft() for _ in range(min(self.source.concurrency, len(queue)))]
            pages = await asyncio.gather(*(self.page(fetcher, url) for url in wave))
            for url, html in zip(wave, pages, strict=True):
                for link in self.allowed(robots, page_links(html, url) if html else []):
                    if link not in queued and len(queued) < self.source.max_pages:
                        queued.add(link)
                        queue.append(link)
                        self.unlinked.discard(link)


def _page_ids(urls: Iterable[str]) -> Iterable[str]:
    """The page ids of ``urls``; one that is no page URL (no host, a bad port) is left out."""
    for url in urls:
        try:
            yield page_id(url)
        except ValueError:
            continue


def fetch_site(
    source: SourceSettings,
    known: Mapping[str, Mapping[str, str]] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> SiteFetch:
    """Fetch ``source`` (a ``kind: site``): ``known`` maps a stored page's URL to its
    ``etag`` / ``last_modified``. Raises SiteError when the site cannot be read at all."""

    async def run() -> SiteFetch:
        async with httpx.AsyncClient(
            timeout=source.timeout_s,
            headers={"User-Agent": USER_AGENT},
            follow_redirects=False,
            transport=transport,
        ) as client:
            return await _Crawl(source, known or {}).run(client)

    return asyncio.run(run())

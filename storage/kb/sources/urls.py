"""A site's URLs in one spelling, so that slot rules, robots.txt and the same-site check see
the page a server will serve, however a sitemap, a link or a redirect spells it.

* :func:`normal_url`: RFC 3986's normalisation (section 6.2.2): scheme and host in lower
  case, the scheme's default port dropped, percent-encoded unreserved characters decoded and
  the other escapes in upper case, dot segments removed (section 5.2.4), an empty path made
  ``/``, the fragment dropped. What the sync requests, stores and cites.
* :func:`page_slots`: the slots of a site's path rules for a URL. A rule matches the page's
  path compared as loosely as servers serve it: fully percent-decoded (``%2F`` too),
  backslashes as slashes, doubled slashes merged, dot segments removed, without regard to
  case. So ``/public/../internal/keys.html``, ``/%69nternal/keys.html``,
  ``//internal/keys.html`` and ``/Internal/keys.html`` all get a ``/internal/`` rule's slots.

Usage::

    normal_url("HTTP://Help.Example.com:80/a/./b/../%7Euser/%69nternal")
    # 'http://help.example.com/a/~user/internal'
    page_slots(source.slots, "https://help.example.com/%69nternal/keys.html")
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from config.sources import PathSlots

UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
DEFAULT_PORTS = {"http": 80, "https": 443}
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_SEGMENT = re.compile(r"/?[^/]*")


def _escapes(text: str) -> str:
    """Percent-escapes of unreserved characters decoded, the others in upper case."""

    def one(found: re.Match[str]) -> str:
        char = chr(int(found.group(1), 16))
        return char if char in UNRESERVED else "%" + found.group(1).upper()

    return _ESCAPE.sub(one, text)


def remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4.

    >>> remove_dot_segments("/a/b/c/./../../g"), remove_dot_segments("/public/../internal/")
    ('/a/g', '/internal/')
    >>> remove_dot_segments("/../../x"), remove_dot_segments("/a/..")
    ('/x', '/')
    """
    rest, out = path, list[str]()
    while rest:
        if rest.startswith("../"):
            rest = rest[3:]
        elif rest.startswith("./") or rest.startswith("/./"):
            rest = rest[2:]
        elif rest == "/.":
            rest = "/"
        elif rest.startswith("/../"):
            rest = rest[3:]
            if out:
                out.pop()
        elif rest == "/..":
            rest = "/"
            if out:
                out.pop()
        elif rest in (".", ".."):
            rest = ""
        else:
            segment = _SEGMENT.match(rest)
            assert segment is not None  # the pattern matches any text
            out.append(segment.group())
            rest = rest[segment.end() :]
    return "".join(out)


def normal_url(url: str) -> str:
    """``url`` in RFC 3986's normal form (see the module docstring), without its fragment;
    ValueError for a URL with no host or a port that is not one.

    >>> normal_url("HTTPS://Help.Example.COM:443/public/../%69nternal/keys.html#top")
    'https://help.example.com/internal/keys.html'
    >>> normal_url("http://help.example.com:8080"), normal_url("http://h.example/a%2fb?q=%7e")
    ('http://help.example.com:8080/', 'http://h.example/a%2Fb?q=~')
    """
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = parts.hostname  # lower case, without an IPv6 address's brackets
    if not host:
        raise ValueError(f"{url[:200]!r} names no host")
    port = parts.port  # ValueError when it is not a port
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != DEFAULT_PORTS.get(scheme):
        netloc += f":{port}"
    if parts.username is not None:
        userinfo = parts.username + (f":{parts.password}" if parts.password is not None else "")
        netloc = f"{userinfo}@{netloc}"
    path = remove_dot_segments(_escapes(parts.path.replace("\\", "/"))) or "/"
    return urlunsplit((scheme, netloc, path, _escapes(parts.query), ""))


def comparable_path(path: str) -> str:
    """A path as loosely as servers may serve it, to match slot rules against.

    >>> comparable_path("//Public/..%2F%69nternal\\\\Keys.html")
    '/internal/keys.html'
    """
    decoded = unquote(path).replace("\\", "/")
    merged = re.sub(r"/{2,}", "/", decoded)
    return remove_dot_segments(merged if merged.startswith("/") else "/" + merged).lower()


def page_slots(rules: Sequence[PathSlots], url: str) -> dict[str, Any]:
    """The slots of the page at ``url``: every rule whose path its path starts with, in order
    (a later rule wins a key an earlier one set), compared by :func:`comparable_path`.

    >>> rules = [PathSlots(path="/enterprise/", tiers=["enterprise"]),
    ...          PathSlots(path="/enterprise/internal/", access="internal")]
    >>> page_slots(rules, "https://h.example/enterprise/internal/keys.html")
    {'tiers': ['enterprise'], 'access': 'internal'}
    >>> page_slots(rules, "https://h.example/public/../Enterprise/%69nternal/keys.html")
    {'tiers': ['enterprise'], 'access': 'internal'}
    >>> page_slots(rules, "https://h.example/billing/refunds.html")
    {}
    """
    path = comparable_path(urlsplit(url).path)
    found: dict[str, Any] = {}
    for rule in rules:
        if path.startswith(comparable_path(rule.path)):
            found.update(rule.as_metadata())
    return found


def same_site(url: str, root: str) -> bool:
    """Whether ``url`` is on ``root``'s scheme, host and port, both normalised.

    >>> same_site("HTTPS://Help.Example.com:443/a", "https://help.example.com/sitemap.xml")
    True
    >>> same_site("https://evil.example.net/a", "https://help.example.com/")
    False
    """
    try:
        a, b = urlsplit(normal_url(url)), urlsplit(normal_url(root))
    except ValueError:
        return False
    return (a.scheme, a.netloc) == (b.scheme, b.netloc)

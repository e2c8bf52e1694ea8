"""A person's reply as an article can say it: without the greeting that opens it ("Hi Maria,",
"Hello,"), the sign-off that closes it ("Best, Sam", "Kind regards,\\nAna") and the names those
name, or the customer gave ("my name is Maria"), wherever else they stand in it. An article
is read by every customer; a reply was written to one.

Usage::

    impersonal("Hi Maria,\\n\\nRefunds take 5 days, Maria.\\n\\nBest, Sam")
    # -> 'Refunds take 5 days.'
    names_given(["Hello, my name is Maria Lopez and my refund is late"])   # ['Maria Lopez']
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from storage.text import split_sentences

_NAME = r"[A-Z][\w'’-]*(?:[ \t]+[A-Z][\w'’-]*){0,2}"
# "Hi Maria,", "Hello,", "Dear Ana Lopez:", "Good morning Sam!" at the start of a reply
SALUTATION = re.compile(
    r"^[ \t]*(?i:hi|hello|hey|hiya|dear|greetings|good[ \t]+(?:morning|afternoon|evening))"
    r"(?:[ \t]+(?:(?i:there|all|everyone|again|customer|friend|folks|team)"
    rf"|(?P<names>{_NAME})))?[ \t]*(?:[,.!:;\-–—]+|$)[ \t]*"
)
# a closing line: "Best, Sam", "Kind regards,", "Thanks again!", "Cheers - Ana"
SIGN_OFF = re.compile(
    r"^[ \t]*(?i:best(?:[ \t]+(?:wishes|regards))?|kind[ \t]+regards|warm[ \t]+regards|regards"
    r"|cheers|sincerely|yours(?:[ \t]+(?:truly|sincerely))?|all[ \t]+the[ \t]+best|take[ \t]+care"
    r"|talk[ \t]+soon|many[ \t]+thanks|thanks(?:[ \t]+again)?|thank[ \t]+you(?:[ \t]+again)?)"
    rf"[ \t]*[,.!:\-–—]*[ \t]*(?P<names>{_NAME})?[ \t]*[.!]?[ \t]*$"
)
SIGNATURE = re.compile(rf"^[ \t]*(?:[-–—]+[ \t]*)?(?P<names>{_NAME})[ \t]*$")  # "Sam", "— Ana"
GIVEN = re.compile(
    r"(?i:\bmy[ \t]+name[ \t]+is|\b(?:hi|hello|hey)[,!]?[ \t]+(?:i'm|i[ \t]+am|this[ \t]+is))"
    rf"[ \t]+(?P<names>{_NAME})"
)
ADDRESSED = re.compile(rf"^(?P<names>{_NAME})[ \t]*[,:!][ \t]*")  # "Maria, ..." after "Hello!"
# words a capitalised phrase after a greeting or in a signature may hold that name no one
NOT_NAMES = frozenset(
    {
        *("Support", "Team", "The", "Our", "Customer", "Service", "Help", "Desk", "Thanks"),
        *("Thank", "Sure", "Yes", "No", "Sorry", "Great", "Ok", "Okay", "Good", "Unfortunately"),
        *("Please", "Hi", "Hello", "Again", "Welcome", "Of", "Absolutely", "Certainly", "I", "We"),
    }
)


def names_given(messages: Iterable[str]) -> list[str]:
    """The names customers gave in ``messages`` ("my name is Maria", "Hi, I'm Sam").

    >>> names_given(["Hello, my name is Maria Lopez and my refund is late", "hi, I'm Sam."])
    ['Maria Lopez', 'Sam']
    """
    return [m.group("names") for text in messages for m in GIVEN.finditer(text)]


def _names(found: str | None) -> list[str]:
    """A matched name and its parts ("Maria Lopez": also "Maria"), without words no name is."""
    if not found:
        return []
    words = [w for w in found.split() if w not in NOT_NAMES]
    return [" ".join(words), *words] if len(words) > 1 else words


def _strip_ends(lines: list[str]) -> tuple[list[str], list[str]]:
    """``lines`` without a leading salutation and a trailing sign-off (with the signature
    lines under it), and the names those held."""
    names: list[str] = []
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None:
        opened = SALUTATION.match(lines[first])
        if opened:
            names += _names(opened.group("names"))
            rest = lines[first][opened.end() :]
            addressed = ADDRESSED.match(rest) if not opened.group("names") else None
            if addressed and not set(addressed.group("names").split()) & NOT_NAMES:
                names += _names(addressed.group("names"))
                rest = rest[addressed.end() :]
            lines = [*lines[:first], rest[:1].upper() + rest[1:], *lines[first + 1 :]]
    ending = [i for i, line in enumerate(lines) if line.strip()]
    # a signature under a sign-off: "Kind regards,\nSam\nSupport team"
    for start in ending[-3:]:
        closed = SIGN_OFF.match(lines[start])
        tail = [lines[i] for i in ending if i > start]
        if closed and all(SIGNATURE.match(t) for t in tail):
            names += _names(closed.group("names"))
            for t in tail:
                match = SIGNATURE.match(t)
                names += _names(match.group("names") if match else None)
            return lines[:start], names
    return lines, names


def _without_names(text: str, names: Sequence[str]) -> str:
    """``text`` with each of ``names`` taken out where it addresses the reader ("Maria, you
    can...", "..., Maria."), and read as "you" elsewhere."""
    for name in sorted(set(names), key=len, reverse=True):
        n = re.escape(name)
        text = re.sub(rf"(^|(?<=[.!?\n])[ \t]*){n}[ \t]*[,:!][ \t]*", r"\1", text)
        text = re.sub(rf"[ \t]*,[ \t]*{n}\b(?=[ \t]*(?:[,.!?;:]|$))", "", text, flags=re.M)
        text = re.sub(rf"\b{n}['’]s\b", "your", text)
        text = re.sub(rf"\b{n}\b", "you", text)
    return re.sub(r"(^|[.!?][ \t]+)([a-z])", lambda m: m.group(1) + m.group(2).upper(), text)


def impersonal(reply: str, names: Sequence[str] = ()) -> str:
    """``reply`` without its greeting, its sign-off and signature, and the names they (or
    ``names``: the customer's own) hold.

    >>> impersonal("Hi Maria,\\n\\nRefunds take 5 days, Maria.\\n\\nBest, Sam")
    'Refunds take 5 days.'
    >>> impersonal("Hello! Maria, your order ships today.\\nKind regards,\\nAna\\nSupport Team")
    'Your order ships today.'
    >>> impersonal("We ship to Mars.", ["Maria"])
    'We ship to Mars.'
    """
    lines, found = _strip_ends(reply.splitlines())
    kept = "\n".join(lines).strip("\n")
    kept = _sign_off_sentence(kept, found)
    return _without_names(kept, [*found, *(part for n in names for part in _names(n))]).strip()


def _sign_off_sentence(text: str, names: list[str]) -> str:
    """A sign-off ending the last line after its sentences ("Ships today. Best, Sam")."""
    head, sep, last = text.rpartition("\n")
    sentences = split_sentences(last)
    closed = SIGN_OFF.match(sentences[-1]) if len(sentences) > 1 else None
    if closed is None:
        return text
    names += _names(closed.group("names"))
    return head + sep + last[: last.rfind(sentences[-1])].rstrip()

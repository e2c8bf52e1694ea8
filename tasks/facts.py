"""The checkable facts of an answer sentence: what a draft must not change.

Numbers, URLs, error and reference codes, UI paths (``Settings → Billing``, ``Admin > Security``)
and proper nouns (product, plan, provider and place names: capitalised words that do not start
the sentence, and CamelCase or all-capitals words anywhere) must stand in the passage the
sentence leans on. A sentence that changes one of them is unsupported, however close it reads.

Usage::

    >>> sorted(facts("Add Okta under Admin > Security, see https://status.example.com."))
    ['Admin > Security', 'Okta', 'https://status.example.com']
    >>> missing_facts("Use Okta or PingFederate.", "Connect Okta, Azure AD or OneLogin.")
    ['PingFederate']
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from storage.kb.fact_kinds import ANY_CASE_CODE, CODE_TOKEN, REFERENCE_PREFIXES
from storage.text import WORD

_URL = re.compile(r"https?://[^\s)>\]]+")
_PATH = re.compile(r"[A-Z][\w&]*(?: [A-Z][\w&]*)*(?:\s*(?:→|->|>|›)\s*[A-Z][\w&]*(?: [A-Z][\w&]*)*)+")
_ERROR_WORD = re.compile(r"\berror\b", re.IGNORECASE)
_AFTER_ERROR = re.compile(r"\b(?:error|code)\s+(?:code\s+)?(\S+)", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![A-Za-z\d])\d+(?:[.,]\d+)*")  # "256" of "SHA256" is the token's
_MIXED = re.compile(r"\b[A-Za-z]+\d\w*\b")  # ... fact, whole: "SHA256", "mp3"
_WORD = WORD
_PUNCT = re.compile(r"[,;:!?()\[\]\"']|\.(?!\d)")
_RANGE = re.compile(r"(?<=\d)[–—/-](?=\d)")
_ARROWS = re.compile(r"\s*(?:→|->|>|›)\s*")
_NEGATION = re.compile(
    r"\b(?:not|no|never|cannot|none|neither|nor|\w+n['’]t|(?:don|doesn|didn|"
    r"isn|aren|wasn|weren|can|couldn|won|wouldn|shouldn|haven|hasn|mustn)"
    r" t)\b",
    re.IGNORECASE,
)  # doc2dial's pages write "don t"
_NOT_NAMES = frozenset({"I", "I'm", "I've", "I'll", "I'd", "OK", "Yes", "No"})


def _normal(text: str) -> str:
    return " ".join(_ARROWS.sub(" > ", text.replace("**", "").replace("`", "")).split()).lower()


def _names(sentence: str, is_word: Callable[[str], bool] | None = None) -> set[str]:
    words = list(_WORD.finditer(sentence))
    found = set()
    for position, match in enumerate(words):
        word = match.group().rstrip("'’-")
        if word in _NOT_NAMES or len(word) < 2:
            continue
        inner_caps = any(c.isupper() for c in word[1:])
        before = sentence[: match.start()].rstrip()
        # a bullet's dash starts an item; a dash between words ("Service - Veterans") does not
        starts = (
            position == 0
            or before.endswith((".", ":", "!", "?", "(", '"'))
            or (before.endswith("-") and not before[:-1].strip())
        )
        # at a sentence's start a capital says nothing, unless the word is no word of the
        # language ("Zorblax covers members.")
        unknown_start = starts and is_word is not None and not _a_word(word.lower(), is_word)
        if inner_caps or (word[0].isupper() and (not starts or unknown_start)):
            found.add(word)
    return found


def names(text: str) -> set[str]:
    """The proper nouns ``text`` names (a capital inside a sentence, or inside a word), UI
    paths and addresses aside.

    >>> sorted(names("Refunds to PayPal usually arrive within 2 business days."))
    ['PayPal']
    >>> names("Card issuers sometimes need up to 10 business days.")
    set()
    """
    return _names(_PATH.sub(" ", _URL.sub(" ", text)))


def _a_word(word: str, is_word: Callable[[str], bool]) -> bool:
    """Whether every part of ``word`` ("we'll", "post-traumatic") is a word of the vocabulary,
    or one with an inflection ("refunds", "approved") taken off."""

    def known(part: str) -> bool:
        return (
            not part
            or is_word(part)
            or any(
                part.endswith(ending) and is_word(part[: -len(ending)])
                for ending in ("s", "es", "ed", "d", "ing", "ly")
            )
        )

    return all(known(part) for part in re.split(r"[-'’]", word))


def facts(sentence: str, is_word: Callable[[str], bool] | None = None) -> set[str]:
    """Numbers, URLs, codes, UI paths and proper nouns the sentence states; with ``is_word``
    (a vocabulary), a capitalised word at a sentence's start that is no word is a name too."""
    urls = {u.rstrip(".,;:") for u in _URL.findall(sentence)}
    rest = _URL.sub(" ", sentence)
    # a path's first segment may start with the sentence's verb ("Open Settings > ...")
    paths = set()
    for path in _PATH.findall(rest):
        first, *others = _ARROWS.split(path.strip())
        paths.add(" > ".join([first.split()[-1], *others]))
    found = (
        urls
        | paths
        | set(CODE_TOKEN.findall(rest))
        | set(_NUMBER.findall(rest))
        | set(_MIXED.findall(rest))
    )
    return found | _names(_PATH.sub(" ", rest), is_word)


def codes(text: str) -> set[str]:
    """Error and reference codes named in ``text`` (``PAY-101``, ``E-429``, ``SSO-104``)."""
    return {c.upper() for c in ANY_CASE_CODE.findall(text)}


def asked_codes(message: str) -> set[str]:
    """The codes a message asks about: the one it names or, when it names several (a machine's
    name looks like a code too: ``build-server-7``), those after "error" or "code".

    >>> sorted(asked_codes("The sync on build-server-7 got error E-429 again."))
    ['E-429']
    """
    named = codes(message)
    if len(named) > 1:
        named = codes(" ".join(_AFTER_ERROR.findall(message)))
    return named


def _family(code: str) -> str:
    return re.split(r"[-_]", code, maxsplit=1)[0]


def undocumented_codes(message: str, answering: str, passages: Sequence[str]) -> set[str]:
    """Codes the message asks about that the answering passage does not hold although the
    passages document codes of the same family: ``PAY-407`` where the pages explain PAY-101
    and PAY-102 is a code the knowledge base does not explain. A customer's own references
    (``ORD-55812``, ``build-server-7``) belong to no documented family and are not asked for.

    >>> sorted(undocumented_codes("Payment failed with PAY-407.", "PAY-101: declined.",
    ...                           ["PAY-101: declined."]))
    ['PAY-407']
    """
    documented = {_family(c) for text in passages for c in codes(text)}
    return {c for c in asked_codes(message) - codes(answering) if _family(c) in documented}


def foreign_error_codes(message: str, passage: str) -> set[str]:
    """The codes a message names as errors ("error SSO-102", "error code E-429") of a family
    the passage (its title and text) never names, neither as a code nor as a word: an article
    about something else. A message without the word "error" names none ("discount code
    SPRING-20"), nor does a customer's own reference ("error on order ORD-55812").

    >>> foreign_error_codes("Sign-in fails with error SSO-102.", "PAY-102: the card expired.")
    {'SSO-102'}
    >>> foreign_error_codes("Sign-in fails with error SSO-102.", "Single sign-on (SSO) setup.")
    set()
    >>> foreign_error_codes("Where do I enter the discount code SPRING-20?", "Plans and prices.")
    set()
    """
    if not _ERROR_WORD.search(message):
        return set()
    named = {
        c for c in codes(" ".join(_AFTER_ERROR.findall(message))) if not c.startswith(REFERENCE_PREFIXES)
    }
    families = {_family(c) for c in codes(passage)}
    words = {w.upper() for w in _WORD.findall(passage)}
    return {c for c in named if _family(c) not in families and _family(c) not in words}


def explained_codes(message: str, answering: str, passages: Sequence[str]) -> set[str]:
    """The codes the message asks about that the answering passage holds, of a family the
    passages document (the other side of ``undocumented_codes``; a customer's own reference
    belongs to no documented family). An input of the decision, weighed with the rest: a form
    number a page only names ("Where do I send my W-2?") counts for what the data says it is
    worth.

    >>> explained_codes("The API returned E-429.", "E-429: too many requests.", ["E-429: too many."])
    {'E-429'}
    >>> explained_codes("Refund for ORD-55812?", "Refunds take 5 days.", ["E-429: too many."])
    set()
    """
    documented = {_family(c) for text in passages for c in codes(text)}
    return {c for c in asked_codes(message) & codes(answering) if _family(c) in documented}


def missing_facts(
    sentence: str, passage: str, is_word: Callable[[str], bool] | None = None
) -> list[str]:
    """The facts of ``sentence`` that ``passage`` does not contain (case-insensitive; a number
    or code must stand whole: "15" is not in "2015").

    >>> missing_facts("Use form 15.", "Form 2015 and form 150 are gone.")
    ['15']
    >>> missing_facts("It is an HMAC-SHA512 of the body.", "an `HMAC-SHA256` of the body")
    ['HMAC-SHA512', 'SHA512']
    """
    text = _normal(passage)
    missing = {f for f in facts(sentence, is_word) if not _stands_in(_normal(f), text)}
    return sorted(missing | _numbers_out_of_place(_normal(sentence), text))


def _numbers_out_of_place(sentence: str, text: str) -> set[str]:
    """Numbers of ``sentence`` that stand in ``text`` (both normalised) but beside none of the words
    they stand beside in the sentence: "4 Han Tumens and 10 Khitan" with the 4 changed to 10
    holds every number, but "10 Han" is nowhere. A word beside it counts before another number
    of a range or a list ("1596–1626" is read as its two numbers); punctuation is left out of
    the comparison; a number alone is checked by itself."""

    def words_of(value: str) -> list[str]:
        return _PUNCT.sub(" ", _RANGE.sub(" ", value)).split()

    words, plain = words_of(sentence), " ".join(words_of(text))
    out = set()
    for index, word in enumerate(words):
        if not _NUMBER.fullmatch(word):
            continue
        pairs = [words[i : i + 2] for i in (index - 1, index) if 0 <= i < len(words) - 1]
        beside = [p for p in pairs if not all(_NUMBER.fullmatch(w) for w in p)]
        if pairs and not any(_stands_in(" ".join(p), plain) for p in beside or pairs):
            out.add(word)
    return out


def _stands_in(fact: str, text: str) -> bool:
    if fact[:1].isalnum() and fact[-1:].isalnum():
        return re.search(rf"(?<![a-z0-9]){re.escape(fact)}(?![a-z0-9])", text) is not None
    return fact in text


def negated(sentence: str) -> bool:
    """Whether the sentence says something is not so ("do not count", "can't", "never").

    >>> negated("Guests do not count as paid users."), negated("Guests count as paid users.")
    (True, False)
    >>> negated("If the reactions don t go away"), negated("You can take it")
    (True, False)
    """
    return _NEGATION.search(sentence) is not None

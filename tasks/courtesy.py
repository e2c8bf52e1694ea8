"""The words people wrap a support message in: courtesy, greetings, hedges and small talk.

Both sides of a conversation use them and neither asks or states anything with them. An
answer sentence made of nothing else ("Sure, I can help you with that!") has nothing to
check; a customer's sentence made of nothing else ("Hi, good morning.", "Can you help me with
that?") asks nothing, and inside a sentence they are not the subject the knowledge base must
hold ("Hello there, I have problems with substance use" asks about substance use, not
"hello"). Judging a message by its subject is what lets the gate answer the question a
greeting wraps instead of refusing it for the greeting's words.

Usage::

    makes_claim("Of course.")                                    # False
    subject("Hi, good morning. My sign-in fails with SSO-102. Can you help me with that?")
    # -> 'My sign-in fails with SSO-102.'
    subject_words("I just wanted to learn more about paying for college")
    # -> 'paying college'
"""

from __future__ import annotations

import re

from storage.kb.model_files import stopwords
from storage.text import TERM, split_sentences
from tasks.rules import RULES

_STOP = stopwords()

# the words of courtesy and small talk (storage/kb/assets/decision/rules.yaml): a sentence
# made of courtesy alone ("Of course.") states nothing to check; small talk is what a customer
# adds around the subject ("I wanted to know", "today")
COURTESY = RULES.courtesy
SMALL_TALK = RULES.small_talk


def _content_in_order(text: str) -> list[str]:
    return [w for w in TERM.findall(text.lower()) if w not in _STOP and len(w) > 1]


def content_words(text: str) -> set[str]:
    """The lower-cased words of ``text`` that are not stopwords (the BM25 English list)."""
    return set(_content_in_order(text))


def _says_more_than(sentence: str, words: frozenset[str]) -> bool:
    return bool(content_words(sentence) - words) or bool(re.search(r"\d", sentence))


def makes_claim(sentence: str) -> bool:
    """Whether a sentence states something to check; courtesy alone does not.

    >>> makes_claim("Of course."), makes_claim("Sure, I can help you with that!")
    (False, False)
    >>> makes_claim("Of course. Refunds take 5 days.")
    True
    """
    return _says_more_than(sentence, COURTESY)


def courtesy_only(message: str) -> bool:
    """Whether a message is made of courtesy alone: some words, all of them greeting, thanks
    or goodbye (a bare "why?" has no words to judge and is a follow-up, not courtesy).

    >>> courtesy_only("Thanks, bye!"), courtesy_only("Hi"), courtesy_only("why?")
    (True, True, False)
    >>> courtesy_only("Thanks! And for annual plans?"), courtesy_only("ok 2")
    (False, False)
    """
    return bool(content_words(message)) and not makes_claim(message)


# the words a customer leaves with: a message of courtesy alone that holds one of them is a
# goodbye, not thanks ("bye", "Thanks, bye!", "see you"); "cheers" is left out (it is thanks)
FAREWELL = re.compile(
    r"\b(?:good[\s-]?bye|bye+|bye-bye|farewell|see\s+(?:you|ya)(?:\s+(?:later|soon))?"
    r"|talk\s+(?:to\s+you\s+)?later|take\s+care|good\s*night"
    r"|have\s+a\s+(?:good|nice|great|lovely)\s+(?:day|evening|weekend|one))\b",
    re.IGNORECASE,
)


def says_farewell(message: str) -> bool:
    """Whether a message of courtesy takes leave (the reply is a goodbye, not "happy to help").

    >>> says_farewell("bye"), says_farewell("Thanks, bye!"), says_farewell("ok thanks, see you later")
    (True, True, True)
    >>> says_farewell("Thanks a lot!"), says_farewell("Hi"), says_farewell("Is Bye-Mail supported?")
    (False, False, False)
    """
    return bool(FAREWELL.search(message)) and not asks_something(FAREWELL.sub(" ", message))


def asks_something(sentence: str) -> bool:
    """Whether a customer's sentence holds more than small talk.

    >>> asks_something("Can you help me with that?"), asks_something("Is SSO on Pro?")
    (False, True)
    """
    return _says_more_than(sentence, SMALL_TALK)


def subject(message: str) -> str:
    """The message without its sentences of small talk; the message itself when nothing else
    is left.

    >>> subject("Hello. I lost my phone. What can I do?")
    'I lost my phone.'
    >>> subject("Can you help me?")
    'Can you help me?'
    """
    kept = [s for s in split_sentences(" ".join(message.split())) if asks_something(s)]
    return " ".join(kept) or message


def subject_words(message: str) -> str:
    """The content words of the message's subject, small talk left out, in their order: the
    terms a page must hold to answer it.

    >>> subject_words("Hello there, I have problems with substance use and need help.")
    'problems substance use'
    """
    words = [w for w in _content_in_order(subject(message)) if w not in SMALL_TALK]
    return " ".join(words) or message

"""The rules the message-kind classifier replaced (``tasks/message_kind.py`` and
``tasks/courtesy.courtesy_only`` on main 3cc638d, and the hand-off intent's binary model of
that commit), kept only so ``training/message_kind.py`` can measure them beside it.

    reply("yes please"), leans_on_the_answer("and how do I ask for it?")   # 'yes', True
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from typing import Any

import numpy as np

from evaluation.reporting import ROOT
from tasks.courtesy import content_words, makes_claim
from tasks.message_kind import parts

REPLACED_AT = "3cc638d"
_WORD = re.compile(r"[a-z]+")


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_YES = _set(
    "yes yeah yea yep yup ya y sure ok okay please do go ahead alright fine "
    "absolutely definitely certainly course connect"
)
_NO = _set("no nope nah not don dont never")
_FILLER = _set(
    "please thanks thank you that thats would be great of it now i m im am good right "
    "all is s just let lets with someone somebody a an the person human agent me us "
    "will need t for to"
)
MAX_REPLY_WORDS = 8
_QUESTION_WORD = _set("how what when where why which who")
_REFERS_BACK = _set("it its that this those these them they one same")
_LEADS_ON = _set("and but so also")
_CLOSING = _set("thanks thank cheers bye goodbye great perfect awesome ok okay")


def _words(message: str) -> list[str]:
    return _WORD.findall(message.lower())


def reply(message: str) -> str | None:
    """'yes', 'no' or None: a short yes or no and nothing else."""
    words = _words(message)
    if not words or len(words) > MAX_REPLY_WORDS:
        return None
    if any(w not in _YES | _NO | _FILLER for w in words):
        return None
    if any(w in _NO for w in words):
        return "no"
    return "yes" if any(w in _YES for w in words) else None


def leans_on_the_answer(message: str) -> bool:
    words = _words(message)
    asks = any(w in _QUESTION_WORD for w in words)
    return asks and (any(w in _REFERS_BACK for w in words) or bool(words and words[0] in _LEADS_ON))


def courtesy_only(message: str) -> bool:
    return bool(content_words(message)) and not makes_claim(message)


def closing(message: str) -> bool:
    return any(w in _CLOSING for w in _words(message))


def old_handoff_intent(encoders: Any) -> Callable[[str], bool]:
    """The binary hand-off intent of :data:`REPLACED_AT` (read from git): asks for a person?"""
    shown = subprocess.run(
        ["git", "show", f"{REPLACED_AT}:storage/kb/assets/handoff_intent/model.json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    fitted = json.loads(shown.stdout)
    weights = np.asarray(fitted["weights"], dtype=np.float32)

    def asks(message: str) -> bool:
        vectors = np.stack([e.dense for e in encoders.dense.encode(parts(message))])
        logits = vectors @ weights + float(fitted["bias"])
        return bool(message.strip()) and float(max(1 / (1 + np.exp(-logits)))) >= fitted["threshold"]

    return asks

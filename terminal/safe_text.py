"""Customer text for a terminal: never read as Rich markup, control characters made visible.

A customer's message, an entity a customer named or a resolution note can hold ``[/bold]``
(which makes Rich raise for the whole report), link markup, or raw escape sequences that would
move the lead's cursor or recolour the screen. ``visible`` shows such text as it was written.

Usage::

    >>> visible("[/bold] pay\\x1b[31m").plain
    '[/bold] pay\\\\x1b[31m'
    >>> visible("abc\\u202edef\\u200b").plain
    'abc\\\\u202edef\\\\u200b'
"""

from __future__ import annotations

import unicodedata

from rich.text import Text

_KEPT = "\n\t"


def _shown(char: str) -> str:
    if char in _KEPT or unicodedata.category(char)[0] != "C":
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: object) -> Text:
    """``text`` as a Rich ``Text`` (no markup), its control and format characters
    (escape, C1 controls, bidirectional overrides, zero-width marks) written as escapes."""
    return Text("".join(_shown(c) for c in str(text)))

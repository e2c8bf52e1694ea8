"""Customer messages for property-based tests: arbitrary text up to the message cap, of the
kinds that once broke a turn (a message over the cross-encoder's 128 word pieces), and the
realistic paragraph that first showed it.

Usage::

    @given(message=customer_messages())
    def test_every_message_ends(message): ...
"""

from __future__ import annotations

import string

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

MESSAGE_CAP = 8000  # tasks.schemas.CustomerMessage
# a Hypothesis profile for the tests that run real turns: few, fixed examples (CI is repeatable)
REAL_TURNS = settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
CHARGED_TWICE = (
    "Hello, I hope you can help me with something that has been bothering me for a few days "
    "now. We are on the annual plan for our company and when I looked at our card statement "
    "this month I saw that we were charged twice for the same annual plan, on the same day, "
    "for exactly the same amount. I called my bank first because I thought it might be a "
    "mistake on their side, but the bank said both charges are real and that I should contact "
    "you to get the duplicate refunded. We only have one workspace and one subscription, so "
    "there is no reason for a second charge. How long does the refund of the duplicate charge "
    "usually take?"
)
_SENTENCES = (
    "My card payment failed.",
    "How long does a refund take?",
    "ok",
    "Thanks!",
    "Error PAY-102 again??",
    "Can I export my data?",
    "why",
    "I need help with SSO.",
)

any_unicode = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=40)
codes = st.from_regex(r"[A-Z]{2,5}-[0-9]{2,5}", fullmatch=True)
urls = st.from_regex(r"https://[a-z]{2,12}\.example\.com/[a-z0-9/?=&%-]{0,60}", fullmatch=True)
long_words = st.text(string.ascii_letters + string.digits, min_size=60, max_size=400)
short_sentences = st.sampled_from(_SENTENCES)
punctuation = st.text(string.punctuation + "¿¡…—«»“”", min_size=1, max_size=20)
right_to_left = st.text(
    st.characters(min_codepoint=0x0590, max_codepoint=0x06FF), min_size=1, max_size=30
)
cjk = st.text(st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), min_size=1, max_size=30)
controls = st.text(
    st.characters(categories=("Cc", "Cf", "Zs")) | st.sampled_from("abc ?"), min_size=1, max_size=20
)
PIECES = st.one_of(
    any_unicode, codes, urls, long_words, short_sentences, punctuation, right_to_left, cjk, controls
)


def _repeated(piece: str, length: int) -> str:
    return (piece * (length // len(piece) + 1))[:length]


@st.composite
def customer_messages(draw: st.DrawFn) -> str:
    """A message the pilot accepts (1 to ``MESSAGE_CAP`` characters, something besides spaces,
    valid Unicode): a few pieces of one or more kinds, the last repeated to a drawn length so
    long messages come up as often as short ones."""
    pieces = draw(st.lists(PIECES, min_size=1, max_size=6))
    length = draw(st.sampled_from((1, 40, 129, 300, 600, 2000, MESSAGE_CAP)))
    text = " ".join([*pieces[:-1], _repeated(pieces[-1], length)])[:MESSAGE_CAP]
    if not text.strip():
        text = "?" + text[1:]
    return text

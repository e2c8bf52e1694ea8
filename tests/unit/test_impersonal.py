"""A person's reply as an article can say it: no greeting, sign-off or name (``tasks.impersonal``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.impersonal import NOT_NAMES, impersonal, names_given

NAME = st.from_regex(r"[A-Z][a-z]{2,9}", fullmatch=True).filter(
    lambda n: n not in NOT_NAMES and n not in ("Best", "Cheers", "Regards", "Dear", "Hey", "Good")
)
BODY = "Refunds reach your card within 5 to 7 business days."
GREETINGS = st.sampled_from(["Hi {}", "Hello {}", "Dear {}", "Hey {}", "Good morning {}"])
SIGN_OFFS = st.sampled_from(
    ["Best, {}", "Kind regards,\n{}", "Cheers - {}", "Thanks,\n{}\nSupport Team"]
)


@settings(max_examples=200, deadline=None)
@given(customer=NAME, agent=NAME, greeting=GREETINGS, sign_off=SIGN_OFFS, own_line=st.booleans())
def test_no_greeting_sign_off_or_name_is_left(customer, agent, greeting, sign_off, own_line):
    opening = greeting.format(customer) + ","
    text = f"{opening}\n\n{BODY}" if own_line else f"{opening} {BODY.lower()[0]}{BODY[1:]}"
    reply = f"{text} Thanks for waiting, {customer}.\n\n{sign_off.format(agent)}"
    kept = impersonal(reply)
    assert customer not in kept and agent not in kept, kept
    assert kept.startswith(BODY) and kept.endswith("Thanks for waiting."), kept


def test_a_name_the_customer_gave_is_left_out_too():
    names = names_given(["Hello, my name is Maria Lopez and my refund is late"])
    assert impersonal(f"{BODY} Maria, the bank adds 2 days.", names) == f"{BODY} The bank adds 2 days."

"""What staff may write for customers and leads to read (tasks.schemas.StaffText)."""

import re

import pytest
from pydantic import TypeAdapter, ValidationError

from tasks.schemas import StaffText

STAFF = TypeAdapter(StaffText)


@pytest.mark.parametrize(
    "text",
    [
        "Refund sent.\nIt arrives in 2 days.\tThanks!",
        "Family plan 👨\u200d👩\u200d👧 done",
        "Erledigt – danke",
    ],
)
def test_what_a_person_writes_is_kept(text):
    assert STAFF.validate_python(text) == text


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("sent\x00", "U+0000"),
        ("\x1b[31mred", "U+001B"),
        ("a \x9b b", "U+009B"),
        ("abc\u202edef", "U+202E"),
        ("\u200b \ufeff", "nothing visible"),
        ("   ", "nothing visible"),
    ],
)
def test_control_characters_and_invisible_text_are_refused(text, why):
    with pytest.raises(ValidationError, match=re.escape(why)):
        STAFF.validate_python(text)

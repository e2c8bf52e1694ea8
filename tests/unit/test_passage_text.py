"""Passage text as quotable units: no raw table rows, dangling emphasis or headings quoted."""

from tasks.passage_text import clean, split_units


def kinds(text):
    return [(u.kind, u.text) for u in split_units(text)]


def test_markdown_headings_emphasis_lists_and_tables_become_clean_units():
    text = (
        "## Refunds\nRefunds take **5 to 7** business days. Card refunds are *faster*.\n"
        "- By card: 5 days\n| Plan | Price |\n|---|---|\n| Pro | 12 USD |"
    )
    assert kinds(text) == [
        ("heading", "Refunds"),
        ("sentence", "Refunds take 5 to 7 business days."),
        ("sentence", "Card refunds are faster."),
        ("item", "By card: 5 days"),
        ("table", "Plan: Price"),
        ("table", "Pro: 12 USD"),
    ]


def test_an_faq_line_that_asks_is_never_quotable_but_its_answer_is():
    units = split_units(
        "My vehicle plates were lost. What can I do? \nYou must surrender "
        "the registration to the DMV [1] ."
    )
    assert [u.quotable for u in units] == [False, False, True]
    assert units[-1].text == "You must surrender the registration to the DMV."


def test_short_lines_without_an_end_mark_are_headings():
    assert kinds("Benefits Planner: Retirement\nYou can work while you receive benefits.") == [
        ("heading", "Benefits Planner: Retirement"),
        ("sentence", "You can work while you receive benefits."),
    ]


def test_clean_removes_markers_whole_and_keeps_link_text():
    assert (
        clean("Open **Settings → Billing** and see the [status page](https://x.y) [2 ] .")
        == "Open Settings → Billing and see the status page."
    )
    assert "**" not in clean("a **bold label cut in half")

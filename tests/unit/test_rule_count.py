"""The rule counter (bench/rule_count.py) counts word lists however they are written: literal
tuples, one string split into a set, a set helper's argument; not payload field names,
feature names or messages."""

from __future__ import annotations

from bench.rule_count import count


def test_word_lists_are_counted_however_they_are_written(tmp_path):
    module = tmp_path / "rules.py"
    module.write_text(
        "import re\n"
        "WORD = re.compile(r'[a-z]+')\n"
        "YES = ('yes', 'yeah', 'yep', 'yup', 'sure')\n"
        "NO = frozenset('no nope nah not never'.split())\n"
        "def _set(words): return frozenset(words.split())\n"
        "FILLER = _set('please thanks thank you that')\n"
    )
    assert count(module) == (1, 15)


def test_names_and_messages_are_not_rules(tmp_path):
    module = tmp_path / "names.py"
    module.write_text(
        "from typing import Literal\n"
        "Kind = Literal['question', 'person', 'greeting', 'courtesy', 'accept']\n"
        "FEATURES = ('reading', 'margin', 'coverage', 'codes', 'rank')\n"
        "KEYWORD_FIELDS = ('tiers', 'access', 'product', 'language', 'tenant')\n"
        "store.scroll('kb', fields=('origin', 'etag', 'title', 'text', 'tenant'))\n"
        "print('no passage supports an answer here')\n"
    )
    assert count(module) == (0, 0)

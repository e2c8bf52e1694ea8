"""Compare-and-set revisions: a writer recognises its own write even after others built on it,
and never mistakes a write that did not land for one that did."""

from storage.qdrant.revisions import KEPT_REVS, expected, landed, revised
from storage.qdrant.store import Match, Missing


def test_a_write_another_writer_built_on_has_landed():
    mine = revised({"rev": "r0", "count": 1}, {"count": 2})
    later = revised(mine, {"count": 3})  # another worker read mine and added its own
    assert landed(later, mine)  # the counter must not count mine again


def test_a_write_that_lost_the_race_has_not_landed():
    read = {"rev": "r0", "count": 1}
    mine, theirs = revised(read, {"count": 2}), revised(read, {"count": 2})
    assert not landed(theirs, mine)
    assert not landed(None, mine)


def test_revisions_are_bounded_and_the_condition_names_the_one_read():
    record = revised(None, {"n": 0})
    assert expected({}) == Missing("rev")
    for n in range(KEPT_REVS + 5):
        previous, record = record, revised(record, {"n": n})
        assert expected(record) == Match("rev", (record["rev"],))
        assert record["revs"][0] == previous["rev"]
    assert len(record["revs"]) == KEPT_REVS

from storage.retrieval.window import merge_chunks, window_ranges

TEXT = "Alpha one. Beta two. Gamma three. Delta four."


def slice_of(start: int, end: int) -> tuple[int, str]:
    return start, TEXT[start:end]


def test_overlapping_chunks_merge_without_repetition():
    merged = merge_chunks([slice_of(11, 33), slice_of(0, 20)])
    assert merged == TEXT[0:33]


def test_contained_chunk_adds_nothing():
    assert merge_chunks([slice_of(0, 33), slice_of(11, 20)]) == TEXT[0:33]


def test_gap_becomes_a_space_or_a_heading_break():
    assert merge_chunks([(0, "Alpha one."), (11, "Beta two.")]) == "Alpha one. Beta two."
    assert merge_chunks([(0, "Alpha."), (7, "## Next")]) == "Alpha.\n\n## Next"


def test_window_ranges_clip_and_merge_touching_windows():
    assert window_ranges([0], 1, 5) == [(0, 1)]
    assert window_ranges([4], 2, 5) == [(2, 4)]
    assert window_ranges([1, 3], 1, 10) == [(0, 4)]
    assert window_ranges([1, 7], 1, 10) == [(0, 2), (6, 8)]
    assert window_ranges([2], 0, 10) == [(2, 2)]

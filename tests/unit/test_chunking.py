import itertools

from storage.kb.chunking import chunk_text, estimate_tokens

DOC = """# Refunds
Refunds take 5 business days. Annual plans are refunded pro rata! Contact us?
## Annual plans
Annual plans get a refund within 30 days. After that no refund.
- item one
- item two
## Empty
"""


def test_chunks_are_exact_slices_with_offsets():
    for chunk in chunk_text(DOC, max_tokens=14):
        assert DOC[chunk.start : chunk.start + len(chunk.text)] == chunk.text


def test_chunks_never_cross_headings_and_open_with_the_heading():
    chunks = chunk_text(DOC, max_tokens=14)
    sections = {c.section for c in chunks}
    assert sections == {"Refunds", "Annual plans"}  # the empty section is dropped
    for chunk in chunks:
        assert chunk.text.count("#") <= 2
        if chunk.text.startswith("#"):
            assert chunk.text.lstrip("# ").startswith(chunk.section)
    first_annual = next(c for c in chunks if c.section == "Annual plans")
    assert first_annual.text.startswith("## Annual plans")


def test_overlap_repeats_the_last_sentence():
    chunks = chunk_text(DOC, max_tokens=14, overlap_sentences=1)
    assert "Annual plans are refunded pro rata!" in chunks[0].text
    assert chunks[1].text.startswith("Annual plans are refunded pro rata!")
    no_overlap = chunk_text(DOC, max_tokens=14, overlap_sentences=0)
    assert not no_overlap[1].text.startswith("Annual plans are refunded")


def test_no_chunk_is_contained_in_its_predecessor():
    chunks = chunk_text(DOC, max_tokens=10, overlap_sentences=1)
    for before, after in itertools.pairwise(chunks):
        assert after.start + len(after.text) > before.start + len(before.text)


def test_split_ids_are_consecutive_and_budget_holds():
    text = " ".join(f"Sentence number {i} says something short." for i in range(60))
    chunks = chunk_text(text, max_tokens=40)
    assert [c.split_id for c in chunks] == list(range(len(chunks)))
    assert all(estimate_tokens(c.text) <= 40 for c in chunks)


def test_an_overlong_sentence_is_cut_at_words():
    text = "word " * 500
    chunks = chunk_text(text.strip(), max_tokens=50, overlap_sentences=0)
    assert len(chunks) >= 10
    assert all(estimate_tokens(c.text) <= 50 for c in chunks)
    assert " ".join(c.text for c in chunks) == text.strip()

"""Sentence-window expansion (Haystack's SentenceWindowRetriever, in chunk units).

A hit is widened by its ``window`` neighbours on each side (same ``source_id``, adjacent
``split_id``); overlapping chunks are merged by their ``split_idx_start`` offsets so no text
repeats. Hits of one document whose windows touch become one passage.

Usage::

    text = merge_chunks([(0, "Refunds take 5 days. Annual"), (21, "Annual plans...")])
"""

from __future__ import annotations

from collections.abc import Iterable


def merge_chunks(chunks: Iterable[tuple[int, str]]) -> str:
    """Join ``(start, text)`` slices of one document, dropping overlaps.

    A gap (the whitespace between two chunks) becomes a space, or a blank line before a heading.
    """
    merged, end = "", None
    for start, text in sorted(chunks):
        if end is None:
            merged, end = text, start + len(text)
        elif start >= end:
            merged += ("\n\n" if text.startswith("#") else " ") + text
            end = start + len(text)
        elif start + len(text) > end:
            merged += text[end - start :]
            end = start + len(text)
    return merged


def window_ranges(split_ids: Iterable[int], window: int, n_splits: int) -> list[tuple[int, int]]:
    """Group hits' windows into disjoint inclusive ``(first, last)`` split ranges."""
    spans = sorted((max(0, s - window), min(n_splits - 1, s + window)) for s in split_ids)
    groups: list[tuple[int, int]] = []
    for first, last in spans:
        if groups and first <= groups[-1][1] + 1:
            groups[-1] = (groups[-1][0], max(groups[-1][1], last))
        else:
            groups.append((first, last))
    return groups

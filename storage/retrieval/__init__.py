"""Retrieval: retrievers, fusion, windows, slot filters, evaluation and answer sets."""

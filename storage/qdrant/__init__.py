"""Qdrant: the store protocol, the embedded and server backends, filter translation."""

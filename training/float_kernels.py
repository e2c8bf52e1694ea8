"""Keep the cross-encoder's int8 weights on disk but run its MatMuls on float kernels.

``MatMulNBits`` (onnxruntime's weight-only int8 in blocks of 32) computes in float anyway,
dequantising each block on every call; on this CPU (AVX2, no VNNI) it took 34 ms a window
against 27 ms for plain ``MatMul`` over the same dequantised weights (one thread; 28 against
20.5 ms on two), with ``accuracy_level=4`` no faster. This rewrites each ``MatMulNBits`` as
``MatMul(A, Reshape(Cast(Wq) * scale))`` over the same int8 values and block scales: every
input of the weight branch is an initializer, so onnxruntime's constant folding turns it into
the float weight once, when the session loads. The file keeps its size (the int8 values and
scales), the readings are the same to the last bit (``max |p - p'| = 0`` on the doc2dial dev
windows), and the loaded weights take 29 MB more memory (42 MB float against 11 MB int8).

Usage (training/cross_encoder.py applies it after quantising; run alone it rewrites a file
in place)::

    .venv-train/bin/python -m training.float_kernels storage/kb/assets/answerability/model.onnx
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

ZERO_POINT = 128  # MatMulNBits' implied zero point for 8 bits stored unsigned, none given


def unpacked_matmuls(model):
    """``model`` (an ``onnx.ModelProto``) with every 8-bit ``MatMulNBits`` node replaced by a
    float ``MatMul`` whose weight is built from initializers (int8 values per block, the
    block scales); returns how many nodes it replaced."""
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    initializers = {i.name: i for i in graph.initializer}
    nodes, replaced, spent, added = [], 0, set(), []
    for node in graph.node:
        if node.op_type != "MatMulNBits":
            nodes.append(node)
            continue
        at = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        k, n, block = at["K"], at["N"], at["block_size"]
        if at["bits"] != 8 or k % block or any(node.input[3:]):
            raise ValueError(f"{node.name}: only 8-bit blocks with the implied zero point unpack")
        packed = numpy_helper.to_array(initializers[node.input[1]])  # uint8 [N, K/block, block]
        scales = numpy_helper.to_array(initializers[node.input[2]]).astype(np.float32)
        values = (packed.astype(np.int16) - ZERO_POINT).astype(np.int8)
        name = node.name
        added += [
            numpy_helper.from_array(
                values.reshape(n, k).T.reshape(k // block, block, n).copy(), f"{name}_q"
            ),
            numpy_helper.from_array(
                scales.reshape(n, k // block).T.reshape(k // block, 1, n).copy(), f"{name}_s"
            ),
            numpy_helper.from_array(np.array([k, n], dtype=np.int64), f"{name}_shape"),
        ]
        nodes += [
            helper.make_node(
                "Cast", [f"{name}_q"], [f"{name}_qf"], to=TensorProto.FLOAT, name=f"{name}_cast"
            ),
            helper.make_node("Mul", [f"{name}_qf", f"{name}_s"], [f"{name}_ws"], name=f"{name}_scale"),
            helper.make_node(
                "Reshape", [f"{name}_ws", f"{name}_shape"], [f"{name}_w"], name=f"{name}_w"
            ),
            helper.make_node("MatMul", [node.input[0], f"{name}_w"], [node.output[0]], name=name),
        ]
        spent.update(node.input[1:3])
        replaced += 1
    kept = [i for i in graph.initializer if i.name not in spent] + added
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept)
    return replaced


def rewrite(path: Path) -> int:
    """Rewrite the ONNX file at ``path`` in place; returns the nodes replaced."""
    import onnx

    model = onnx.load(str(path))
    replaced = unpacked_matmuls(model)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return replaced


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path, help="an ONNX file with MatMulNBits nodes")
    print(f"{rewrite(parser.parse_args().model)} MatMulNBits nodes now float MatMuls")


if __name__ == "__main__":
    main()

"""Writes the small ONNX models the service tests use: two that load but cannot serve
(refused before they replace a working model), one that serves, slowly (the
watchdog test: a model run far longer than --stall-limit-s), and one whose batch
dimension is fixed at 1 (a user's model exported without dynamic axes).

  int-output.onnx     input float32 [1,3,8,8] -> GlobalAveragePool -> Flatten -> Cast(int64)
                      output [1,3]: declared int64, not float32 logits
  reshape-fails.onnx  input float32 [1,3,8,8] -> Reshape to [1,5] (192 elements cannot be 5)
                      output declared float32 [1,5]: loads, fails on the first run
  slow.onnx           input float32 [1,3,8,8] -> mean / 4096 -> expanded to a 4096x4096
                      matrix a -> a^5 by four MatMuls (550 GFLOP: about 2 s on one
                      AVX-512 core, longer elsewhere) -> mean -> + bias [0,1,2,3,4] ->
                      logits float32 [1,5] (class 4 wins). The matrix is derived from
                      the input, so ONNX Runtime cannot fold it away at load.
  fixed-batch.onnx    input float32 [1,3,8,8] -> GlobalAveragePool -> Flatten -> Gemm
                      (10 x identity, no bias) -> logits float32 [1,3]: the channel with
                      the largest mean wins (labels red, green, blue); the batch is
                      fixed at 1, so it runs one frame at a time.
  huge-input.onnx     input float32 [1,3,60000,60000] -> GlobalAveragePool -> Flatten ->
                      logits float32 [1,3]: a valid classifier whose declared input
                      (43 GB as float32) must be refused before anything is allocated.

Needs the PyPI package `onnx` (tested with 1.23.2). Run: python3 make_bad_models.py
The files are committed; this script says how they were made.
"""
import os

import onnx
from onnx import TensorProto, helper

here = os.path.dirname(os.path.abspath(__file__))
inp = helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 8, 8])

g = helper.make_graph(
    [
        helper.make_node("GlobalAveragePool", ["input"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Cast", ["f"], ["logits"], to=TensorProto.INT64),
    ],
    "int_output",
    [inp],
    [helper.make_tensor_value_info("logits", TensorProto.INT64, [1, 3])],
)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=7),
          os.path.join(here, "int-output.onnx"))

shape = helper.make_tensor("shape", TensorProto.INT64, [2], [1, 5])
g = helper.make_graph(
    [helper.make_node("Reshape", ["input", "shape"], ["logits"])],
    "reshape_fails",
    [inp],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 5])],
    initializer=[shape],
)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=7),
          os.path.join(here, "reshape-fails.onnx"))
n = 4096
consts = [
    helper.make_tensor("one_one", TensorProto.INT64, [2], [1, 1]),
    helper.make_tensor("square", TensorProto.INT64, [2], [n, n]),
    helper.make_tensor("n", TensorProto.FLOAT, [], [float(n)]),
    helper.make_tensor("bias", TensorProto.FLOAT, [1, 5], [0.0, 1.0, 2.0, 3.0, 4.0]),
]
g = helper.make_graph(
    [
        helper.make_node("ReduceMean", ["input"], ["m"], keepdims=0),  # opset 13: axes attr
        helper.make_node("Div", ["m", "n"], ["mn"]),  # keeps a^5 near m^5 / n: no overflow
        helper.make_node("Reshape", ["mn", "one_one"], ["m11"]),
        helper.make_node("Expand", ["m11", "square"], ["a"]),
        helper.make_node("MatMul", ["a", "a"], ["a2"]),
        helper.make_node("MatMul", ["a2", "a"], ["a3"]),
        helper.make_node("MatMul", ["a3", "a"], ["a4"]),
        helper.make_node("MatMul", ["a4", "a"], ["a5"]),
        helper.make_node("ReduceMean", ["a5"], ["s"], keepdims=1),
        helper.make_node("Reshape", ["s", "one_one"], ["s11"]),
        helper.make_node("Add", ["s11", "bias"], ["logits"]),
    ],
    "slow",
    [inp],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 5])],
    initializer=consts,
)
slow = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=7)
onnx.checker.check_model(slow)
onnx.save(slow, os.path.join(here, "slow.onnx"))
huge = helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 60000, 60000])
g = helper.make_graph(
    [
        helper.make_node("GlobalAveragePool", ["input"], ["p"]),
        helper.make_node("Flatten", ["p"], ["logits"]),
    ],
    "huge_input",
    [huge],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 3])],
)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=7),
          os.path.join(here, "huge-input.onnx"))
for name, n in [("int-output", 3), ("reshape-fails", 5), ("slow", 5), ("huge-input", 3)]:
    with open(os.path.join(here, name + ".labels.txt"), "w") as f:
        f.write("".join(f"class {i}\n" for i in range(n)))

g = helper.make_graph(
    [
        helper.make_node("GlobalAveragePool", ["input"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "w"], ["logits"]),
    ],
    "fixed_batch",
    [inp],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 3])],
    initializer=[
        helper.make_tensor("w", TensorProto.FLOAT, [3, 3], [10, 0, 0, 0, 10, 0, 0, 0, 10])
    ],
)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=7),
          os.path.join(here, "fixed-batch.onnx"))
with open(os.path.join(here, "fixed-batch.labels.txt"), "w") as f:
    f.write("red\ngreen\nblue\n")

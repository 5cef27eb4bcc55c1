"""Writes the two small ONNX models the service tests use to check that a model which
loads but cannot serve is refused before it replaces a working one.

  int-output.onnx     input float32 [1,3,8,8] -> GlobalAveragePool -> Flatten -> Cast(int64)
                      output [1,3]: declared int64, not float32 logits
  reshape-fails.onnx  input float32 [1,3,8,8] -> Reshape to [1,5] (192 elements cannot be 5)
                      output declared float32 [1,5]: loads, fails on the first run

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
for name, n in [("int-output", 3), ("reshape-fails", 5)]:
    with open(os.path.join(here, name + ".labels.txt"), "w") as f:
        f.write("".join(f"class {i}\n" for i in range(n)))

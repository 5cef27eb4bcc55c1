#!/usr/bin/env python3
"""Give an exported classifier a dynamic batch dimension, in place.

Owns: the one graph edit that lets the service run several frames per model call
(`inference.max_batch`). `export_efficientnet_lite0.py` exports with a fixed batch of 1;
in that graph the batch size sits in three places only: the input's first dimension,
the output's first dimension, and the shape constant of the one Reshape before the
classifier (`[1, -1]`). This script

  1. names the first dimension of the input and of the output `N` (symbolic);
  2. rewrites the Reshape's shape constant from `[1, -1]` to `[0, -1]` (ONNX Reshape: 0
     keeps that input dimension, so `[N, 1280, 1, 1]` becomes `[N, 1280]`);
  3. drops the stored intermediate shapes (they name batch 1) and infers them again;
  4. records `fpgagdr.batch` in the metadata, checks the model with `onnx.checker`;
  5. runs onnxruntime (CPU) on 8 random images as one batch of 8 and as 8 batches of 1
     and requires the logits to agree within 1e-4 (max |diff| is printed).

It refuses a graph whose batch dimension is already dynamic (nothing to do), or whose
Reshape constants are not the expected one. The weights are untouched.

Needs: onnx, numpy, onnxruntime (pinned in `export-requirements.txt`).

Run (from the repository root):
    /work/export-venv/bin/python models/dynamic_batch.py models/efficientnet-lite0.onnx
then update `SHA256SUMS` with the hash it prints.
"""

import hashlib
import sys

import numpy as np
import onnx
import onnxruntime
from onnx import numpy_helper, shape_inference

BATCH = "N"
MAX_ABS_DIFF = 1e-4


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def edit(model):
    graph = model.graph
    (inp,), (out,) = graph.input, graph.output
    for value in (inp, out):
        dim = value.type.tensor_type.shape.dim[0]
        if dim.HasField("dim_param"):
            sys.exit(f"{value.name}: batch dimension is already dynamic ({dim.dim_param})")
        if dim.dim_value != 1:
            sys.exit(f"{value.name}: batch dimension is {dim.dim_value}, expected 1")
        dim.Clear()
        dim.dim_param = BATCH
    reshapes = [n for n in graph.node if n.op_type == "Reshape"]
    if len(reshapes) != 1:
        sys.exit(f"expected one Reshape, found {len(reshapes)}")
    shape_name = reshapes[0].input[1]
    (init,) = [i for i in graph.initializer if i.name == shape_name]
    shape = numpy_helper.to_array(init)
    if shape.tolist() != [1, -1]:
        sys.exit(f"Reshape shape {shape.tolist()}, expected [1, -1]")
    init.CopyFrom(numpy_helper.from_array(np.array([0, -1], dtype=np.int64), shape_name))
    del graph.value_info[:]
    model = shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    meta = {p.key: p for p in model.metadata_props}
    entry = meta.get("fpgagdr.batch") or model.metadata_props.add()
    entry.key = "fpgagdr.batch"
    entry.value = (
        "dynamic first dimension N (input [N,3,224,224], output [N,1000]); "
        "edited by models/dynamic_batch.py from the batch-1 export"
    )
    return model


def check_batch_equals_singles(path):
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    (inp,), (out,) = session.get_inputs(), session.get_outputs()
    rng = np.random.default_rng(16)
    images = rng.uniform(-1.0, 1.0, size=(8, 3, 224, 224)).astype(np.float32)
    (batch,) = session.run([out.name], {inp.name: images})
    singles = np.concatenate(
        [session.run([out.name], {inp.name: images[i : i + 1]})[0] for i in range(8)]
    )
    diff = float(np.abs(batch - singles).max())
    print(f"batch of 8 vs 8 single runs: max |diff| in the logits {diff:.2e}")
    if diff > MAX_ABS_DIFF:
        sys.exit(f"batch and single runs differ by {diff} > {MAX_ABS_DIFF}")
    print(f"input {inp.shape}, output {out.shape}")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    model = edit(onnx.load(path))
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    check_batch_equals_singles(path)
    print(f"sha256 {sha256_of(path)}  {path}")


if __name__ == "__main__":
    main()

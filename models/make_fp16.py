#!/usr/bin/env python3
"""Make the half-precision copy of a classifier that `inference.precision: fp16` loads.

Owns: `<model>.fp16.onnx` next to `<model>.onnx`. ONNX Runtime's CUDA execution provider
runs a graph in the precision its tensors are stored in (unlike TensorRT, it has no
switch that lowers a float32 graph), so fp16 on the CUDA provider needs an fp16 graph.
This script converts every float32 weight and activation to float16 with onnxruntime's
own converter (`onnxruntime.transformers.float16.convert_float_to_float16`,
`keep_io_types=True`): the graph's input and output stay float32, with one Cast after
the input and one before the output, so the service feeds the same float32 tensor to
either file and reads the same float32 logits. The batch dimension stays as it is (run
`dynamic_batch.py` first).

It then runs both files on onnxruntime (CPU) over 16 random images and over the
reference photos given on the command line, prints the largest score difference, and
requires the same top-1 class everywhere and every top-5 score within 0.01.

Needs: onnx, numpy, onnxruntime, Pillow (pinned in `export-requirements.txt`).

Run (from the repository root):
    /work/export-venv/bin/python models/make_fp16.py models/efficientnet-lite0.onnx \
        chelsea.png coffee.png
then add the printed hash to `SHA256SUMS`.
"""

import hashlib
import os
import sys

import numpy as np
import onnx
import onnxruntime
from onnxruntime.transformers.float16 import convert_float_to_float16

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verify_model import preprocess, softmax  # noqa: E402

MAX_SCORE_DIFF = 0.01


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def topological(graph):
    """The converter appends its input Casts after the nodes that read them; ONNX wants
    every node after its producers, so reorder stably (first ready node first)."""
    known = {i.name for i in graph.input} | {i.name for i in graph.initializer} | {""}
    pending, ordered = list(graph.node), []
    while pending:
        ready = next(n for n in pending if all(i in known for i in n.input))
        pending.remove(ready)
        ordered.append(ready)
        known.update(ready.output)
    del graph.node[:]
    graph.node.extend(ordered)


def scores(session, images):
    (inp,), (out,) = session.get_inputs(), session.get_outputs()
    (logits,) = session.run([out.name], {inp.name: images})
    return np.stack([softmax(row.astype(np.float64)) for row in logits])


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    src, photos = sys.argv[1], sys.argv[2:]
    if not src.endswith(".onnx") or src.endswith(".fp16.onnx"):
        sys.exit(f"{src}: expected a float32 .onnx file")
    dst = src[: -len(".onnx")] + ".fp16.onnx"
    model = onnx.load(src)
    half = convert_float_to_float16(model, keep_io_types=True)
    topological(half.graph)
    meta = {p.key: p for p in half.metadata_props}
    entry = meta.get("fpgagdr.precision") or half.metadata_props.add()
    entry.key = "fpgagdr.precision"
    entry.value = (
        "float16 weights and activations, float32 input and output "
        "(models/make_fp16.py: onnxruntime.transformers.float16, keep_io_types=True)"
    )
    onnx.checker.check_model(half, full_check=True)
    onnx.save(half, dst)

    cpu = ["CPUExecutionProvider"]
    full = onnxruntime.InferenceSession(src, providers=cpu)
    reduced = onnxruntime.InferenceSession(dst, providers=cpu)
    rng = np.random.default_rng(16)
    batches = [("random", rng.uniform(-1.0, 1.0, size=(16, 3, 224, 224)).astype(np.float32))]
    batches += [(p, preprocess(p)) for p in photos]
    worst = 0.0
    for name, images in batches:
        a, b = scores(full, images), scores(reduced, images)
        for row_a, row_b in zip(a, b):
            top = np.argsort(-row_a)[:5]
            if np.argmax(row_b) != top[0]:
                sys.exit(f"{name}: fp16 top-1 {np.argmax(row_b)} != fp32 top-1 {top[0]}")
            worst = max(worst, float(np.abs(row_a[top] - row_b[top]).max()))
        print(f"{name}: fp32 top-1 {np.argmax(a, axis=1).tolist()} (fp16 agrees)")
    print(f"largest top-5 score difference fp32 vs fp16: {worst:.4f}")
    if worst > MAX_SCORE_DIFF:
        sys.exit(f"fp16 scores differ by {worst} > {MAX_SCORE_DIFF}")
    print(f"sha256 {sha256_of(dst)}  {dst}")


if __name__ == "__main__":
    main()

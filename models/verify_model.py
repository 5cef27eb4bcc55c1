#!/usr/bin/env python3
"""Classify image files with the exported model; the reference for the Rust service.

Owns: the reference preprocessing and the top-5 printout that `README.md` quotes and the
Rust inference tests (`appliance/fpgagdr-infer/src/`) compare against. It does not
export anything; `export_efficientnet_lite0.py` does.

Needs: onnxruntime (1.31.1 was used), numpy, Pillow (see `export-requirements.txt`).

Run:
    python3 models/verify_model.py models/efficientnet-lite0.onnx \
        models/efficientnet-lite0.labels.txt chelsea.png coffee.png
    python3 models/verify_model.py --tensors-to DIR IMAGE...
The second form only preprocesses (no onnxruntime needed): it writes each image's input
tensor to DIR/<file name>.f32 (float32, little-endian, [1, 3, 224, 224], C order), the
reference the Rust preprocessing is tested against
(`appliance/fpgagdr-infer/tests/reference.rs`).

Preprocessing, step by step (integer crop, so any implementation can match it exactly):
  1. Decode; convert to 8-bit RGB. A mono (mode "L") image gets its value in R, G and B.
  2. Centre crop: side c = floor(min(w, h) * 7 / 8), left = (w - c) // 2,
     top = (h - c) // 2.
  3. Resize the c x c crop to 224 x 224, Pillow BILINEAR (a triangle filter whose support
     widens with the scale factor, so it antialiases when shrinking; result rounded to
     uint8). `--resize plain` uses a 2-tap bilinear (pixel centres at +0.5, edge pixels
     clamped, no antialiasing, kept in float) to show how much that choice moves scores.
  4. float32, (x - 127) / 128, HWC -> NCHW [1, 3, 224, 224], channel order R, G, B.
Output: `logits` [1, 1000]; scores below are softmax(logits). Label i is line i (0-based)
of the labels file.
"""

import argparse
import sys

import numpy as np
from PIL import Image

SIZE = 224
MEAN = 127.0
SCALE = 128.0
TOP_K = 5


def centre_crop_box(width, height):
    side = min(width, height) * 7 // 8
    left = (width - side) // 2
    top = (height - side) // 2
    return left, top, left + side, top + side


def resize_plain_bilinear(rgb, size):
    """2-tap bilinear, half-pixel centres, edges clamped, float output (no rounding)."""
    src_h, src_w, _ = rgb.shape

    def taps(src, dst):
        pos = (np.arange(dst, dtype=np.float64) + 0.5) * (src / dst) - 0.5
        pos = np.clip(pos, 0.0, src - 1)
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, src - 1)
        return lo, hi, (pos - lo)

    y0, y1, fy = taps(src_h, size)
    x0, x1, fx = taps(src_w, size)
    img = rgb.astype(np.float64)
    rows = img[y0] * (1.0 - fy)[:, None, None] + img[y1] * fy[:, None, None]
    out = rows[:, x0] * (1.0 - fx)[None, :, None] + rows[:, x1] * fx[None, :, None]
    return out.astype(np.float32)


def preprocess(path, resize="pillow"):
    image = Image.open(path)
    image = image.convert("RGB")  # "L" -> R = G = B; alpha, if any, is dropped
    crop = image.crop(centre_crop_box(*image.size))
    if resize == "pillow":
        pixels = np.asarray(
            crop.resize((SIZE, SIZE), Image.Resampling.BILINEAR), dtype=np.float32
        )
    else:
        pixels = resize_plain_bilinear(np.asarray(crop), SIZE)
    chw = ((pixels - MEAN) / SCALE).transpose(2, 0, 1)
    return np.ascontiguousarray(chw[np.newaxis], dtype=np.float32)


def softmax(logits):
    shifted = np.exp(logits - logits.max())
    return shifted / shifted.sum()


def write_tensors(argv):
    parser = argparse.ArgumentParser(description="Write the reference input tensors.")
    parser.add_argument("--tensors-to", required=True, metavar="DIR")
    parser.add_argument("images", nargs="+")
    args = parser.parse_args(argv)
    for path in args.images:
        out = f"{args.tensors_to}/{path.rsplit('/', 1)[-1]}.f32"
        preprocess(path).astype("<f4").tofile(out)


def main():
    if "--tensors-to" in sys.argv[1:]:
        write_tensors(sys.argv[1:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("labels")
    parser.add_argument("images", nargs="+")
    parser.add_argument("--resize", choices=["pillow", "plain"], default="pillow")
    args = parser.parse_args()

    import onnxruntime  # only needed to classify; preprocess() works without it

    with open(args.labels, encoding="utf-8") as f:
        labels = f.read().splitlines()
    session = onnxruntime.InferenceSession(args.model, providers=["CPUExecutionProvider"])
    (inp,), (out,) = session.get_inputs(), session.get_outputs()
    if len(labels) != out.shape[-1]:
        sys.exit(f"{args.labels}: {len(labels)} labels, model has {out.shape[-1]} classes")

    for path in args.images:
        (logits,) = session.run([out.name], {inp.name: preprocess(path, args.resize)})
        logits = logits[0]
        scores = softmax(logits.astype(np.float64))
        print(f"{path}:")
        for rank, index in enumerate(np.argsort(-logits, kind="stable")[:TOP_K], 1):
            print(
                f"  {rank}. {index:4d}  score {scores[index]:.4f}  "
                f"logit {logits[index]:8.4f}  {labels[index]}"
            )


if __name__ == "__main__":
    main()

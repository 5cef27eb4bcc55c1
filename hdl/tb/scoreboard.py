"""What a frame read out of its slot must be (docs/frames.md, docs/card-protocol.md).

* `parse_header` / `check_header`: the 64-byte header, its CRC-32 over bytes 0..59 and
  the payload CRC-32 (zlib.crc32: polynomial 0x04C11DB7 reflected, init and xorout
  0xFFFFFFFF, the same CRC as Rust's crc32fast).
* `pattern_payload`: the simulated card's TestPattern, re-stated in Python for any
  sequence; `RustFrames` holds the frames the real Rust TestPattern rendered
  (appliance/fpgagdr-sim/examples/testpattern_frames.rs), compared byte for byte.
* `PatternCheck`: the verdict on one copied slot for the Host.
"""
import os
import struct
import zlib

MAGIC = b"FGDRFRM1"
HDR = struct.Struct("<8sHHHHIIIIQQI8xI")


def parse_header(b):
    (magic, version, hlen, fmt, rsvd, width, height, stride, plen, seq, ts, pcrc,
     hcrc) = HDR.unpack(b[:64])
    return dict(magic=magic, version=version, hlen=hlen, format=fmt, reserved=rsvd,
                width=width, height=height, stride=stride, plen=plen, seq=seq, ts=ts,
                pcrc=pcrc, hcrc=hcrc)


def make_header(fmt, width, height, stride, seq, ts, payload):
    h = bytearray(HDR.pack(MAGIC, 1, 64, fmt, 0, width, height, stride, stride * height, seq,
                           ts, zlib.crc32(payload), 0))
    h[60:64] = zlib.crc32(bytes(h[:60])).to_bytes(4, "little")
    return bytes(h)


def pattern_payload(fmt, width, height, stride, seq):
    bpp = 3 if fmt == 2 else 1
    out = bytearray(stride * height)
    for y in range(height):
        base = y * stride
        for x in range(width):
            v = (x + y + seq) & 0xFF
            for c in range(bpp):
                out[base + x * bpp + c] = (v + 85 * c) & 0xFF
    out[:8] = (seq & (2**64 - 1)).to_bytes(8, "little")
    return bytes(out)


class RustFrames:
    """Frames of the Rust TestPattern from a dump file (FGDR_PATTERN_REF): frames
    0..count-1 of the build's format and size, timestamp 0, packed rows."""

    def __init__(self, cfg):
        self.frames = {}
        path = os.environ.get("FGDR_PATTERN_REF")
        packed = cfg.width * (3 if cfg.format == 2 else 1)
        self.flen = 64 + packed * cfg.height
        if path and os.path.exists(path):
            data = open(path, "rb").read()
            for i in range(len(data) // self.flen):
                self.frames[i] = data[i * self.flen:(i + 1) * self.flen]
        self.packed = packed

    def __bool__(self):
        return bool(self.frames)


class PatternCheck:
    """Verdict on a slot copy for frames of the test pattern: "ok", "overrun",
    "overrun-torn" (the host's check said overrun and the copy indeed differs from
    the frame), or the text of what is wrong."""

    def __init__(self, cfg, rust=None):
        self.cfg = cfg
        self.rust = rust
        self.rust_compared = 0
        self.checked = 0
        self.last_ts = {}

    def expected_payload(self, seq):
        c = self.cfg
        return pattern_payload(c.format, c.width, c.height, c.stride, seq)

    def is_frame(self, ev, data):
        """The copy is exactly frame ev.seq (any timestamp)."""
        if len(data) != self.cfg.frame_len:
            return False
        h = parse_header(data)
        payload = self.expected_payload(ev.seq)
        c = self.cfg
        return data == make_header(c.format, c.width, c.height, c.stride, ev.seq, h["ts"],
                                   payload) + payload

    def problems(self, ev, data):
        c = self.cfg
        out = []
        if ev.length != c.frame_len or len(data) != c.frame_len:
            return [f"length {ev.length}, want {c.frame_len}"]
        h = parse_header(data)
        if h["magic"] != MAGIC or h["hlen"] != 64 or h["version"] != 1:
            return [f"no frame header ({data[:16].hex()})"]
        if zlib.crc32(data[:60]) != h["hcrc"]:
            out.append(f"header CRC {h['hcrc']:#010x} != {zlib.crc32(data[:60]):#010x}")
        if zlib.crc32(data[64:]) != h["pcrc"]:
            out.append(f"payload CRC {h['pcrc']:#010x} != {zlib.crc32(data[64:]):#010x}")
        if h["seq"] != ev.seq:
            out.append(f"header sequence {h['seq']}, event {ev.seq}")
        if (h["format"], h["width"], h["height"], h["stride"], h["plen"]) != \
                (c.format, c.width, c.height, c.stride, c.payload):
            out.append(f"geometry {h}")
        if not out and not self.is_frame(ev, data):
            out.append("pixels are not the test pattern of this sequence")
        prev = self.last_ts.get(ev.epoch)
        if prev is not None and h["ts"] <= prev[1] and ev.seq > prev[0]:
            out.append(f"timestamp {h['ts']} not after frame {prev[0]}'s {prev[1]}")
        self.last_ts[ev.epoch] = (ev.seq, h["ts"])
        if not out and self.rust and ev.seq in self.rust.frames:
            out += self.rust_problems(ev, data)
        return out

    def rust_problems(self, ev, data):
        """Byte for byte against the Rust TestPattern: the card's timestamp replaced by
        the source's 0 (and the header CRC recomputed), padding taken out of rows."""
        c = self.cfg
        want = self.rust.frames[ev.seq]
        payload = b"".join(data[64 + y * c.stride:64 + y * c.stride + self.rust.packed]
                           for y in range(c.height))
        pad = b"".join(data[64 + y * c.stride + self.rust.packed:64 + (y + 1) * c.stride]
                       for y in range(c.height))
        if pad.strip(b"\0"):
            return ["row padding is not zero"]
        h = bytearray(data[:64])
        h[40:48] = bytes(8)
        if c.stride != self.rust.packed:
            # a padded card says its stride; the packed source does not have one
            h[24:28] = self.rust.packed.to_bytes(4, "little")
            h[28:32] = (self.rust.packed * c.height).to_bytes(4, "little")
            h[48:52] = zlib.crc32(payload).to_bytes(4, "little")
        h[60:64] = zlib.crc32(bytes(h[:60])).to_bytes(4, "little")
        self.rust_compared += 1
        if bytes(h) + payload != want:
            diff = next(i for i, (a, b) in enumerate(zip(bytes(h) + payload, want)) if a != b)
            return [f"differs from the Rust TestPattern's frame {ev.seq} at byte {diff}"]
        return []

    def __call__(self, ev, data, torn):
        self.checked += 1
        if torn:
            return "overrun" if self.is_frame(ev, data) else "overrun-torn"
        p = self.problems(ev, data)
        return "ok" if not p else f"frame {ev.seq} (slot {ev.slot}): " + "; ".join(p)

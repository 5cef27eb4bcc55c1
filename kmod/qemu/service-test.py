#!/usr/bin/env python3
"""The host side of kmod/qemu/run.sh's "service" pass.

fpgagdrd runs inside the QEMU guest against the real fpgagdr module, its
TEST-ONLY software card and test sensor, ONNX Runtime (CPU) and the real
model.  This script drives it from the host: the service's REST API over one
forwarded loopback port (--api), the guest's test-only control endpoint
(service-init.sh, service-cgi.sh) over another (--ctl), to start the service,
kill -9 it, read the module's debugfs counters and drive the test sensor.

Each check prints "ok - NAME" or "not ok - NAME: why"; the exit status is the
number of failed checks (capped at 100).  Inference under TCG runs at well
under a frame per second: capture and the counters are
checked on every frame, top-1 on a few photos.
"""

import argparse
import json
import struct
import sys
import time
import urllib.error
import urllib.request
import zlib

TOKEN = "fpgagdr-qemu-test"
DBG = "/sys/kernel/debug/fpgagdr/fpgagdr0"

failures = []
T0 = time.monotonic()


def check(name, ok, why=""):
    t = f"[{time.monotonic() - T0:6.1f} s]"
    if ok:
        print(f"ok - {name} {t}", flush=True)
    else:
        print(f"not ok - {name}: {why} {t}", flush=True)
        failures.append(name)
    return ok


class Guest:
    def __init__(self, api, ctl):
        self.api = api
        self.ctl_url = ctl

    def ctl(self, action, body=None, **params):
        q = "&".join([action] + [f"{k}={urllib.request.quote(str(v))}" for k, v in params.items()])
        req = urllib.request.Request(f"{self.ctl_url}/cgi-bin/ctl?{q}", data=body,
                                     method="POST" if body is not None else "GET")
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, r.read().decode(errors="replace").strip()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace").strip()

    def rest(self, method, path, body=None, timeout=60):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.api}{path}", data=data, method=method)
        req.add_header("Authorization", f"Bearer {TOKEN}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def status(self):
        code, text = self.rest("GET", "/api/v1/status")
        if code != 200:
            raise RuntimeError(f"GET /api/v1/status: {code} {text}")
        return json.loads(text)

    def metrics(self):
        code, text = self.rest("GET", "/metrics")
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                out[name] = float(value)
        return out

    def counters(self):
        """The module's debugfs counters as a dict (name -> int)."""
        code, text = self.ctl("read", p=f"{DBG}/counters")
        if code != 200:
            raise RuntimeError(f"reading the module's counters: {code} {text}")
        out = {}
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1].lstrip("-").isdigit():
                out[parts[0]] = int(parts[1])
        return out


def wait_for(what, f, timeout):
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        try:
            v = f()
            if v:
                return v
            last = v
        except (OSError, RuntimeError, ValueError, KeyError) as e:
            last = e
        time.sleep(0.5)
    raise TimeoutError(f"{what}: not within {timeout} s (last: {last})")


def start_service(g, config, card):
    code, text = g.ctl("put", body=json.dumps(config).encode(), p="/tmp/fg/config.json")
    assert code == 200, f"writing the config: {code} {text}"
    code, text = g.ctl("start", card=card)
    assert code == 200, f"starting fpgagdrd: {code} {text}"
    # ONNX Runtime and the model load under TCG: tens of seconds
    return wait_for("fpgagdrd answers /api/v1/status", g.status, 480)


def top1(result):
    return result["top5"][0]["label"] if result.get("top5") else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--api", required=True)
    ap.add_argument("--ctl", required=True)
    ap.add_argument("--log", help="the guest's serial log (for the ready marker)")
    ap.add_argument("--card", default="/dev/fpgagdr0")
    ap.add_argument("--frames", required=True, help="directory of the photos (.deps/share/frames)")
    a = ap.parse_args()
    g = Guest(a.api, a.ctl)
    try:
        wait_for("the guest's control endpoint", lambda: g.ctl("alive")[0] == 200, 300)
        run(g, a)
        run_polled(g, a)
    except Exception as e:  # noqa: BLE001 - every failure is reported, then the guest stops
        check("driver", False, f"{type(e).__name__}: {e}")
        try:
            print(g.ctl("log")[1][-4000:])
        except OSError:
            pass
    finally:
        try:
            g.ctl("done")
        except OSError as e:
            print(f"telling the guest to finish: {e}")
    print(f"{len(failures)} failed: {failures}" if failures else "all passed")
    sys.exit(min(len(failures), 100))


SENSOR = "/sys/kernel/debug/fpgagdr/testeng"
SLOTS = 2  # the software card's test_slot_count in the service pass (run.sh)
CATS = {"tiger cat", "Egyptian cat", "tabby", "Persian cat", "Siamese cat"}


def png_pixels(path):
    """(width, height, channels, pixel bytes) of an 8-bit, non-interlaced PNG
    (grey or RGB): zlib and the five row filters of the PNG specification."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n = struct.unpack(">I", data[pos:pos + 4])[0]
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    assert depth == 8 and interlace == 0 and ctype in (0, 2), f"{path}: unsupported PNG"
    ch = 1 if ctype == 0 else 3
    raw, stride = zlib.decompress(idat), w * ch
    out, prev = bytearray(), bytearray(stride)
    for y in range(h):
        f, row = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = row[i - ch] if i >= ch else 0
            b, c = prev[i], prev[i - ch] if i >= ch else 0
            if f == 1:
                row[i] = (row[i] + a) & 255
            elif f == 2:
                row[i] = (row[i] + b) & 255
            elif f == 3:
                row[i] = (row[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out += row
        prev = row
    return w, h, ch, bytes(out)


def frame_of(path, seq=0):
    """A whole frame of docs/frames.md for the PNG at `path` (the sensor rewrites
    sequence, time and header CRC when it replays it)."""
    w, h, ch, px = png_pixels(path)
    head = b"FGDRFRM1" + struct.pack("<HHHHIIIIQQI8x", 1, 64, 1 if ch == 1 else 2, 0,
                                    w, h, w * ch, len(px), seq, 0, zlib.crc32(px))
    return head + struct.pack("<I", zlib.crc32(head)) + px


def sensor(g, knob, value):
    code, text = g.ctl("write", p=f"{SENSOR}/{knob}", v=value)
    assert code == 200, f"sensor {knob}={value}: {code} {text}"


def produced(g):
    """Frames the test sensor of fpgagdr0 produced so far (its next sequence)."""
    code, text = g.ctl("read", p=f"{SENSOR}/sensor")
    assert code == 200, f"sensor counters: {code} {text}"
    for line in text.splitlines():
        w = line.split()
        if len(w) >= 3 and w[1] == "produced":
            return int(w[2])
    raise RuntimeError(f"no 'produced' in {text!r}")


def counters(g):
    return g.status()["counters"]


def settle(g, key, timeout):
    """Waits until counters()[key] stops changing for 3 s; returns the counters."""
    last, since, end = None, time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < end:
        c = counters(g)
        if last is None or c[key] != last[key]:
            last, since = c, time.monotonic()
        elif time.monotonic() - since >= 3:
            return c
        time.sleep(0.5)
    raise TimeoutError(f"{key} still changing after {timeout} s")


def run(g, a):
    # The service against the real module: interrupt completion (the module as
    # loaded by the guest's /init), the host-memory back-end (no GPU in the guest).
    sensor(g, "sensor_fps", 100)
    p0 = produced(g)
    st = start_service(g, {
        "ring": {"entries": 4, "memory": "host", "when_full": "drop_oldest"},
        "card": {"timeout_ms": 1000},
        "inference": {"threads": 2, "verify_checksum": True},
    }, a.card)
    card = st["card"]
    check("status: the device node and the kernel module, its test-only card says simulated",
          card["kind"] == "device" and "kernel module ABI" in card["name"]
          and card["simulated"] is True, card)
    check("status: card.selected names the node", a.card in card.get("selected", ""), card)
    mem = st["memory"]
    # run.sh loads the module with test_slot_count=2: a short ring keeps the backlog
    # in front of the (slow, emulated) model short.
    check("ring: k x N entries, entry i meets slot i mod N",
          mem.get("card_slots") == SLOTS and mem.get("ring_entries") == 2 * SLOTS, mem)
    check("pipeline running", st["pipeline"]["state"] == "running", st["pipeline"])

    # Frames flow; the chain cache after a hundred laps of the ring. No inference is
    # waited for here: under TCG one takes minutes on a loaded machine, and the photos
    # below prove inference (and the interrupt-to-result latency) on frames of their own.
    c = wait_for("a hundred laps", lambda: counters(g)["frames_captured"] >= 200 * SLOTS
                 and counters(g), 300)
    check("frames flow", c["frames_captured"] >= 200 * SLOTS, c)
    check("no checksum or sequence errors",
          c["checksum_errors"] == 0 and c["sequence_errors"] == 0, c)
    rate = g.status()["memory"].get("chain_cache_hit_rate") or 0
    check("chain cache >= 99 % after the first lap", rate >= 0.99, (rate, c))
    check("chain built once per ring entry", c["chain_cache_misses"] <= 2 * SLOTS, c)
    check("/metrics: overrun counter", "fpgagdr_frames_overrun_total" in g.metrics(), "")

    # Overrun: the sensor writes a frame, waits until the module latched its record,
    # then writes N more, so the first one's slot is overwritten after the service was
    # told of it. The card's DMA engine picks each run up 300 ms late meanwhile (a host
    # that is slow to read), so the overwrite comes before the read whatever the
    # guest's scheduling; 300 ms stays well inside card.timeout_ms.
    sensor(g, "sensor_fps", 5)
    sensor(g, "pickup_ms", 300)
    before = counters(g)
    sensor(g, "sensor_overrun", 1)
    c = wait_for("the overrun counted", lambda: (
        (lambda c: c if c["frames_overrun"] > before["frames_overrun"] else None)(counters(g))), 60)
    sensor(g, "pickup_ms", 0)
    check("overrun counted as such", c["frames_overrun"] > before["frames_overrun"], (before, c))

    # Stall: bounded timeouts counted, then recovery by itself.
    sensor(g, "sensor_stall", 1)
    c = wait_for("frame-wait timeouts counted",
                 lambda: (lambda c: c if c["frame_wait_timeouts"] >= 2 else None)(counters(g)), 60)
    check("stall: bounded timeouts counted", c["frame_wait_timeouts"] >= 2, c)
    # Every frame accounted for: produced = captured + missed + queue overflow.
    c = settle(g, "frames_captured", 60)
    made = produced(g) - p0
    got = c["frames_captured"] + c["frames_missed"] + c["event_queue_overflows"]
    check("captured + missed + overflow = produced, exactly", got == made,
          f"produced {made}, captured {c['frames_captured']} + missed {c['frames_missed']}"
          f" + overflow {c['event_queue_overflows']} = {got}")
    n = c["frames_captured"]
    sensor(g, "sensor_stall", 0)
    wait_for("capture resumes", lambda: counters(g)["frames_captured"] > n + 10, 60)
    check("stall: recovers by itself", g.status()["pipeline"]["state"] == "running")

    # Known photos through the test sensor: the right top-1. The photo is pushed (the
    # sensor stalled meanwhile) and replayed at the sensor's rate; with drop-oldest the
    # ring's waiting entries are soon all the photo's frames, so a result of its size
    # comes after at most the inference in flight and one more: two model runs a photo,
    # not a drain of the whole ring (under TCG each run takes a minute or more).
    for name, ok in [("coffee.png", lambda t: t == "espresso"), ("chelsea.png", lambda t: t in CATS)]:
        sensor(g, "sensor_stall", 1)
        g.ctl("write", p=f"{SENSOR}/sensor_frames_clear", v=1)
        code, text = g.ctl("put", body=frame_of(f"{a.frames}/{name}"), p=f"{SENSOR}/sensor_frames")
        assert code == 200, f"pushing {name}: {code} {text}"
        sensor(g, "sensor_stall", 0)
        w, h, _, _ = png_pixels(f"{a.frames}/{name}")
        r = wait_for(f"a result of {name}", lambda: (lambda r: r if r and r["frame"]["width"] == w
                     and r["frame"]["height"] == h else None)(latest(g)), 900)
        check(f"{name}: top-1 {top1(r)}", ok(top1(r)), r.get("top5"))
    c = counters(g)
    check("photos: every inferred frame's CRC checks, drop-oldest drops",
          c["checksum_errors"] == 0 and c["frames_inferred"] >= 2 and c["frames_dropped"] > 0, c)
    m = g.metrics()
    check("/metrics: interrupt-to-result latency",
          'fpgagdr_stage_latency_seconds{stage="end_to_end",quantile="0.5"}' in m
          and 'fpgagdr_stage_latency_seconds{stage="pickup",quantile="0.5"}' in m, sorted(m)[:5])
    g.ctl("write", p=f"{SENSOR}/sensor_frames_clear", v=1)
    sensor(g, "sensor_fps", 100)

    # Stop and start over REST.
    # stop joins the inference thread, which may be in the middle of a model run
    code, text = g.rest("POST", "/api/v1/pipeline/stop", timeout=900)
    check("REST stop", code == 200 and json.loads(text)["pipeline"]["state"] == "stopped", text[:300])
    # start warms the model up again (one run on a grey frame): minutes under TCG
    code, text = g.rest("POST", "/api/v1/pipeline/start", timeout=900)
    check("REST start", code == 200 and json.loads(text)["pipeline"]["state"] == "running", text[:300])
    n = counters(g)["frames_captured"]
    wait_for("frames after the restart", lambda: counters(g)["frames_captured"] > n + 10, 120)

    # kill -9 with pins and a frame wait outstanding: the module's counters go back.
    kill9_releases(g, "interrupt")


def kill9_releases(g, what):
    """kill -9 of the service with pins and a frame wait outstanding: the module's
    pin and wait (subscriber) counters go back to zero."""
    mod = g.counters()
    check(f"{what}: pins held while running", mod.get("pins", 0) > 0, mod)
    sensor(g, "sensor_stall", 1)  # capture now sits in WAIT_FRAME
    time.sleep(1)
    code, text = g.ctl("read", p=f"{DBG}/frames")
    subs = [int(w[1]) for w in map(str.split, text.splitlines()) if len(w) == 2 and w[0] == "subscribers"]
    check(f"{what}: a frame wait outstanding", subs and subs[0] > 0, text)
    code, _ = g.ctl("kill9")
    check(f"{what}: kill -9", code == 200)
    wait_for("fpgagdrd gone", lambda: g.ctl("alive")[1] == "0", 30)
    mod = wait_for("the module's pins back to zero",
                   lambda: (lambda m: m if m.get("pins") == 0 else None)(g.counters()), 30)
    check(f"{what}: kill -9: pins back to zero", mod.get("pins") == 0, mod)
    code, text = g.ctl("read", p=f"{DBG}/frames")
    check(f"{what}: kill -9: no frame subscriber left", "subscribers 0" in text, text)
    sensor(g, "sensor_stall", 0)


def run_polled(g, a):
    """Poll completion, in the same boot: the module loaded again with the software
    card's test_poll=1 (DMA completion and frame-done found by polling status
    registers, no interrupt), the service started again; a trimmed set of checks."""
    code, text = g.ctl("reload", poll=1)
    check("poll: module reloaded with test_poll=1", code == 200, text)
    code, text = g.ctl("read", p=f"{DBG}/frames")
    check("poll: frame-done is polled", code == 200 and "polled 1" in text.splitlines(), text)
    sensor(g, "sensor_fps", 100)
    p0 = produced(g)
    st = start_service(g, {
        "ring": {"entries": 4, "memory": "host", "when_full": "drop_oldest"},
        "card": {"timeout_ms": 1000},
        "inference": {"threads": 2, "verify_checksum": True},
    }, a.card)
    check("poll: pipeline running", st["pipeline"]["state"] == "running", st["pipeline"])
    c = wait_for("frames in poll mode", lambda: counters(g)["frames_captured"] >= 100 * SLOTS
                 and counters(g), 300)
    check("poll: frames flow", c["frames_captured"] >= 100 * SLOTS, c)
    # every frame accounted for: stall the sensor, let capture drain, then count
    sensor(g, "sensor_stall", 1)
    c = settle(g, "frames_captured", 60)
    made = produced(g) - p0
    got = c["frames_captured"] + c["frames_missed"] + c["event_queue_overflows"]
    # Each captured frame's header sequence is checked at capture, the payload CRC of
    # each inferred one at inference (the C suite checks every frame's payload CRC).
    check("poll: no checksum or sequence errors",
          c["checksum_errors"] == 0 and c["sequence_errors"] == 0, c)
    check("poll: captured + missed + overflow = produced, exactly", got == made,
          f"produced {made}, captured {c['frames_captured']} + missed {c['frames_missed']}"
          f" + overflow {c['event_queue_overflows']} = {got}")
    sensor(g, "sensor_stall", 0)
    n = c["frames_captured"]
    wait_for("capture resumes", lambda: counters(g)["frames_captured"] > n + 10, 60)
    kill9_releases(g, "poll")


def latest(g):
    code, text = g.rest("GET", "/api/v1/results/latest")
    return json.loads(text) if code == 200 else None


if __name__ == "__main__":
    main()

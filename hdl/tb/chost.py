"""The module's own frame-done code as the testbench's host handler (hdl/README.md,
"The module's handler on the RTL").

kmod/fpgagdr-fdone.c — the register sequence the kernel module's interrupt handler,
poll worker and transfer path run (take, check, acknowledge; EPOCH; the storm count;
the torn-frame check) — is built unchanged with the unit tests' user-space shim into a
shared library (hdl/run.sh: fdone_cosim.c + fpgagdr-fdone.c, FGDR_CLIB names it) and
called here through ctypes.  `CHandler` is a host handler of the blocking seam
(host.py): each call runs in a thread under `cocotb.external`, and every register
access the C makes comes back through a ctypes callback as a `cocotb.function` call:
a real AXI4-Lite transaction on the RTL.  What `CHandler` adds is what
kmod/fpgagdr-frames.c does around those calls (a card back or reset: take again; a
storm: CAPTURE without IRQ_EN, poll), no decision of its own.
"""
import ctypes
import os

import fgdr_regs as R
from host import (ALL_ONES, CAPTURE, IRQ_EN, Event, Geometry, ReferenceHandler,
                  run_program_blocking)

# enum fpgagdr_fdone_action (kmod/fpgagdr-fdone.h)
NONE, EVENT, REPEAT, STORM, GONE, BACK, EPOCH = range(7)
ACTIONS = ("none", "event", "repeat", "storm", "gone", "back", "epoch")
# FPGAGDR_FRAMES_RULE_* (kmod/fpgagdr-fdone.h)
RULES = {1: "the sequence must grow", 2: "the slot must be sequence mod SLOT_COUNT",
         3: "a frame is 64 bytes up to the slot size"}
FRAME_CHECK_TORN = 2     # FPGAGDR_FRAME_CHECK_TORN (include/uapi/linux/fpgagdr.h)
# cosim_counters() (fdone_cosim.c): struct fpgagdr_fdone's counters, in this order
C_COUNTERS = ("events", "missed", "protocol_errors", "repeated", "storms", "gone_reads",
              "rebases", "epoch_changes", "dropped", "torn", "epoch", "stormed")

READ_FN = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint32)
WRITE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32)


class CosimEv(ctypes.Structure):
    """struct cosim_ev (fdone_cosim.c)."""
    _fields_ = [("seq", ctypes.c_uint64), ("gap", ctypes.c_uint64), ("slot", ctypes.c_uint32),
                ("len", ctypes.c_uint32), ("rule", ctypes.c_uint32), ("epoch", ctypes.c_uint32),
                ("fresh", ctypes.c_uint32), ("new_epoch", ctypes.c_uint32)]


def load_library(path=None):
    path = path or os.environ.get("FGDR_CLIB")
    if not path or not os.path.exists(path):
        raise AssertionError(f"the module's frame-done library is not built (FGDR_CLIB={path!r}); "
                             "hdl/run.sh builds it")
    lib = ctypes.CDLL(path)
    p = ctypes.c_void_p
    lib.cosim_new.restype = p
    lib.cosim_new.argtypes = [READ_FN, WRITE_FN]
    lib.cosim_free.argtypes = [p]
    lib.cosim_init.argtypes = [p, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32]
    lib.cosim_take.restype = ctypes.c_int
    lib.cosim_take.argtypes = [p, ctypes.POINTER(CosimEv)]
    lib.cosim_epoch.restype = ctypes.c_int
    lib.cosim_epoch.argtypes = [p]
    lib.cosim_torn.restype = ctypes.c_uint32
    lib.cosim_torn.argtypes = [p, ctypes.c_uint64, ctypes.c_uint32]
    lib.cosim_dropped.restype = ctypes.c_uint64
    lib.cosim_dropped.argtypes = [p]
    lib.cosim_storm_over.argtypes = [p]
    lib.cosim_counters.argtypes = [p, ctypes.POINTER(ctypes.c_uint64)]
    return lib


class CHandler:
    """A host handler (bind / interrupt / after_dma, blocking) whose decisions are
    kmod/fpgagdr-fdone.c's.

    ack_delay: None, or a callable giving clocks to wait before the C's HOST_ACK write
    reaches the bus (to sweep the acknowledge across frame completions).
    deaf_ack: TEST DOUBLE of a card that ignores HOST_ACK — the write is not passed on
    to the RTL (the frame-done storm the module must survive).
    epoch_on_bind: a later bind reads EPOCH, as the module does when capture starts;
    False: it does not, so a reset is first seen by fpgagdr_fdone_take() itself (a
    record whose sequence does not grow)."""

    def __init__(self, ack_delay=None, lib=None, epoch_on_bind=True):
        self.lib = lib or load_library()
        self.ack_delay = ack_delay
        self.epoch_on_bind = epoch_on_bind
        self.new_epochs = 0         # events taken with new_epoch set
        self.deaf_ack = False
        self.bar = None
        self.error = None
        self.actions = {a: 0 for a in ACTIONS}
        self.storm = False          # interrupt masked, polled (fpgagdr-frames.c)
        self.acks_swallowed = 0
        # keep the callbacks alive as long as the library may call them
        self._rd = READ_FN(self._read)
        self._wr = WRITE_FN(self._write)
        self.card = self.lib.cosim_new(self._rd, self._wr)
        self.bound = False
        self.geo = None

    # ---- the C's register accessors (ctypes callbacks, in the handler's thread) ----
    def _read(self, _ctx, off):
        if self.error:
            return ALL_ONES
        try:
            return self.bar.read32(off) & ALL_ONES
        except BaseException as e:          # noqa: BLE001 - a callback cannot raise
            self.error = e
            return ALL_ONES

    def _write(self, _ctx, off, val):
        if self.error:
            return
        try:
            if off == R.HOST_ACK:
                if self.ack_delay:
                    self.bar.delay(self.ack_delay())
                if self.deaf_ack:
                    self.acks_swallowed += 1
                    return
            self.bar.write32(off, val)
        except BaseException as e:          # noqa: BLE001
            self.error = e

    def _c(self, bar, fn, *args):
        """Calls into the library with `bar` as the register block; an exception in a
        callback is raised here, after the C returned."""
        self.bar, self.error = bar, None
        r = fn(self.card, *args)
        if self.error:
            err, self.error = self.error, None
            raise err
        return r

    def counters(self):
        out = (ctypes.c_uint64 * len(C_COUNTERS))()
        self.lib.cosim_counters(self.card, out)
        return dict(zip(C_COUNTERS, out))

    # ---- the seam ----
    def bind(self, bar):
        """Attach (the geometry as the module reads it) and, on every later bind (capture
        started again after a reset), fpgagdr_fdone_epoch(): the module's look at EPOCH
        when capture starts."""
        geo = run_program_blocking(ReferenceHandler().bind_program(), bar)
        if not self.bound:
            self._c(bar, self.lib.cosim_init, geo.slot_count, geo.slot_size, geo.version)
            self.bound = True
        elif self.epoch_on_bind:
            self.actions[ACTIONS[self._c(bar, self.lib.cosim_epoch)]] += 1
        geo.epoch = self.counters()["epoch"]
        self.geo = geo
        return Geometry(geo.version, geo.slot_base, geo.slot_size, geo.slot_count,
                        geo.user_irq, geo.epoch)

    def interrupt(self, bar):
        """fpgagdr_frames_take(): take; a card back or reset is set up again and taken
        again; an event is handed out, a storm masks frame-done (CAPTURE without
        IRQ_EN) and the caller polls.  None: not ours (nothing pending)."""
        ev = CosimEv()
        act = self._c(bar, self.lib.cosim_take, ctypes.byref(ev))
        if act in (BACK, EPOCH):
            self.actions[ACTIONS[act]] += 1
            bar.write32(R.CONTROL, self._control())
            act = self._c(bar, self.lib.cosim_take, ctypes.byref(ev))
        self.actions[ACTIONS[act]] += 1
        if act == NONE:
            return None
        if act == STORM:
            self.storm = True
            bar.write32(R.CONTROL, self._control())
            return []
        if act != EVENT:
            return []
        # new_epoch: the module drops the events still queued (their slots were
        # rewritten); the scenarios that reset wait until the host has none
        self.new_epochs += bool(ev.new_epoch)
        return [Event(ev.seq, ev.slot, ev.len, ev.epoch, missed=ev.gap,
                      rule=RULES.get(ev.rule) if ev.rule else None, first=bool(ev.fresh))]

    def _control(self):
        return CAPTURE | (0 if self.storm else IRQ_EN)

    def storm_over(self, bar):
        """Capture restarted (fpgagdr_frames_apply): interrupts back, repeats count
        towards a new storm."""
        self.storm = False
        self._c(bar, self.lib.cosim_storm_over)

    def after_dma(self, bar, ev):
        """fpgagdr_fdone_torn() after the C2H copy: True when it did not vouch for it."""
        return self._c(bar, self.lib.cosim_torn, ev.seq, ev.epoch) == FRAME_CHECK_TORN

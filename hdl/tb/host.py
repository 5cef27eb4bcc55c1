"""The host side of the card's testbench: what the module (kmod/fpgagdr-frames.c) and
user space do with the card, as TEST MODELS driving the RTL.

The seam (hdl/README.md, "The host-handler seam"): everything the host decides is in
a *host handler* with three calls, each given a `bar` whose `read32(off)` and
`write32(off, value)` are blocking 32-bit accesses to the user register block:

    bind(bar)            -> Geometry       at attach, and after a card reset
    interrupt(bar)       -> [Event] | None  the interrupt handler: take the record,
                                            check it, acknowledge it; None: not ours
    after_dma(bar, ev)   -> bool            the torn-frame check after the C2H copy of
                                            ev's slot: True if it must count as overrun

`ReferenceHandler` is the testbench's own implementation (docs/card-protocol.md, "What
the host does").  It is written as register programs (generators yielding Read/Write)
so the same code runs on either driver: `AsyncBar` (a coroutine per access: fast) or,
through `BlockingHandler`, the blocking seam above (each call in a thread under
`cocotb.external`, each access a `cocotb.function` call), which is how a handler written
in C and loaded with ctypes plugs in: give `Host` any object with the three calls and
`blocking=True`.
"""
import collections
import random
from dataclasses import dataclass

import cocotb
from cocotb.triggers import Event as SimEvent, Timer

import fgdr_regs as R

CLOCK_NS = 4
PENDING = 1 << R.BITS[("IRQ_STATUS", "FRAME_PENDING")]
CAPTURE = 1 << R.BITS[("CONTROL", "CAPTURE")]
IRQ_EN = 1 << R.BITS[("CONTROL", "IRQ_EN")]
ALL_ONES = 0xFFFF_FFFF


@dataclass
class Read:
    off: int


@dataclass
class Write:
    off: int
    val: int


@dataclass
class Delay:
    clocks: int


@dataclass
class Geometry:
    version: int
    slot_base: int
    slot_size: int
    slot_count: int
    user_irq: int
    epoch: int


@dataclass
class Event:
    """One frame-done event as the handler read it."""
    seq: int
    slot: int
    length: int
    epoch: int
    missed: int = 0          # frames completed since the previous event, not seen
    rule: str | None = None  # the protocol rule the record broke, if any
    first: bool = False      # the first event after bind or a new epoch


class CardRefused(Exception):
    """bind() found a rule broken; the message names it."""


class CardGone(Exception):
    """A register read all ones: the card is gone."""


# ---------------------------------------------------------------------------------
# The reference handler: the module's policy, as register programs
# ---------------------------------------------------------------------------------
class ReferenceHandler:
    """Protocol 1.1, host side.  Programs: bind_program, interrupt_program,
    after_dma_program (generators: yield Read/Write/Delay, receive the value read).
    ack_delay: None, or a callable giving clocks to wait between taking the record and
    writing HOST_ACK (to sweep the acknowledge across frame completions)."""

    def __init__(self, ack_delay=None):
        self.ack_delay = ack_delay
        self.geo = None
        self.prev = None          # sequence of the previous event (this epoch)
        self.spurious = 0

    def bind_program(self):
        magic = yield Read(R.MAGIC)
        if magic == ALL_ONES:
            raise CardGone("MAGIC reads all ones")
        if magic != R.REGS["MAGIC"][2]:
            raise CardRefused(f"MAGIC is not 0x52444746 ({magic:#x})")
        version = yield Read(R.VERSION)
        if version >> 16 != 1:
            raise CardRefused(f"VERSION major is not 1 ({version:#x})")
        lo = yield Read(R.SLOT_BASE_LO)
        hi = yield Read(R.SLOT_BASE_HI)
        size = yield Read(R.SLOT_SIZE)
        count = yield Read(R.SLOT_COUNT)
        irq = yield Read(R.USER_IRQ)
        epoch = yield Read(R.EPOCH)
        if not R.SLOT_COUNT_MIN <= count <= R.SLOT_COUNT_MAX:
            raise CardRefused(f"SLOT_COUNT is not {R.SLOT_COUNT_MIN}..{R.SLOT_COUNT_MAX} ({count})")
        if size < 64 or size % 4096 or lo % 4096:
            raise CardRefused("SLOT_BASE and SLOT_SIZE must be multiples of 4096")
        if irq > 15:
            raise CardRefused(f"USER_IRQ is not 0..15 ({irq})")
        if version & 0xFFFF >= 1 and epoch == 0:
            raise CardRefused("EPOCH reads 0 on a 1.1 card")
        self.geo = Geometry(version, hi << 32 | lo, size, count, irq, epoch)
        self.prev = None
        return self.geo

    def interrupt_program(self):
        status = yield Read(R.IRQ_STATUS)
        if status == ALL_ONES:
            raise CardGone("IRQ_STATUS reads all ones")
        if not status & PENDING:
            self.spurious += 1
            return None
        lo = yield Read(R.DONE_SEQ_LO)         # latches the record
        hi = yield Read(R.DONE_SEQ_HI)
        slot = yield Read(R.DONE_SLOT)
        length = yield Read(R.DONE_LENGTH)
        if self.ack_delay:
            yield Delay(self.ack_delay())
        yield Write(R.HOST_ACK, lo)
        epoch = yield Read(R.EPOCH)
        seq = hi << 32 | lo
        ev = Event(seq, slot, length, epoch)
        if epoch != self.geo.epoch:
            # a restarted card: a new sequence (docs/card-protocol.md, "Reset")
            self.geo.epoch = epoch
            self.prev = None
        if self.prev is not None and seq <= self.prev:
            ev.rule = "the sequence must grow"
        elif slot != seq % self.geo.slot_count:
            ev.rule = f"the slot must be sequence mod {self.geo.slot_count}"
        elif not 64 <= length <= self.geo.slot_size:
            ev.rule = f"a frame is 64..{self.geo.slot_size} bytes, the slot size"
        if ev.rule is None:
            ev.first = self.prev is None
            ev.missed = 0 if self.prev is None else seq - self.prev - 1
            self.prev = seq
        return [ev]

    def after_dma_program(self, ev):
        live = yield Read(R.LIVE_SEQ_LO)
        if live == ALL_ONES:
            return True
        # the writer starts frame s + N only after s + N - 1 completed
        return (live - ev.seq) & 0xFFFF_FFFF >= self.geo.slot_count - 1


def _step(gen, value):
    try:
        return False, gen.send(value)
    except StopIteration as stop:
        return True, stop.value


async def run_program(gen, bar):
    """Runs a register program on an AsyncBar."""
    done, op = _step(gen, None)
    while not done:
        if isinstance(op, Read):
            done, op = _step(gen, await bar.read(op.off))
        elif isinstance(op, Delay):
            if op.clocks:
                await Timer(op.clocks * CLOCK_NS, "ns")
            done, op = _step(gen, None)
        else:
            await bar.write(op.off, op.val)
            done, op = _step(gen, None)
    return op


def run_program_blocking(gen, bar):
    """Runs a register program on a blocking bar (read32/write32)."""
    done, op = _step(gen, None)
    while not done:
        if isinstance(op, Read):
            done, op = _step(gen, bar.read32(op.off))
        elif isinstance(op, Delay):
            bar.delay(op.clocks)
            done, op = _step(gen, None)
        else:
            bar.write32(op.off, op.val)
            done, op = _step(gen, None)
    return op


class BlockingHandler:
    """The reference handler behind the blocking seam (what a C handler implements)."""

    def __init__(self, ref=None):
        self.ref = ref or ReferenceHandler()

    def bind(self, bar):
        return run_program_blocking(self.ref.bind_program(), bar)

    def interrupt(self, bar):
        return run_program_blocking(self.ref.interrupt_program(), bar)

    def after_dma(self, bar, ev):
        return run_program_blocking(self.ref.after_dma_program(ev), bar)


# ---------------------------------------------------------------------------------
# Register access
# ---------------------------------------------------------------------------------
class AsyncBar:
    """The user BAR through cocotbext-axi's AXI4-Lite master (the XDMA's m_axil).  An
    access that never completes ends the test at its time limit (axil_fuzz bounds each
    access itself)."""

    def __init__(self, axil):
        self.axil = axil
        self.reads = 0
        self.writes = 0
        self.vanish_in = None       # vanish(): reads left before the card is gone
        self.gone_reads = 0         # reads answered all ones by the vanished card

    def vanish(self, after_reads=0):
        """TEST DOUBLE knob of a card gone from the bus (surprise removal, link down):
        after `after_reads` more reads, every read answers all ones without reaching the
        RTL (a PCIe read no one completes) and every write is lost, until back()."""
        self.vanish_in = after_reads

    def back(self):
        """The card answers on the bus again."""
        self.vanish_in = None

    async def read(self, off):
        self.reads += 1
        if self.vanish_in is not None:
            if self.vanish_in == 0:
                self.gone_reads += 1
                return ALL_ONES
            self.vanish_in -= 1
        return await self.axil.read_dword(off)

    async def write(self, off, val):
        self.writes += 1
        if self.vanish_in == 0:
            return
        await self.axil.write_dword(off, val & ALL_ONES)


class BlockingBar:
    """read32/write32 for code running in a cocotb.external thread."""

    def __init__(self, bar):
        self._read = cocotb.function(bar.read)
        self._write = cocotb.function(bar.write)
        self._delay = cocotb.function(self._wait)

    @staticmethod
    async def _wait(clocks):
        await Timer(clocks * CLOCK_NS, "ns")

    def read32(self, off):
        return self._read(off)

    def write32(self, off, val):
        self._write(off, val)

    def delay(self, clocks):
        if clocks:
            self._delay(clocks)


# ---------------------------------------------------------------------------------
# The host: interrupt delivery, the handler, the event queue, the C2H reader
# ---------------------------------------------------------------------------------
@dataclass
class Timing:
    """Host timing in clocks (4 ns): ranges drawn per use."""
    irq_latency: tuple = (4, 40)     # message or line -> handler start
    eoi: tuple = (4, 20)             # INTx: handler return -> line looked at again
    dma_delay: tuple = (10, 100)     # event queued -> C2H copy starts
    dma_time: tuple = (10, 40)       # the copy's duration
    dma_chunks: int = 2              # the copy reads the slot in this many steps
    dma_slow: tuple = (0.0, (0, 0))  # (probability, duration range) of a slow copy


@dataclass
class Tally:
    """One epoch's counting, from the host's point of view."""
    epoch: int
    first: int | None = None
    last: int | None = None
    events: int = 0
    captured: int = 0
    overrun: int = 0
    missed: int = 0
    torn_seen: int = 0        # overruns whose copy really differed from the frame

    def produced(self):
        return 0 if self.first is None else self.last - self.first + 1


class Host:
    """Attaches `handler` to the card behind `bench`, takes its interrupts, queues
    events, copies each event's slot (C2H) and hands it to `check_frame`."""

    def __init__(self, bench, handler=None, blocking=False, timing=None, rng=None):
        self.bench = bench
        self.blocking = blocking
        self.handler = handler or (BlockingHandler() if blocking else ReferenceHandler())
        self.timing = timing or Timing()
        self.rng = rng or random.Random(2)
        self.bar = AsyncBar(bench.axil)
        self.bbar = BlockingBar(self.bar) if blocking else None
        self.geo = None
        self.queue = collections.deque()
        self.queue_event = SimEvent()
        self.tallies = []
        self.errors = []
        self.frames_checked = 0
        self.handler_runs = 0
        self.spurious_runs = 0
        self.events = []
        self.check_frame = None     # (ev, data, torn) -> "ok" | "overrun" | error text
        self.paused = False         # the interrupt handler does not run
        self.busy = 0               # handler or reader at work
        self._msi = False
        self._irq_wake = SimEvent()
        self._line = False
        bench.xdma.on_msi = self._on_msi
        bench.xdma.on_intx = self._on_intx
        self._tasks = []

    # ---- the handler through either driver ----
    async def _call(self, name, *args):
        if self.blocking:
            fn = getattr(self.handler, name)
            return await cocotb.external(fn)(self.bbar, *args)
        prog = getattr(self.handler, name + "_program")(*args)
        return await run_program(prog, self.bar)

    def tally(self, epoch):
        if not self.tallies or self.tallies[-1].epoch != epoch:
            self.tallies.append(Tally(epoch))
        return self.tallies[-1]

    # ---- attach / detach ----
    async def attach(self, control=CAPTURE | IRQ_EN):
        self.geo = await self._call("bind")
        self.tally(self.geo.epoch)
        self.bench.xdma.set_mask(True)
        await self.bar.write(R.CONTROL, control)
        if not self._tasks:
            self._tasks = [cocotb.start_soon(self._irq_loop()), cocotb.start_soon(self._reader())]

    async def detach(self):
        await self.bar.write(R.CONTROL, 0)
        self.bench.xdma.set_mask(False)

    def stop_tasks(self):
        for t in self._tasks:
            t.kill()
        self._tasks = []

    # ---- interrupt delivery (the host CPU's side of MSI / INTx) ----
    def _on_msi(self):
        self._msi = True
        self._irq_wake.set()

    def _on_intx(self, level):
        self._line = level
        self._irq_wake.set()

    def _irq_asserted(self):
        return self._msi or self._line

    async def _clocks(self, rng_range):
        n = self.rng.randint(*rng_range)
        if n:
            await Timer(n * CLOCK_NS, "ns")

    async def _irq_loop(self):
        legacy = self.bench.xdma.mode == "legacy"
        while True:
            while not self._irq_asserted() or self.paused:
                self._irq_wake.clear()
                await self._irq_wake.wait()
            self.busy += 1
            await self._clocks(self.timing.irq_latency)
            self._msi = False
            await self._handle()
            if legacy:
                await self._clocks(self.timing.eoi)
            self.busy -= 1

    async def _handle(self):
        self.handler_runs += 1
        events = await self._call("interrupt")
        if events is None:
            self.spurious_runs += 1
            return
        for ev in events:
            self.events.append(ev)
            if ev.rule:
                self.errors.append(f"event {ev.seq} slot {ev.slot} length {ev.length}: {ev.rule}")
                continue
            t = self.tally(ev.epoch)
            if ev.first:
                t.first = ev.seq
            t.last = ev.seq
            t.events += 1
            t.missed += ev.missed
            self.queue.append(ev)
            self.queue_event.set()

    # ---- the reader: C2H copy of each event's slot, the torn-frame check ----
    async def _reader(self):
        while True:
            while not self.queue:
                self.queue_event.clear()
                await self.queue_event.wait()
            ev = self.queue.popleft()
            self.busy += 1
            await self._clocks(self.timing.dma_delay)
            duration = self.rng.randint(*self.timing.dma_time)
            if self.rng.random() < self.timing.dma_slow[0]:
                duration = self.rng.randint(*self.timing.dma_slow[1])
            data = await self.bench.c2h_copy(self.geo, ev, duration, self.timing.dma_chunks)
            torn = await self._call("after_dma", ev)
            t = self.tally(ev.epoch)
            verdict = self.check_frame(ev, data, torn) if self.check_frame else "ok"
            if verdict == "ok":
                t.captured += 1
            elif verdict in ("overrun", "overrun-torn"):
                t.overrun += 1
                t.torn_seen += verdict == "overrun-torn"
            else:
                self.errors.append(verdict)
            self.frames_checked += 1
            self.busy -= 1

    def check_counts(self):
        """produced = captured + overrun + missed, per epoch; no errors."""
        problems = list(self.errors)
        for t in self.tallies:
            if t.first is None:
                continue
            if t.captured + t.overrun + t.missed != t.produced():
                problems.append(
                    f"epoch {t.epoch}: captured {t.captured} + overrun {t.overrun} + missed "
                    f"{t.missed} != produced {t.produced()} (sequences {t.first}..{t.last})")
        return problems

    def summary(self):
        return "; ".join(
            f"epoch {t.epoch}: {t.events} events, produced {t.produced()} = captured "
            f"{t.captured} + overrun {t.overrun} (torn {t.torn_seen}) + missed {t.missed}"
            for t in self.tallies if t.first is not None) + \
            f"; handler runs {self.handler_runs}, spurious {self.spurious_runs}"

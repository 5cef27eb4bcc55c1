"""The bench: the RTL under test (tb_card.sv) with its models wired up.

Build parameters come from the environment (hdl/run.sh passes the same values to
Icarus): FGDR_PARAMS="DATA_W=64 WIDTH=16 ...", FGDR_BUILD (a name).
"""
import logging
import os
import random
from dataclasses import dataclass

from cocotb.triggers import RisingEdge, Timer
from cocotbext.axi import AxiLiteBus, AxiLiteMaster

import fgdr_regs as R
from xdma_model import XdmaUserIrq

CLOCK_NS = 4
SLOT_BASE = 0x1_0000     # tb_card.sv
SLOT_SIZE = 4096


@dataclass
class Config:
    build: str
    data_w: int
    width: int
    height: int
    format: int
    stride: int
    slot_count: int
    user_irq: int
    video_source: int
    fifo_depth_log2: int

    @property
    def beat(self):
        return self.data_w // 8

    @property
    def payload(self):
        return self.stride * self.height

    @property
    def frame_len(self):
        return 64 + self.payload

    @classmethod
    def from_env(cls):
        p = dict(kv.split("=") for kv in os.environ.get("FGDR_PARAMS", "").split())
        get = lambda k, d: int(p.get(k, d))   # noqa: E731
        return cls(os.environ.get("FGDR_BUILD", "main"), get("DATA_W", 64), get("WIDTH", 64),
                   get("HEIGHT", 16), get("FORMAT", 1), get("STRIDE", 64), get("SLOT_COUNT", 4),
                   get("USER_IRQ", 2), get("VIDEO_SOURCE", 1), get("FIFO_DEPTH_LOG2", 9))


class Bench:
    def __init__(self, dut, mode, seed=1):
        self.dut = dut
        self.cfg = Config.from_env()
        self.rng = random.Random(seed)
        dut.axi_aresetn.value = 0
        dut.s_axis_video_tvalid.value = 0
        dut.s_axis_video_tdata.value = 0
        dut.s_axis_video_tuser.value = 0
        dut.s_axis_video_tlast.value = 0
        dut.pattern_frame_gap.value = 60
        self.mem(stall_aw=0, stall_w=0, stall_b=0, b_delay=0)
        self.mem_error(0, 0)
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "m_axil"), dut.axi_aclk,
                                  dut.axi_aresetn, reset_active_level=False)
        for log in (self.axil.write_if.log, self.axil.read_if.log):
            log.setLevel(logging.WARNING)
        self.xdma = XdmaUserIrq(dut, self.cfg.user_irq, mode, random.Random(seed + 1))

    # ---- card memory model controls ----
    def mem(self, stall_aw=None, stall_w=None, stall_b=None, b_delay=None):
        for name, v in (("mem_stall_aw", stall_aw), ("mem_stall_w", stall_w),
                        ("mem_stall_b", stall_b), ("mem_b_delay", b_delay)):
            if v is not None:
                getattr(self.dut, name).value = v

    def mem_error(self, lo, hi):
        """Bursts starting in [lo, hi) answer SLVERR."""
        self.dut.mem_err_lo.value = lo
        self.dut.mem_err_hi.value = hi

    # ---- reset ----
    async def reset(self, clocks=10):
        self.dut.axi_aresetn.value = 0
        self.xdma.reset()
        await Timer(clocks * CLOCK_NS, "ns")
        await RisingEdge(self.dut.axi_aclk)
        self.dut.axi_aresetn.value = 1
        await Timer(4 * CLOCK_NS, "ns")

    async def clocks(self, n):
        await Timer(n * CLOCK_NS, "ns")

    # ---- backdoor views (cheap: no bus traffic) ----
    def live_seq(self):
        """Frames completed since reset (the writer's next sequence)."""
        return int(self.dut.u_card.u_writer.seq_next.value)

    def monitor(self, name):
        return int(getattr(self.dut, "mon_" + name).value)

    def state(self):
        """A line on the card's state, for failure messages."""
        w = self.dut.u_card.u_writer
        r = self.dut.u_card.u_regs
        return (f"writer state {int(w.os.value)}, FIFO {int(w.fifo_count.value)}, input open "
                f"{int(w.in_open.value)}, started {self.monitor('frames_started')}, completed "
                f"{self.live_seq()}, CONTROL {int(r.ctl_capture.value)}{int(r.ctl_irq_en.value)}, "
                f"pending {int(r.pending.value)}, req {int(self.dut.usr_irq_req.value)}")

    def writer_busy(self):
        w = self.dut.u_card.u_writer
        return int(w.os.value) != 0 or int(w.fifo_count.value) != 0 or int(w.in_open.value) != 0

    # ---- the XDMA's C2H engine reading a slot (card memory -> host) ----
    async def c2h_copy(self, geo, ev, clocks, chunks):
        """The bytes of ev's slot as a C2H copy of ev.length bytes (rounded up to the
        beat) reads them, in `chunks` steps spread over `clocks`: the writer may
        rewrite the slot meanwhile, as on the card."""
        b = self.cfg.beat
        first = (ev.slot * geo.slot_size) // b
        words = -(-ev.length // b)
        chunks = max(1, min(chunks, words))
        mem = self.dut.u_ram.mem
        out = bytearray()
        step = -(-words // chunks)
        for i in range(0, words, step):
            for w in range(first + i, first + min(words, i + step)):
                v = mem[w].value
                out += (int(v) if v.is_resolvable else 0).to_bytes(b, "little")
            if clocks:
                await Timer(max(1, clocks // chunks) * CLOCK_NS, "ns")
        return bytes(out[:ev.length])

    async def read_regs(self, names):
        out = {}
        for n in names:
            out[n] = await self.axil.read_dword(R.REGS[n][0])
        return out

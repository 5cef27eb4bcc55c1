"""TEST MODEL of the XDMA core's user-interrupt logic (PG195), for the card's RTL.

The XDMA itself is encrypted IP that no open simulator runs; this model stands in for
the side of its ports the card talks to, from PG195:

* "Interrupt Interface": usr_irq_req[i] asserted generates an interrupt and is held
  until serviced; usr_irq_ack[i] says the interrupt was sent on PCIe: one ack per MSI
  or MSI-X message, two for a legacy interrupt (Assert_INTx, then Deassert_INTx).
* "Legacy Interrupts": after usr_irq_req falls it may not rise again before the
  second ack.  "MSI and Internal MSI-X Interrupts": one message per request.
* msi_enable / msix_enable outputs: which of MSI or MSI-X the host enabled (neither:
  legacy INTx).
* "IRQ Block User Interrupt Enable Mask (0x04)" and "User Interrupt Request (0x40)":
  the request register reflects the source ANDed with the enable mask.  The model
  takes that as what the interrupt logic acts on (effective = usr_irq_req AND mask):
  a masked request is not sent; with INTx, masking an asserted line deasserts it (with
  its ack) and unmasking asserts it again (with its ack).  How the real core orders
  these is not published; the card's state machine is written to be right either way
  (docs/card-protocol.md, "Interrupt state machine").

It records every breach of PG195's handshake the card commits (`violations`): a
request that falls before its ack, a legacy request raised again before the second
ack.
"""
import random

import cocotb
from cocotb.triggers import Edge, Event, First, RisingEdge

MODES = ("msi", "msix", "legacy")


class XdmaUserIrq:
    """User interrupt `bit` of the XDMA in `mode` ("msi", "msix" or "legacy").

    on_msi(): called when a message goes out; on_intx(level): when the INTx line
    changes.  ack_latency: (min, max) clocks from a request edge to its ack.
    """

    CLOCK_NS = 4

    def __init__(self, dut, bit, mode, rng=None, ack_latency=(2, 12)):
        assert mode in MODES
        self.dut = dut
        self.bit = bit
        self.mode = mode
        self.rng = rng or random.Random(1)
        self.ack_latency = ack_latency
        self.mask = False
        self.line = False          # legacy: the INTx line as sent
        self.armed = True          # msi: the next request edge is a new message
        self.violations = []
        self.gen = 0               # resets so far: a handshake begun before one is void
        self.messages = 0
        self.acks = 0
        self.on_msi = lambda: None
        self.on_intx = lambda level: None
        self._wake = Event()
        dut.msi_enable.value = int(mode == "msi")
        dut.msix_enable.value = int(mode == "msix")
        dut.usr_irq_ack.value = 0
        self._task = cocotb.start_soon(self._run())

    # ---- the host's side: the XDMA IRQ block's user interrupt enable mask ----
    def set_mask(self, on):
        """W1S (0x2008) / W1C (0x200c) of the user interrupt enable mask bit."""
        self.mask = bool(on)
        self._wake.set()

    def reset(self):
        """axi_aresetn fell: the core's interrupt logic starts again."""
        self.gen += 1
        self.line = False
        self.armed = True
        self.dut.usr_irq_ack.value = 0

    # ---- the card's side ----
    def _in_reset(self):
        rst = self.dut.axi_aresetn.value
        return not rst.is_resolvable or not int(rst)

    def _req(self):
        v = self.dut.usr_irq_req.value
        return bool((int(v) >> self.bit) & 1) if v.is_resolvable else False

    def _eff(self):
        return self._req() and self.mask

    async def _pulse_ack(self):
        await RisingEdge(self.dut.axi_aclk)
        self.dut.usr_irq_ack.value = 1 << self.bit
        await RisingEdge(self.dut.axi_aclk)
        self.dut.usr_irq_ack.value = 0
        self.acks += 1

    async def _latency(self):
        """Waits the ack latency, sampling the request at every clock edge as the core's
        logic does (a glitch between edges is no request); returns (rose, fell): whether
        it rose or fell meanwhile (a request must be held until its ack; a legacy
        request may not rise again before the second ack)."""
        rose = fell = False
        was = self._req()
        for _ in range(self.rng.randint(*self.ack_latency)):
            await RisingEdge(self.dut.axi_aclk)
            now = self._req()
            rose |= now and not was
            fell |= was and not now and not self._in_reset()
            was = now
        return rose, fell

    async def _run(self):
        while True:
            self._wake.clear()
            if self._in_reset():
                await Edge(self.dut.axi_aresetn)
                continue
            if self.mode == "legacy":
                await self._legacy_step()
            else:
                await self._msi_step()

    async def _idle(self):
        await First(Edge(self.dut.usr_irq_req), self._wake.wait(), Edge(self.dut.axi_aresetn))
        # what the request is at the next clock edge counts, not a glitch before it
        await RisingEdge(self.dut.axi_aclk)

    async def _msi_step(self):
        if not self._req():
            self.armed = True
            await self._idle()
            return
        if not (self.armed and self.mask):
            await self._idle()
            return
        gen = self.gen
        _, fell = await self._latency()
        if gen != self.gen or self._in_reset():
            return
        if fell or not self._req():
            self.violations.append("usr_irq_req fell before its usr_irq_ack (PG195: held until serviced)")
            self.armed = True
            return
        if not self.mask:
            return          # masked meanwhile: sent when unmasked
        self.armed = False
        self.messages += 1
        self.on_msi()
        await self._pulse_ack()

    async def _legacy_step(self):
        eff = self._eff()
        if eff == self.line:
            await self._idle()
            return
        gen = self.gen
        if eff:
            # Assert_INTx
            _, fell = await self._latency()
            if gen != self.gen or self._in_reset():
                return
            if fell or not self._req():
                self.violations.append("usr_irq_req fell before its first usr_irq_ack (PG195)")
                return
            if not self.mask:
                return
            self.line = True
            self.messages += 1
            self.on_intx(True)
            await self._pulse_ack()
        else:
            # Deassert_INTx (the request fell, or the host masked it)
            fell = not self._req()
            rose, _ = await self._latency()
            if gen != self.gen or self._in_reset():
                return
            if fell and rose:
                self.violations.append(
                    "usr_irq_req raised again before the second usr_irq_ack "
                    "(PG195, Legacy Interrupts)")
            self.line = False
            self.on_intx(False)
            await self._pulse_ack()

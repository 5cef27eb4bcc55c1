"""Scenarios with the module's own C as the host (chost.CHandler: kmod/fpgagdr-fdone.c
through ctypes, every register access an AXI4-Lite transaction on the RTL, the RTL's
usr_irq_req calling it as the kernel's interrupt handler would).

All but `storm` and `card_gone` run RTL scenarios of scenarios.py unchanged with the C handler in
place of the reference one, and then hold the C's own counters against what the host
model counted; `storm` is the C's alone: a card that ignores HOST_ACK.  Each is seen
failing on a broken RTL variant (FGDR_BROKEN_*) or on a mutant of fpgagdr-fdone.c
(FGDR_MUTANT_*, builds.py: the module's source with one decision changed, built by
hdl/run.sh into the library the test loads).
"""
from cocotb.triggers import Timer

import fgdr_regs as R
from host import CAPTURE, Timing
from scenarios import (Scenario, coalescing, expect, finish, need, pattern_host, quiesce,
                       reset_mid_frame, run_until, same_cycle_ack, torn_frame)

STORM_REPEATS = 8        # FPGAGDR_FDONE_STORM_REPEATS (kmod/fpgagdr-fdone.h)


def _c_counts(bench):
    """The C's counters against the host model's: every event it handed out reached the
    host, its missed is the host's, no protocol error, no storm."""
    c = bench.c_handler.counters()
    host = bench.host
    p = []
    if c["events"] != len(host.events):
        p.append(f"the C counted {c['events']} events, the host got {len(host.events)}")
    missed = sum(t.missed for t in host.tallies)
    if c["missed"] != missed:
        p.append(f"the C counted {c['missed']} missed, the host {missed}")
    if c["protocol_errors"] or c["storms"] or c["gone_reads"]:
        p.append(f"protocol errors {c['protocol_errors']}, storms {c['storms']}, "
                 f"gone {c['gone_reads']}")
    bench.dut._log.info("the C's counters: %s; its decisions: %s", c, bench.c_handler.actions)
    return c, p


def _on_c(scenario, extra=None, **handler_kw):
    async def run(bench, mode):
        bench.c_host = True
        bench.c_handler_kw = handler_kw
        await scenario(bench, mode)
        c, p = _c_counts(bench)
        if extra:
            p += extra(bench, c)
        expect(p, "the module's C")

    run.__doc__ = "With the module's C as the host: " + (scenario.__doc__ or "")
    return run


def _coalesced(bench, c):
    return [] if c["missed"] > 0 else ["the C counted no missed frame"]


def _epochs(bench, c):
    p = []
    if c["epoch_changes"] != 3 or c["rebases"] != 3:
        p.append(f"three resets, the C saw {c['epoch_changes']} EPOCH changes and "
                 f"{c['rebases']} rebases")
    if bench.c_handler.actions["epoch"] != 3:
        p.append(f"capture started after three resets, EPOCH decided "
                 f"{bench.c_handler.actions['epoch']} times")
    return p


def _epochs_unseen(bench, c):
    p = []
    if c["epoch_changes"] != 3 or c["rebases"] != 3:
        p.append(f"three resets, the C saw {c['epoch_changes']} EPOCH changes and "
                 f"{c['rebases']} rebases")
    if bench.c_handler.new_epochs != 3 or bench.c_handler.actions["epoch"]:
        p.append(f"three resets seen by a record that did not grow, the C's events said "
                 f"new_epoch {bench.c_handler.new_epochs} times, EPOCH read on bind "
                 f"{bench.c_handler.actions['epoch']} times")
    return p


def _torn(bench, c):
    overrun = sum(t.overrun for t in bench.host.tallies)
    return [] if c["torn"] == overrun else [f"the C's torn count {c['torn']}, "
                                            f"the host's overruns {overrun}"]


async def storm(bench, mode):
    """A card that ignores HOST_ACK (TEST DOUBLE: the acknowledge never reaches the
    RTL) keeps its INTx line asserted: the C takes the record once as an event, then
    FPGAGDR_FDONE_STORM_REPEATS repeats make a storm, counted once; the handler masks
    frame-done (IRQ_EN off) and the line falls.  Polled, new frames are events and the
    record again is part of the same storm; capture stopped, the storm ends; with the
    acknowledge working again, interrupts come back and every frame is counted."""
    await bench.reset()
    bench.c_host = True
    bench.dut.pattern_frame_gap.value = 1500
    host = pattern_host(bench, Timing(irq_latency=(4, 20), eoi=(4, 10), dma_delay=(5, 20)))
    h = bench.c_handler
    h.deaf_ack = True
    await host.attach()
    waited = 0
    while not h.storm:
        await Timer(400, "ns")
        waited += 400
        need(waited < 40_000, f"no storm declared after {host.handler_runs} handler runs: "
                              f"{h.actions}, {h.counters()}")
    c = h.counters()
    runs = host.handler_runs
    need(c["storms"] == 1 and c["repeated"] == STORM_REPEATS and c["events"] == 1 and
         runs == 1 + STORM_REPEATS,
         f"a storm after {runs} handler runs: {c} (one event and {STORM_REPEATS} repeats wanted)")
    # masked: the line falls, FRAME_PENDING stays (the card never had its acknowledge)
    await Timer(800 * 4, "ns")
    need(host.handler_runs == runs and not host._line,
         f"the line still asserted after the storm: {host.handler_runs - runs} more runs")
    need(await host.bar.read(R.CONTROL) == CAPTURE, "CONTROL is not CAPTURE without IRQ_EN")
    # polled (the module's 1 ms worker, scaled to 1 us): events for new frames only
    start = bench.live_seq()
    while bench.live_seq() < start + 10:
        await host._handle()
        await Timer(1_000, "ns")
    await host.bar.write(R.CONTROL, 0)       # capture stops: nobody listens
    await quiesce(bench, host)
    await host._handle()                      # the worker's last look
    h.storm_over(None)
    await quiesce(bench, host)
    c = h.counters()
    last = host.tallies[-1].last
    need(c["storms"] == 1 and h.actions["event"] >= 10 and last == bench.live_seq() - 1,
         f"polled: {c}, last event {last} of {bench.live_seq()} frames")
    expect(host.check_counts(), "polled")
    # the acknowledge works again; capture restarts
    h.deaf_ack = False
    await host.attach()
    await run_until(bench, 20)
    p, _ = await finish(bench, host)
    c, p2 = _c_counts(bench)
    p += [x for x in p2 if not x.startswith("protocol errors")]
    if c["storms"] != 1 or c["protocol_errors"]:
        p.append(f"after the restart: {c}")
    expect(p, f"{h.acks_swallowed} acknowledges swallowed")


async def card_gone(bench, mode):
    """The card vanishes from the bus twice (TEST DOUBLE knob of the BAR, host.AsyncBar:
    every read all ones, every write lost): once at the handler's first read
    (IRQ_STATUS), once inside the record (IRQ_STATUS says FRAME_PENDING, the record
    then reads all ones).  Each time the C reports the card gone once, hands out no
    event, counts no protocol error and keeps no record; while gone it reads MAGIC only
    (the module's 1 ms worker, scaled to 1 us).  The card comes back reset (a new
    EPOCH, the sequence from 0): the C sees the new EPOCH, capture is set up again, the
    sequence is re-baselined and frames flow, counted exactly in each epoch."""
    await bench.reset()
    bench.c_host = True
    bench.dut.pattern_frame_gap.value = 400   # the host's copies mostly whole
    host = pattern_host(bench)
    h = bench.c_handler
    await host.attach()
    epochs = [host.geo.epoch]
    for episode, after_reads in enumerate((0, 1), 1):
        await run_until(bench, 30)
        host.paused = True
        while host.busy or host.queue:
            await Timer(100, "ns")
        start = bench.live_seq()               # frames complete unacknowledged:
        while bench.live_seq() < start + 2:    # FRAME_PENDING is set
            await Timer(100, "ns")
        before, taken = h.counters(), len(host.events)
        host.bar.vanish(after_reads)
        for _ in range(5):                     # the worker's looks while it is gone
            await host._handle()
            await Timer(1_000, "ns")
        c = h.counters()
        need(c["gone_reads"] == episode and c["events"] == before["events"] and
             len(host.events) == taken and c["protocol_errors"] == 0 and
             h.actions["gone"] == 5 * episode,
             f"gone after {after_reads} reads: {c}, {h.actions}, "
             f"{len(host.events) - taken} events handed out")
        # it comes back after a reset (the link trained again)
        await bench.reset()
        host.bar.back()
        epoch = await host.bar.read(R.EPOCH)
        need(epoch not in epochs and epoch != 0, f"EPOCH {epoch:#x}, before: {epochs}")
        epochs.append(epoch)
        host.paused = False
        await host._handle()                   # the worker: MAGIC answers, EPOCH is new
        need(h.actions["epoch"] == episode and int(bench.dut.u_card.u_regs.ctl_capture.value),
             f"back with EPOCH {epoch:#x}: {h.actions}, capture "
             f"{int(bench.dut.u_card.u_regs.ctl_capture.value)}")
    await run_until(bench, 40)
    p, _ = await finish(bench, host)
    c = h.counters()
    missed = sum(t.missed for t in host.tallies)
    if c["events"] != len(host.events) or c["missed"] != missed:
        p.append(f"the C counted {c['events']} events and {c['missed']} missed, the host "
                 f"{len(host.events)} and {missed}")
    if c["gone_reads"] != 2 or c["epoch_changes"] != 2 or c["protocol_errors"] or c["storms"]:
        p.append(f"two episodes gone, two new EPOCHs, nothing else: {c}")
    fresh = [t for t in host.tallies if t.first is not None]
    if len(fresh) != 3 or fresh[-1].first > 3 or any(t.captured < 10 for t in fresh):
        p.append(f"three epochs counted, each with frames captured, the last from its "
                 f"start: {host.summary()}")
    expect(p, "the module's C")


C_SCENARIOS = [
    Scenario("c_coalescing", _on_c(coalescing, _coalesced), ("msi", "legacy"),
             broken=(("FGDR_BROKEN_COALESCE_KEEPS_OLDEST", ("msi",)),
                     ("FGDR_MUTANT_GAP", ("msi",)))),
    Scenario("c_same_cycle_ack", _on_c(same_cycle_ack), ("msi", "msix"),
             broken=(("FGDR_BROKEN_SAME_CYCLE_ACK", ("msi",)),)),
    Scenario("c_reset_mid_frame", _on_c(reset_mid_frame, _epochs), ("msi", "legacy"),
             broken=(("FGDR_BROKEN_EPOCH_CONSTANT", ("msi",)), ("FGDR_MUTANT_NO_EPOCH", ("msi",)))),
    Scenario("c_reset_unseen", _on_c(reset_mid_frame, _epochs_unseen, epoch_on_bind=False),
             ("msi",),
             doc="capture restarted without a look at EPOCH: the first record of each "
                 "epoch does not grow, fpgagdr_fdone_take() reads EPOCH and re-baselines",
             broken=(("FGDR_MUTANT_NO_STALL_EPOCH", ("msi",)),)),
    Scenario("c_storm", storm, ("legacy",),
             broken=(("FGDR_MUTANT_NO_STORM", ("legacy",)),)),
    Scenario("c_card_gone", card_gone, ("msi",),
             broken=(("FGDR_MUTANT_NO_GONE_RECORD", ("msi",)),)),
    Scenario("c_torn_frame", _on_c(torn_frame, _torn), ("msi",), timeout_ms=120,
             broken=(("FGDR_BROKEN_LIVE_SEQ_LATCHED", ("msi",)), ("FGDR_MUTANT_TORN_BOUND", ("msi",)))),
]

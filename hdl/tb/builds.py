"""The testbench's builds of tb_card.sv (parameters given to Icarus by hdl/run.sh, and
to the tests through FGDR_PARAMS), and the lists hdl/run.sh runs.

    python3 builds.py params BUILD     the build's parameters, KEY=VALUE ...
    python3 builds.py pattern BUILD    FORMAT WIDTH HEIGHT for the Rust frames
    python3 builds.py tests BUILD      the build's tests, one per line
    python3 builds.py broken           BUILD DEFINE TEST per line: each must fail
    python3 builds.py mutant NAME SRC  kmod/fpgagdr-fdone.c (SRC) with mutant NAME's
                                       change, on stdout (FGDR_MUTANT_*, below)
"""
import sys

BUILDS = {
    # small mono8 frames, 64-bit data path, 4 slots, the test pattern: most scenarios
    "main": dict(DATA_W=64, WIDTH=16, HEIGHT=4, FORMAT=1, STRIDE=16, SLOT_COUNT=4,
                 NUM_USR_IRQ=4, USER_IRQ=2, VIDEO_SOURCE=1, FIFO_DEPTH_LOG2=6),
    # the same fed from s_axis_video by the testbench
    "stream": dict(DATA_W=64, WIDTH=16, HEIGHT=4, FORMAT=1, STRIDE=16, SLOT_COUNT=4,
                   NUM_USR_IRQ=4, USER_IRQ=2, VIDEO_SOURCE=0, FIFO_DEPTH_LOG2=6),
    # rgb8 on a 256-bit data path, 8 slots
    "wide": dict(DATA_W=256, WIDTH=32, HEIGHT=4, FORMAT=2, STRIDE=96, SLOT_COUNT=8,
                 NUM_USR_IRQ=1, USER_IRQ=0, VIDEO_SOURCE=1, FIFO_DEPTH_LOG2=6),
    # rgb8 rows of 60 bytes padded to 64 on a 128-bit path, the minimum of 2 slots,
    # user interrupt 15 of 16
    "pad": dict(DATA_W=128, WIDTH=20, HEIGHT=3, FORMAT=2, STRIDE=64, SLOT_COUNT=2,
                NUM_USR_IRQ=16, USER_IRQ=15, VIDEO_SOURCE=1, FIFO_DEPTH_LOG2=5),
}

# Mutants of the module's frame-done code (kmod/fpgagdr-fdone.c) for the scenarios with
# the C as host (c_scenarios.py): one decision changed each, the text replaced exactly
# once; hdl/run.sh --prove-broken builds the mutant into the library its test loads.
MUTANTS = {
    # the gap between two events one short: missed frames undercounted
    "FGDR_MUTANT_GAP": ("ev->gap = ev->seq - fd->last_seq - 1;",
                        "ev->gap = ev->seq - fd->last_seq - 0;"),
    # a changed EPOCH never seen: a reset's new sequence judged against the old one
    "FGDR_MUTANT_NO_EPOCH": ("if (epoch == fd->epoch)\n\t\treturn FPGAGDR_FDONE_NONE;",
                             "if (epoch)\n\t\treturn FPGAGDR_FDONE_NONE;"),
    # a record whose sequence does not grow never makes the C look at EPOCH
    "FGDR_MUTANT_NO_STALL_EPOCH": ("if (fpgagdr_fdone_stalls(fd, ev)) {",
                                   "if (0 && fpgagdr_fdone_stalls(fd, ev)) {"),
    # repeats never make a storm
    "FGDR_MUTANT_NO_STORM": ("++fd->repeats < FPGAGDR_FDONE_STORM_REPEATS",
                             "++fd->repeats < 1000000"),
    # a record read all ones (the card vanished after IRQ_STATUS) judged as a record
    "FGDR_MUTANT_NO_GONE_RECORD": ("if (ev->slot == FPGAGDR_FDONE_ALL_ONES ||\n\t    ev->len == FPGAGDR_FDONE_ALL_ONES) {",
                                   "if (0) {"),
    # the torn-frame check one frame too trusting
    "FGDR_MUTANT_TORN_BOUND": ("< fd->slot_count - 1)", "< fd->slot_count)"),
}


def mutant(name, path):
    old, new = MUTANTS[name]
    with open(path) as f:
        src = f.read()
    if src.count(old) != 1:
        raise SystemExit(f"mutant {name}: {old!r} is not in {path} exactly once")
    return src.replace(old, new)


def scenarios():
    from c_scenarios import C_SCENARIOS
    from scenarios import SCENARIOS
    return SCENARIOS + C_SCENARIOS


def main(argv):
    what = argv[1]
    if what == "params":
        print(" ".join(f"{k}={v}" for k, v in BUILDS[argv[2]].items()))
    elif what == "pattern":
        b = BUILDS[argv[2]]
        print("rgb8" if b["FORMAT"] == 2 else "mono8", b["WIDTH"], b["HEIGHT"])
    elif what == "tests":
        for sc in scenarios():
            if argv[2] in sc.builds:
                for mode in sc.modes:
                    print(f"{sc.name}_{mode}")
    elif what == "broken":
        for sc in scenarios():
            for entry in sc.broken:
                define, modes = entry[0], entry[1]
                build = entry[2] if len(entry) > 2 else sc.builds[0]
                for mode in modes:
                    print(build, define, f"{sc.name}_{mode}")
    elif what == "mutant":
        sys.stdout.write(mutant(argv[2], argv[3]))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)

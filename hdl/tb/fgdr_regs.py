"""Generated from the tables of docs/card-protocol.md by kmod/scripts/check-card-protocol.py --write; do not edit.

The user register block of the frame protocol: REGS maps a name to
(offset, access, reset value or None where the design sets it), BITS a
(register, field) to its bit."""

REGS = {
    "MAGIC": (0x000, "RO", 0x52444746),
    "VERSION": (0x004, "RO", 0x00010001),
    "SLOT_BASE_LO": (0x008, "RO", None),
    "SLOT_BASE_HI": (0x00c, "RO", None),
    "SLOT_SIZE": (0x010, "RO", None),
    "SLOT_COUNT": (0x014, "RO", None),
    "USER_IRQ": (0x018, "RO", None),
    "CONTROL": (0x020, "RW", 0x00000000),
    "IRQ_STATUS": (0x024, "RO", 0x00000000),
    "HOST_ACK": (0x028, "WO", None),
    "DONE_SEQ_LO": (0x030, "RL", 0x00000000),
    "DONE_SEQ_HI": (0x034, "RO", 0x00000000),
    "DONE_SLOT": (0x038, "RO", 0x00000000),
    "DONE_LENGTH": (0x03c, "RO", 0x00000000),
    "EPOCH": (0x040, "RO", None),
    "DROPPED": (0x044, "RO", 0x00000000),
    "LIVE_SEQ_LO": (0x048, "RO", 0x00000000),
}

BITS = {
    ("CONTROL", "CAPTURE"): 0,
    ("CONTROL", "IRQ_EN"): 1,
    ("IRQ_STATUS", "FRAME_PENDING"): 0,
}

SLOT_COUNT_MIN = 2
SLOT_COUNT_MAX = 1024

MAGIC = 0x000
VERSION = 0x004
SLOT_BASE_LO = 0x008
SLOT_BASE_HI = 0x00c
SLOT_SIZE = 0x010
SLOT_COUNT = 0x014
USER_IRQ = 0x018
CONTROL = 0x020
IRQ_STATUS = 0x024
HOST_ACK = 0x028
DONE_SEQ_LO = 0x030
DONE_SEQ_HI = 0x034
DONE_SLOT = 0x038
DONE_LENGTH = 0x03c
EPOCH = 0x040
DROPPED = 0x044
LIVE_SEQ_LO = 0x048

// Generated from the tables of docs/card-protocol.md by kmod/scripts/check-card-protocol.py --write; do not edit.
// The user register block of the frame protocol (offsets, fixed values, bits).
/* verilator lint_off UNUSEDPARAM */
package fgdr_regs_pkg;
  localparam logic [11:0] FGDR_REG_MAGIC = 12'h000;  // RO
  localparam logic [11:0] FGDR_REG_VERSION = 12'h004;  // RO
  localparam logic [11:0] FGDR_REG_SLOT_BASE_LO = 12'h008;  // RO
  localparam logic [11:0] FGDR_REG_SLOT_BASE_HI = 12'h00c;  // RO
  localparam logic [11:0] FGDR_REG_SLOT_SIZE = 12'h010;  // RO
  localparam logic [11:0] FGDR_REG_SLOT_COUNT = 12'h014;  // RO
  localparam logic [11:0] FGDR_REG_USER_IRQ = 12'h018;  // RO
  localparam logic [11:0] FGDR_REG_CONTROL = 12'h020;  // RW
  localparam logic [11:0] FGDR_REG_IRQ_STATUS = 12'h024;  // RO
  localparam logic [11:0] FGDR_REG_HOST_ACK = 12'h028;  // WO
  localparam logic [11:0] FGDR_REG_DONE_SEQ_LO = 12'h030;  // RL
  localparam logic [11:0] FGDR_REG_DONE_SEQ_HI = 12'h034;  // RO
  localparam logic [11:0] FGDR_REG_DONE_SLOT = 12'h038;  // RO
  localparam logic [11:0] FGDR_REG_DONE_LENGTH = 12'h03c;  // RO
  localparam logic [11:0] FGDR_REG_EPOCH = 12'h040;  // RO
  localparam logic [11:0] FGDR_REG_DROPPED = 12'h044;  // RO
  localparam logic [11:0] FGDR_REG_LIVE_SEQ_LO = 12'h048;  // RO
  localparam logic [31:0] FGDR_MAGIC_VALUE = 32'h52444746;
  localparam logic [31:0] FGDR_VERSION_VALUE = 32'h00010001;
  localparam int FGDR_CONTROL_CAPTURE = 0;
  localparam int FGDR_CONTROL_IRQ_EN = 1;
  localparam int FGDR_IRQ_STATUS_FRAME_PENDING = 0;
  localparam int FGDR_SLOT_COUNT_MIN = 2;
  localparam int FGDR_SLOT_COUNT_MAX = 1024;
endpackage
/* verilator lint_on UNUSEDPARAM */

// The card's user-interrupt handshake with the XDMA core (docs/card-protocol.md,
// "Interrupt state machine"), one state machine for MSI, MSI-X and legacy INTx.
//
// PG195 (Interrupt Interface; User Interrupts): usr_irq_req is held until usr_irq_ack;
// one ack per MSI/MSI-X message; with legacy interrupts the first ack says Assert_INTx
// was sent, and after usr_irq_req falls a second ack says Deassert_INTx was sent; the
// request may not rise again before that second ack.  The mode comes from the XDMA's
// msi_enable and msix_enable outputs (neither set: legacy), sampled when a request is
// raised; the handshake it starts completes in that mode.
//
// MSI / MSI-X (edge: one rising edge is one message):
//   IDLE -> MSI_WAIT_ACK when FRAME_PENDING, IRQ_EN and a message is owed (`owed`);
//   MSI_WAIT_ACK holds the request until usr_irq_ack, whatever IRQ_EN does meanwhile;
//   MSI_GAP drops it for one clock, so the next request is a new edge.
// Legacy INTx (level: the line follows FRAME_PENDING AND IRQ_EN):
//   IDLE -> LEG_WAIT_ACK when FRAME_PENDING and IRQ_EN; the first ack -> LEG_HOLD;
//   LEG_HOLD drops the request once FRAME_PENDING or IRQ_EN is clear -> LEG_WAIT_DEASSERT,
//   which waits for the second ack.  An ack in LEG_HOLD that the card did not ask for
//   means the XDMA took the line down by itself (the host masked the user interrupt):
//   LEG_HOLD_DOWN; a further one means it raised it again (unmasked): LEG_HOLD.  From
//   LEG_HOLD_DOWN the request falls with no ack to wait for.
module fgdr_irq (
    input  logic clk,
    input  logic rst_n,
    input  logic pending,      // IRQ_STATUS.FRAME_PENDING
    input  logic irq_en,       // CONTROL.IRQ_EN
    input  logic owed,         // an MSI/MSI-X message is owed for the pending frame
    input  logic msi_enable,   // XDMA output (PG195): MSI enabled by the host
    input  logic msix_enable,  // XDMA output (PG195): MSI-X enabled by the host
    input  logic ack,          // usr_irq_ack[USER_IRQ]
    output logic req,          // usr_irq_req[USER_IRQ]
    output logic taken         // one clock: a request was raised (consumes `owed`)
);
  typedef enum logic [2:0] {
    IDLE,
    MSI_WAIT_ACK,
    MSI_GAP,
    LEG_WAIT_ACK,
    LEG_HOLD,
    LEG_HOLD_DOWN,
    LEG_WAIT_DEASSERT
  } state_t;

  state_t state;
  logic msi_mode, level;

  assign msi_mode = msi_enable | msix_enable;
  assign level = pending & irq_en;

`ifdef FGDR_BROKEN_MSI_NO_GAP
  // BROKEN (test only): re-raises an owed message without dropping the request, so
  // the XDMA sees no new edge.
  assign req = (state == MSI_WAIT_ACK) ||
               ((state == MSI_GAP || state == IDLE) && msi_mode && level && owed) ||
               (state == LEG_WAIT_ACK) || (state == LEG_HOLD) || (state == LEG_HOLD_DOWN);
`else
  assign req = (state == MSI_WAIT_ACK) || (state == LEG_WAIT_ACK) ||
               (state == LEG_HOLD) || (state == LEG_HOLD_DOWN);
`endif
  assign taken = (state == IDLE) && level && (!msi_mode || owed);

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      state <= IDLE;
    end else begin
      case (state)
        IDLE:
          if (level && msi_mode && owed) state <= MSI_WAIT_ACK;
          else if (level && !msi_mode) state <= LEG_WAIT_ACK;
        MSI_WAIT_ACK:
`ifdef FGDR_BROKEN_DROP_REQ_ON_IRQ_EN
          // BROKEN (test only): gives the request up when IRQ_EN falls.
          if (ack || !irq_en) state <= MSI_GAP;
`else
          if (ack) state <= MSI_GAP;
`endif
        MSI_GAP:
          state <= IDLE;
        LEG_WAIT_ACK:
          if (ack) state <= LEG_HOLD;
        LEG_HOLD:
          if (ack && !level) state <= IDLE;
          else if (ack) state <= LEG_HOLD_DOWN;
          else if (!level) state <= LEG_WAIT_DEASSERT;
        LEG_HOLD_DOWN:
          if (ack && !level) state <= LEG_WAIT_DEASSERT;
          else if (ack) state <= LEG_HOLD;
          else if (!level) state <= IDLE;
        LEG_WAIT_DEASSERT:
`ifdef FGDR_BROKEN_LEGACY_EARLY_REASSERT
          // BROKEN (test only): does not wait for the second ack.
          state <= IDLE;
`else
          if (ack) state <= IDLE;
`endif
        default:
          state <= IDLE;
      endcase
    end
  end
endmodule

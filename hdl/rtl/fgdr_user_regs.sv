// The user register block of docs/card-protocol.md: an AXI4-Lite slave on the XDMA's
// AXI4-Lite master (PG195 "PCIe to AXI Lite Master", the user BAR), the frame-done
// record and its latch, HOST_ACK, FRAME_PENDING, the interrupt state machine
// (fgdr_irq), the reset epoch and the DROPPED counter.
//
// AXI4-Lite (docs/card-protocol.md, "AXI4-Lite behaviour"): one write and one read in
// flight; AW and W are taken in either order; every address answers OKAY; reserved
// addresses read 0 and ignore writes; a write takes effect only with all four WSTRB
// bits set; address bits 1:0 are ignored; addresses at or above 0x1000 are outside the
// block and behave as reserved.  Reads have no side effect except DONE_SEQ_LO's latch.
//
// Priorities within one clock (docs/card-protocol.md, "Priorities"): reset first; a
// frame completion sets FRAME_PENDING whatever HOST_ACK or CAPTURE 0->1 do in the same
// clock, and a HOST_ACK in that clock counts as stale (the request is raised again);
// CAPTURE 0->1 clears FRAME_PENDING; a matching HOST_ACK clears it; a read of
// DONE_SEQ_LO in the completion's clock latches the record as it was before.
module fgdr_user_regs #(
    parameter int AXIL_ADDR_W = 32,
    parameter logic [63:0] SLOT_BASE = 64'h0,
    parameter int SLOT_SIZE = 4096,
    parameter int SLOT_COUNT = 4,
    parameter int NUM_USR_IRQ = 1,
    parameter int USER_IRQ = 0,
    // EPOCH after the first reset release is EPOCH_INIT + 1 (0 skipped).
    parameter logic [31:0] EPOCH_INIT = 32'd0
) (
    input  logic                   axi_aclk,
    input  logic                   axi_aresetn,
    // AXI4-Lite slave, driven by the XDMA's m_axil_* master
    input  logic [AXIL_ADDR_W-1:0] s_axil_awaddr,
    input  logic                   s_axil_awvalid,
    output logic                   s_axil_awready,
    input  logic [31:0]            s_axil_wdata,
    input  logic [3:0]             s_axil_wstrb,
    input  logic                   s_axil_wvalid,
    output logic                   s_axil_wready,
    output logic [1:0]             s_axil_bresp,
    output logic                   s_axil_bvalid,
    input  logic                   s_axil_bready,
    input  logic [AXIL_ADDR_W-1:0] s_axil_araddr,
    input  logic                   s_axil_arvalid,
    output logic                   s_axil_arready,
    output logic [31:0]            s_axil_rdata,
    output logic [1:0]             s_axil_rresp,
    output logic                   s_axil_rvalid,
    input  logic                   s_axil_rready,
    // XDMA user interrupts (PG195 "Interrupt Interface")
    output logic [NUM_USR_IRQ-1:0] usr_irq_req,
    input  logic [NUM_USR_IRQ-1:0] usr_irq_ack,
    input  logic                   msi_enable,
    input  logic                   msix_enable,
    // to and from the frame writer
    output logic                   capture,       // CONTROL.CAPTURE
    input  logic                   done_valid,    // one clock: a frame completed
    input  logic [63:0]            done_seq,
    input  logic [31:0]            done_slot,
    input  logic [31:0]            done_length,
    input  logic [1:0]             dropped_inc    // frames dropped whole this clock
);
  localparam logic [31:0] SLOT_SIZE_W = 32'(SLOT_SIZE);
  localparam logic [31:0] SLOT_COUNT_W = 32'(SLOT_COUNT);
  localparam logic [31:0] USER_IRQ_W = 32'(USER_IRQ);
  localparam int CAP = fgdr_regs_pkg::FGDR_CONTROL_CAPTURE;
  localparam int IEN = fgdr_regs_pkg::FGDR_CONTROL_IRQ_EN;

  // ---- reset epoch: not reset by axi_aresetn (FPGA configuration initial value) ----
  logic [31:0] epoch = EPOCH_INIT;
  logic        aresetn_q = 1'b0;
  always_ff @(posedge axi_aclk) begin
    aresetn_q <= axi_aresetn;
`ifndef FGDR_BROKEN_EPOCH_CONSTANT
    if (axi_aresetn && !aresetn_q) epoch <= (epoch == 32'hffff_ffff) ? 32'd1 : epoch + 32'd1;
`else
    // BROKEN (test only): the epoch never changes after the first reset.
    if (axi_aresetn && !aresetn_q && epoch == EPOCH_INIT) epoch <= EPOCH_INIT + 32'd1;
`endif
  end

  // ---- AXI4-Lite write channel ----
  logic                   aw_have, w_have;
  logic [AXIL_ADDR_W-1:0] aw_addr;
  logic [31:0]            w_data;
  logic [3:0]             w_strb;
  logic                   wr_fire;
  logic                   wr_in_block;
  logic [11:0]            wr_off;

  assign s_axil_awready = !aw_have;
  assign s_axil_wready = !w_have;
  assign s_axil_bresp = 2'b00;
  assign wr_fire = aw_have && w_have && !s_axil_bvalid;
  assign wr_in_block = (aw_addr >> 12) == '0;
  assign wr_off = {aw_addr[11:2], 2'b00};

  always_ff @(posedge axi_aclk) begin
    if (!axi_aresetn) begin
      aw_have <= 1'b0;
      w_have <= 1'b0;
      s_axil_bvalid <= 1'b0;
      aw_addr <= '0;
      w_data <= '0;
      w_strb <= '0;
    end else begin
      if (s_axil_awvalid && s_axil_awready) begin
        aw_have <= 1'b1;
        aw_addr <= s_axil_awaddr;
      end
      if (s_axil_wvalid && s_axil_wready) begin
        w_have <= 1'b1;
        w_data <= s_axil_wdata;
        w_strb <= s_axil_wstrb;
      end
      if (wr_fire) begin
        aw_have <= 1'b0;
        w_have <= 1'b0;
        s_axil_bvalid <= 1'b1;
      end else if (s_axil_bvalid && s_axil_bready) begin
        s_axil_bvalid <= 1'b0;
      end
    end
  end

  // a whole-word write to a register of the block
  logic wr_word;
`ifdef FGDR_BROKEN_PARTIAL_STRB
  // BROKEN (test only): a partial write takes effect as if all strobes were set.
  assign wr_word = wr_fire && wr_in_block;
`else
  assign wr_word = wr_fire && wr_in_block && (w_strb == 4'hf);
`endif

  // ---- registers ----
  logic        ctl_capture, ctl_irq_en;
  logic        pending, owed;
  logic [63:0] live_seq;
  logic [31:0] live_slot, live_length;
  logic [31:0] lat_seq_hi;
  logic [31:0] lat_slot, lat_length;
  logic [31:0] dropped;
  logic        irq_taken, irq_req;

  logic ctl_wr, ack_wr, ack_match, capture_rise, irq_en_rise, complete;
  logic pending_next, raise;
  assign ctl_wr = wr_word && wr_off == fgdr_regs_pkg::FGDR_REG_CONTROL;
  assign ack_wr = wr_word && wr_off == fgdr_regs_pkg::FGDR_REG_HOST_ACK;
  assign ack_match = w_data == live_seq[31:0];
  assign capture_rise = ctl_wr && w_data[CAP] && !ctl_capture;
  assign irq_en_rise = ctl_wr && w_data[IEN] && !ctl_irq_en;
  assign complete = done_valid;

`ifdef FGDR_BROKEN_STALE_ACK_CLEARS
  // BROKEN (test only): any HOST_ACK clears FRAME_PENDING.
  localparam logic STALE_ACK_CLEARS = 1'b1;
`else
  localparam logic STALE_ACK_CLEARS = 1'b0;
`endif

`ifdef FGDR_BROKEN_NO_CAPTURE_CLEAR
  // BROKEN (test only): CAPTURE 0->1 leaves a stale FRAME_PENDING set.
  localparam logic CAPTURE_CLEARS = 1'b0;
`else
  localparam logic CAPTURE_CLEARS = 1'b1;
`endif

  always_comb begin
    pending_next = pending;
    if (complete) pending_next = 1'b1;
    else if (capture_rise && CAPTURE_CLEARS) pending_next = 1'b0;
    else if (ack_wr && (ack_match || STALE_ACK_CLEARS)) pending_next = 1'b0;
  end

  // An MSI/MSI-X message is owed: a new pending frame, a completion racing a HOST_ACK or
  // CAPTURE 0->1 (the acknowledge is stale), a HOST_ACK that does not match while
  // FRAME_PENDING is set, or IRQ_EN 0->1 with a frame pending.
  always_comb begin
`ifdef FGDR_BROKEN_SAME_CYCLE_ACK
    // BROKEN (test only): protocol 1.0 misread: the completion keeps FRAME_PENDING set
    // but a HOST_ACK in the same clock raises nothing again.
    raise = complete && !pending;
`else
    raise = complete && (!pending || ack_wr || capture_rise);
`endif
    if (ack_wr && pending && !ack_match && !complete) raise = 1'b1;
    if (irq_en_rise && pending_next) raise = 1'b1;
  end

  always_ff @(posedge axi_aclk) begin
    if (!axi_aresetn) begin
      ctl_capture <= 1'b0;
      ctl_irq_en <= 1'b0;
      pending <= 1'b0;
      owed <= 1'b0;
      live_seq <= '0;
      live_slot <= '0;
      live_length <= '0;
      dropped <= '0;
    end else begin
      if (ctl_wr) begin
        ctl_capture <= w_data[CAP];
        ctl_irq_en <= w_data[IEN];
      end
      pending <= pending_next;
      owed <= pending_next && ((owed && !irq_taken) || raise);
`ifdef FGDR_BROKEN_COALESCE_KEEPS_OLDEST
      // BROKEN (test only): a completion while FRAME_PENDING is set leaves the record.
      if (complete && !pending) begin
`else
      if (complete) begin
`endif
        live_seq <= done_seq;
        live_slot <= done_slot;
        live_length <= done_length;
      end
      dropped <= dropped + {30'd0, dropped_inc};
    end
  end

  // ---- AXI4-Lite read channel ----
  logic [11:0] rd_off;
  logic        rd_in_block;
  logic [31:0] rd_value;
  assign s_axil_arready = !s_axil_rvalid;
  assign s_axil_rresp = 2'b00;
  assign rd_off = {s_axil_araddr[11:2], 2'b00};
  assign rd_in_block = (s_axil_araddr >> 12) == '0;

  always_comb begin
    rd_value = 32'd0;
    if (rd_in_block) begin
      case (rd_off)
        fgdr_regs_pkg::FGDR_REG_MAGIC: rd_value = fgdr_regs_pkg::FGDR_MAGIC_VALUE;
`ifdef FGDR_BROKEN_VERSION_1_0
        fgdr_regs_pkg::FGDR_REG_VERSION: rd_value = 32'h0001_0000;
`else
        fgdr_regs_pkg::FGDR_REG_VERSION: rd_value = fgdr_regs_pkg::FGDR_VERSION_VALUE;
`endif
        fgdr_regs_pkg::FGDR_REG_SLOT_BASE_LO: rd_value = SLOT_BASE[31:0];
        fgdr_regs_pkg::FGDR_REG_SLOT_BASE_HI: rd_value = SLOT_BASE[63:32];
        fgdr_regs_pkg::FGDR_REG_SLOT_SIZE: rd_value = SLOT_SIZE_W;
        fgdr_regs_pkg::FGDR_REG_SLOT_COUNT: rd_value = SLOT_COUNT_W;
        fgdr_regs_pkg::FGDR_REG_USER_IRQ: rd_value = USER_IRQ_W;
        fgdr_regs_pkg::FGDR_REG_CONTROL: begin
          rd_value[CAP] = ctl_capture;
          rd_value[IEN] = ctl_irq_en;
        end
        fgdr_regs_pkg::FGDR_REG_IRQ_STATUS:
          rd_value[fgdr_regs_pkg::FGDR_IRQ_STATUS_FRAME_PENDING] = pending;
        fgdr_regs_pkg::FGDR_REG_DONE_SEQ_LO: rd_value = live_seq[31:0];
        fgdr_regs_pkg::FGDR_REG_DONE_SEQ_HI: rd_value = lat_seq_hi;
        fgdr_regs_pkg::FGDR_REG_DONE_SLOT: rd_value = lat_slot;
        fgdr_regs_pkg::FGDR_REG_DONE_LENGTH: rd_value = lat_length;
        fgdr_regs_pkg::FGDR_REG_EPOCH: rd_value = epoch;
        fgdr_regs_pkg::FGDR_REG_DROPPED: rd_value = dropped;
`ifdef FGDR_BROKEN_LIVE_SEQ_LATCHED
        // BROKEN (test only): LIVE_SEQ_LO returns the latched record.
        fgdr_regs_pkg::FGDR_REG_LIVE_SEQ_LO: rd_value = lat_seq_lo;
`else
        fgdr_regs_pkg::FGDR_REG_LIVE_SEQ_LO: rd_value = live_seq[31:0];
`endif
        default: rd_value = 32'd0;
      endcase
    end
  end

  logic rd_latch;
  assign rd_latch = s_axil_arvalid && s_axil_arready && rd_in_block &&
                    rd_off == fgdr_regs_pkg::FGDR_REG_DONE_SEQ_LO;

`ifdef FGDR_BROKEN_LIVE_SEQ_LATCHED
  logic [31:0] lat_seq_lo;
  always_ff @(posedge axi_aclk) if (rd_latch) lat_seq_lo <= live_seq[31:0];
`endif

`ifdef FGDR_BROKEN_HANG_RESERVED
  // BROKEN (test only): a read of a reserved address is never answered.
  logic rd_reserved;
  assign rd_reserved = !rd_in_block || rd_off > fgdr_regs_pkg::FGDR_REG_LIVE_SEQ_LO;
`else
  logic rd_reserved;
  assign rd_reserved = 1'b0;
`endif

  always_ff @(posedge axi_aclk) begin
    if (!axi_aresetn) begin
      s_axil_rvalid <= 1'b0;
      s_axil_rdata <= '0;
      lat_seq_hi <= '0;
      lat_slot <= '0;
      lat_length <= '0;
    end else begin
      if (s_axil_arvalid && s_axil_arready && !rd_reserved) begin
        s_axil_rvalid <= 1'b1;
        s_axil_rdata <= rd_value;
      end else if (s_axil_rvalid && s_axil_rready) begin
        s_axil_rvalid <= 1'b0;
      end
      if (rd_latch) begin
        lat_seq_hi <= live_seq[63:32];
        lat_slot <= live_slot;
        lat_length <= live_length;
      end
    end
  end

  // ---- the interrupt ----
  fgdr_irq u_irq (
      .clk(axi_aclk),
      .rst_n(axi_aresetn),
      .pending(pending),
      .irq_en(ctl_irq_en),
      .owed(owed),
      .msi_enable(msi_enable),
      .msix_enable(msix_enable),
      .ack(usr_irq_ack[USER_IRQ]),
      .req(irq_req),
      .taken(irq_taken)
  );

  assign usr_irq_req = NUM_USR_IRQ'(irq_req) << USER_IRQ;

  assign capture = ctl_capture;

  // Only the bit USER_IRQ of usr_irq_ack is this block's.
  logic unused_ok;
  assign unused_ok = &{1'b0, usr_irq_ack};
endmodule

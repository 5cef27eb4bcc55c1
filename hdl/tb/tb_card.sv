// Testbench top for the cocotb tests (test_card.py): fgdr_card with a 250 MHz clock
// made here (cheaper than a clock driven from Python), every other port driven by the
// Python models of the XDMA side, card memory being tb_axi_ram.  Parameters come from hdl/run.sh.
`timescale 1ns / 1ps
module tb_card #(
    parameter int DATA_W = 64,
    parameter int SLOT_COUNT = 4,
    parameter int VIDEO_SOURCE = 1,
    parameter int WIDTH = 64,
    parameter int HEIGHT = 16,
    parameter int FORMAT = 1,
    parameter int STRIDE = 64,
    parameter int FIFO_DEPTH_LOG2 = 9,
    parameter int MAX_BURST = 64,
    parameter int NUM_USR_IRQ = 4,
    parameter int USER_IRQ = 2
) (
    input  logic                   axi_aresetn,
    input  logic [31:0]            m_axil_awaddr,
    input  logic [2:0]             m_axil_awprot,
    input  logic                   m_axil_awvalid,
    output logic                   m_axil_awready,
    input  logic [31:0]            m_axil_wdata,
    input  logic [3:0]             m_axil_wstrb,
    input  logic                   m_axil_wvalid,
    output logic                   m_axil_wready,
    output logic [1:0]             m_axil_bresp,
    output logic                   m_axil_bvalid,
    input  logic                   m_axil_bready,
    input  logic [31:0]            m_axil_araddr,
    input  logic [2:0]             m_axil_arprot,
    input  logic                   m_axil_arvalid,
    output logic                   m_axil_arready,
    output logic [31:0]            m_axil_rdata,
    output logic [1:0]             m_axil_rresp,
    output logic                   m_axil_rvalid,
    input  logic                   m_axil_rready,
    output logic [NUM_USR_IRQ-1:0] usr_irq_req,
    input  logic [NUM_USR_IRQ-1:0] usr_irq_ack,
    input  logic                   msi_enable,
    input  logic                   msix_enable,
    input  logic [DATA_W-1:0]      s_axis_video_tdata,
    input  logic                   s_axis_video_tvalid,
    output logic                   s_axis_video_tready,
    input  logic                   s_axis_video_tuser,
    input  logic                   s_axis_video_tlast,
    input  logic [31:0]            pattern_frame_gap,
    // card memory model controls (tb_axi_ram)
    input  logic [7:0]             mem_stall_aw,
    input  logic [7:0]             mem_stall_w,
    input  logic [7:0]             mem_stall_b,
    input  logic [7:0]             mem_b_delay,
    input  logic [63:0]            mem_err_lo,
    input  logic [63:0]            mem_err_hi
);
  localparam logic [63:0] SLOT_BASE = 64'h0001_0000;

  logic [63:0]         frame_axi_awaddr;
  logic [7:0]          frame_axi_awlen;
  logic [2:0]          frame_axi_awsize;
  logic [1:0]          frame_axi_awburst;
  logic [3:0]          frame_axi_awcache;
  logic [2:0]          frame_axi_awprot;
  logic                frame_axi_awvalid;
  logic                frame_axi_awready;
  logic [DATA_W-1:0]   frame_axi_wdata;
  logic [DATA_W/8-1:0] frame_axi_wstrb;
  logic                frame_axi_wlast;
  logic                frame_axi_wvalid;
  logic                frame_axi_wready;
  logic [1:0]          frame_axi_bresp;
  logic                frame_axi_bvalid;
  logic                frame_axi_bready;
  logic axi_aclk = 1'b0;
  always #2 axi_aclk = ~axi_aclk;

  fgdr_card #(
      .DATA_W(DATA_W),
      .SLOT_BASE(SLOT_BASE),
      .SLOT_SIZE(4096),
      .SLOT_COUNT(SLOT_COUNT),
      .NUM_USR_IRQ(NUM_USR_IRQ),
      .USER_IRQ(USER_IRQ),
      .VIDEO_SOURCE(VIDEO_SOURCE),
      .WIDTH(WIDTH),
      .HEIGHT(HEIGHT),
      .FORMAT(FORMAT),
      .STRIDE(STRIDE),
      .FIFO_DEPTH_LOG2(FIFO_DEPTH_LOG2),
      .MAX_BURST(MAX_BURST)
  ) u_card (.*);

  tb_axi_ram #(
      .DATA_W(DATA_W),
      .BASE(SLOT_BASE),
      .WORDS(SLOT_COUNT * 4096 / (DATA_W / 8))
  ) u_ram (
      .clk(axi_aclk),
      .rst_n(axi_aresetn),
      .stall_aw(mem_stall_aw),
      .stall_w(mem_stall_w),
      .stall_b(mem_stall_b),
      .b_delay(mem_b_delay),
      .err_lo(mem_err_lo),
      .err_hi(mem_err_hi),
      .awaddr(frame_axi_awaddr),
      .awlen(frame_axi_awlen),
      .awvalid(frame_axi_awvalid),
      .awready(frame_axi_awready),
      .wdata(frame_axi_wdata),
      .wstrb(frame_axi_wstrb),
      .wlast(frame_axi_wlast),
      .wvalid(frame_axi_wvalid),
      .wready(frame_axi_wready),
      .bresp(frame_axi_bresp),
      .bvalid(frame_axi_bvalid),
      .bready(frame_axi_bready)
  );

  // ---- monitors: counters the Python tests read (cheaper than watching every clock
  //      from Python) ----
  // frames the writer started while CAPTURE was set: each is completed or DROPPED
  logic [31:0] mon_frames_started = 0;
  // a frame completed in the clock of a HOST_ACK that matched the record before it
  logic [31:0] mon_same_cycle_ack = 0;
  // a HOST_ACK that did not match while FRAME_PENDING was set
  logic [31:0] mon_stale_ack = 0;
  // IRQ_EN cleared while the request was up
  logic [31:0] mon_irq_en_fall_req = 0;
  // CAPTURE 0->1 while FRAME_PENDING was set
  logic [31:0] mon_capture_clear = 0;
  // write order: the header's burst issued while payload writes had no response yet
  logic [31:0] mon_err_header_early = 0;
  // write order: a frame announced before its header's write response
  logic [31:0] mon_err_done_early = 0;
  logic [31:0] outstanding = 0;
  logic        hdr_inflight = 1'b0, hdr_written = 1'b0;

  logic aw_fire, b_fire;
  assign aw_fire = frame_axi_awvalid && frame_axi_awready;
  assign b_fire = frame_axi_bvalid && frame_axi_bready;

  always @(posedge axi_aclk) begin
    if (!axi_aresetn) begin
      mon_frames_started <= 0;
      outstanding <= 0;
      hdr_inflight <= 1'b0;
      hdr_written <= 1'b0;
    end else begin
      if (u_card.u_writer.beat && u_card.u_writer.sof && u_card.u_writer.capture)
        mon_frames_started <= mon_frames_started + 1;
      outstanding <= outstanding + {31'd0, aw_fire} - {31'd0, b_fire};
      if (aw_fire && frame_axi_awaddr[11:0] == 12'd0) begin
        if (outstanding != {31'd0, b_fire}) mon_err_header_early <= mon_err_header_early + 1;
        hdr_inflight <= 1'b1;
      end else if (b_fire && hdr_inflight && outstanding == 1) begin
        hdr_inflight <= 1'b0;
        hdr_written <= 1'b1;
      end
      if (u_card.u_writer.done_valid) begin
        if (!hdr_written) mon_err_done_early <= mon_err_done_early + 1;
        hdr_written <= 1'b0;
      end
    end
    if (u_card.u_regs.complete && u_card.u_regs.ack_wr && u_card.u_regs.ack_match)
      mon_same_cycle_ack <= mon_same_cycle_ack + 1;
    if (u_card.u_regs.ack_wr && u_card.u_regs.pending && !u_card.u_regs.ack_match &&
        !u_card.u_regs.complete)
      mon_stale_ack <= mon_stale_ack + 1;
    if (u_card.u_regs.ctl_wr && !u_card.u_regs.w_data[1] && usr_irq_req[USER_IRQ])
      mon_irq_en_fall_req <= mon_irq_en_fall_req + 1;
    if (u_card.u_regs.capture_rise && u_card.u_regs.pending)
      mon_capture_clear <= mon_capture_clear + 1;
  end
endmodule

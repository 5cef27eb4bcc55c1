// fgdr_card: the card side of docs/card-protocol.md for an XDMA design (PG195), to sit
// next to the XDMA IP.  Its ports carry the names of the XDMA ports they connect to:
// axi_aclk, axi_aresetn, usr_irq_req, usr_irq_ack, msi_enable, msix_enable and the
// AXI4-Lite master m_axil_* (the user BAR, "PCIe to AXI Lite Master"; this block is its
// slave).  Besides: an AXI4-Stream video input (s_axis_video_*, on axi_aclk), and an
// AXI4 write master to card memory (frame_axi_*, e.g. through an interconnect to the
// DDR that the XDMA's own M_AXI reads with C2H).  hdl/README.md says how to connect it.
//
// Everything runs on axi_aclk and is reset by axi_aresetn (PG195: synchronous to
// axi_aclk, asserted while the PCIe link is down and at hot reset), except the reset
// epoch (EPOCH).  Nothing of this has run on an FPGA.
module fgdr_card #(
    parameter int DATA_W = 64,          // frame_axi and video data width: 64, 128, 256
    parameter int AXIL_ADDR_W = 32,
    parameter logic [63:0] SLOT_BASE = 64'h0,    // card address of slot 0, a multiple of 4096
    parameter int SLOT_SIZE = 4096,     // a multiple of 4096, >= 64 + STRIDE x HEIGHT
    parameter int SLOT_COUNT = 4,       // 2..1024
    parameter int NUM_USR_IRQ = 1,      // the XDMA's usr_irq_req width, 1..16
    parameter int USER_IRQ = 0,         // the bit raised for frame-done
    parameter int VIDEO_SOURCE = 0,     // 0: s_axis_video, 1: the test pattern
    parameter int WIDTH = 64,           // pixels per row
    parameter int HEIGHT = 16,          // rows
    parameter int FORMAT = 1,           // 1 mono8, 2 rgb8
    parameter int STRIDE = 64,          // bytes per row: a multiple of DATA_W / 8
    parameter int FIFO_DEPTH_LOG2 = 9,  // video FIFO, beats
    parameter int MAX_BURST = 64,       // beats per write burst, 1..256
    parameter logic [31:0] NS_PER_CLK_Q16 = 32'h0004_0000,  // 4 ns: 250 MHz
    parameter logic [31:0] EPOCH_INIT = 32'd0
) (
    input  logic                   axi_aclk,
    input  logic                   axi_aresetn,
    // from the XDMA's AXI4-Lite master (PG195 m_axil_*)
    input  logic [AXIL_ADDR_W-1:0] m_axil_awaddr,
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
    input  logic [AXIL_ADDR_W-1:0] m_axil_araddr,
    input  logic [2:0]             m_axil_arprot,
    input  logic                   m_axil_arvalid,
    output logic                   m_axil_arready,
    output logic [31:0]            m_axil_rdata,
    output logic [1:0]             m_axil_rresp,
    output logic                   m_axil_rvalid,
    input  logic                   m_axil_rready,
    // XDMA user interrupts (PG195 "Interrupt Interface")
    output logic [NUM_USR_IRQ-1:0] usr_irq_req,
    input  logic [NUM_USR_IRQ-1:0] usr_irq_ack,
    input  logic                   msi_enable,
    input  logic                   msix_enable,
    // video in (VIDEO_SOURCE = 0); tuser: first beat of a frame
    input  logic [DATA_W-1:0]      s_axis_video_tdata,
    input  logic                   s_axis_video_tvalid,
    output logic                   s_axis_video_tready,
    input  logic                   s_axis_video_tuser,
    input  logic                   s_axis_video_tlast,
    // test pattern (VIDEO_SOURCE = 1): clocks between frames; tie to a constant
    input  logic [31:0]            pattern_frame_gap,
    // AXI4 write master to card memory
    output logic [63:0]            frame_axi_awaddr,
    output logic [7:0]             frame_axi_awlen,
    output logic [2:0]             frame_axi_awsize,
    output logic [1:0]             frame_axi_awburst,
    output logic [3:0]             frame_axi_awcache,
    output logic [2:0]             frame_axi_awprot,
    output logic                   frame_axi_awvalid,
    input  logic                   frame_axi_awready,
    output logic [DATA_W-1:0]      frame_axi_wdata,
    output logic [DATA_W/8-1:0]    frame_axi_wstrb,
    output logic                   frame_axi_wlast,
    output logic                   frame_axi_wvalid,
    input  logic                   frame_axi_wready,
    input  logic [1:0]             frame_axi_bresp,
    input  logic                   frame_axi_bvalid,
    output logic                   frame_axi_bready
);
  localparam int BPP = (FORMAT == 2) ? 3 : 1;

  // ---- parameter rules (docs/card-protocol.md, "Geometry"): a design that breaks one
  //      fails to elaborate, naming the rule ----
  if (DATA_W != 64 && DATA_W != 128 && DATA_W != 256) begin : g_rule_data_w
    fgdr_rule_DATA_W_is_64_128_or_256 u_rule ();
  end
  if (SLOT_COUNT < 2 || SLOT_COUNT > 1024) begin : g_rule_slot_count
    fgdr_rule_SLOT_COUNT_is_2_to_1024 u_rule ();
  end
  if (SLOT_SIZE % 4096 != 0 || SLOT_SIZE < 64 + STRIDE * HEIGHT) begin : g_rule_slot_size
    fgdr_rule_SLOT_SIZE_is_a_multiple_of_4096_holding_a_frame u_rule ();
  end
  if (SLOT_BASE[11:0] != 12'd0) begin : g_rule_slot_base
    fgdr_rule_SLOT_BASE_is_a_multiple_of_4096 u_rule ();
  end
  if (STRIDE % (DATA_W / 8) != 0 || STRIDE < WIDTH * BPP || WIDTH == 0 || HEIGHT == 0 ||
      STRIDE * HEIGHT <= 8) begin : g_rule_stride
    fgdr_rule_STRIDE_is_a_multiple_of_the_beat_and_holds_a_row u_rule ();
  end
  if (FORMAT != 1 && FORMAT != 2) begin : g_rule_format
    fgdr_rule_FORMAT_is_1_mono8_or_2_rgb8 u_rule ();
  end
  if (NUM_USR_IRQ < 1 || NUM_USR_IRQ > 16 || USER_IRQ >= NUM_USR_IRQ) begin : g_rule_irq
    fgdr_rule_USER_IRQ_is_below_NUM_USR_IRQ_at_most_16 u_rule ();
  end
  if (MAX_BURST < 1 || MAX_BURST > 256) begin : g_rule_burst
    fgdr_rule_MAX_BURST_is_1_to_256 u_rule ();
  end

  logic        capture;
  logic        done_valid;
  logic [63:0] done_seq, ts_ns, stream_seq;
  logic [31:0] done_slot, done_length;
  logic [1:0]  dropped_inc;

  fgdr_user_regs #(
      .AXIL_ADDR_W(AXIL_ADDR_W),
      .SLOT_BASE(SLOT_BASE),
      .SLOT_SIZE(SLOT_SIZE),
      .SLOT_COUNT(SLOT_COUNT),
      .NUM_USR_IRQ(NUM_USR_IRQ),
      .USER_IRQ(USER_IRQ),
      .EPOCH_INIT(EPOCH_INIT)
  ) u_regs (
      .axi_aclk(axi_aclk),
      .axi_aresetn(axi_aresetn),
      .s_axil_awaddr(m_axil_awaddr),
      .s_axil_awvalid(m_axil_awvalid),
      .s_axil_awready(m_axil_awready),
      .s_axil_wdata(m_axil_wdata),
      .s_axil_wstrb(m_axil_wstrb),
      .s_axil_wvalid(m_axil_wvalid),
      .s_axil_wready(m_axil_wready),
      .s_axil_bresp(m_axil_bresp),
      .s_axil_bvalid(m_axil_bvalid),
      .s_axil_bready(m_axil_bready),
      .s_axil_araddr(m_axil_araddr),
      .s_axil_arvalid(m_axil_arvalid),
      .s_axil_arready(m_axil_arready),
      .s_axil_rdata(m_axil_rdata),
      .s_axil_rresp(m_axil_rresp),
      .s_axil_rvalid(m_axil_rvalid),
      .s_axil_rready(m_axil_rready),
      .usr_irq_req(usr_irq_req),
      .usr_irq_ack(usr_irq_ack),
      .msi_enable(msi_enable),
      .msix_enable(msix_enable),
      .capture(capture),
      .done_valid(done_valid),
      .done_seq(done_seq),
      .done_slot(done_slot),
      .done_length(done_length),
      .dropped_inc(dropped_inc)
  );

  fgdr_timestamp #(
      .NS_PER_CLK_Q16(NS_PER_CLK_Q16)
  ) u_ts (
      .clk(axi_aclk),
      .rst_n(axi_aresetn),
      .ns(ts_ns)
  );

  // ---- the video source ----
  logic [DATA_W-1:0] v_tdata;
  logic              v_tvalid, v_tready, v_tuser, v_tlast;

  if (VIDEO_SOURCE == 1) begin : g_pattern
    fgdr_test_pattern #(
        .DATA_W(DATA_W),
        .WIDTH(WIDTH),
        .HEIGHT(HEIGHT),
        .FORMAT(FORMAT),
        .STRIDE(STRIDE)
    ) u_pattern (
        .clk(axi_aclk),
        .rst_n(axi_aresetn),
        .enable(1'b1),
        .frame_gap(pattern_frame_gap),
        .seq(stream_seq),
        .m_axis_tdata(v_tdata),
        .m_axis_tvalid(v_tvalid),
        .m_axis_tready(v_tready),
        .m_axis_tuser(v_tuser),
        .m_axis_tlast(v_tlast)
    );
    assign s_axis_video_tready = 1'b0;
  end else begin : g_stream
    assign v_tdata = s_axis_video_tdata;
    assign v_tvalid = s_axis_video_tvalid;
    assign v_tuser = s_axis_video_tuser;
    assign v_tlast = s_axis_video_tlast;
    assign s_axis_video_tready = v_tready;
  end

  fgdr_frame_writer #(
      .DATA_W(DATA_W),
      .SLOT_BASE(SLOT_BASE),
      .SLOT_SIZE(SLOT_SIZE),
      .SLOT_COUNT(SLOT_COUNT),
      .WIDTH(WIDTH),
      .HEIGHT(HEIGHT),
      .FORMAT(FORMAT),
      .STRIDE(STRIDE),
      .FIFO_DEPTH_LOG2(FIFO_DEPTH_LOG2),
      .MAX_BURST(MAX_BURST),
      .SEQ_IN_PAYLOAD(VIDEO_SOURCE == 1)
  ) u_writer (
      .clk(axi_aclk),
      .rst_n(axi_aresetn),
      .capture(capture),
      .ts_ns(ts_ns),
      .stream_seq(stream_seq),
      .s_axis_tdata(v_tdata),
      .s_axis_tvalid(v_tvalid),
      .s_axis_tready(v_tready),
      .s_axis_tuser(v_tuser),
      .s_axis_tlast(v_tlast),
      .m_axi_awaddr(frame_axi_awaddr),
      .m_axi_awlen(frame_axi_awlen),
      .m_axi_awsize(frame_axi_awsize),
      .m_axi_awburst(frame_axi_awburst),
      .m_axi_awcache(frame_axi_awcache),
      .m_axi_awprot(frame_axi_awprot),
      .m_axi_awvalid(frame_axi_awvalid),
      .m_axi_awready(frame_axi_awready),
      .m_axi_wdata(frame_axi_wdata),
      .m_axi_wstrb(frame_axi_wstrb),
      .m_axi_wlast(frame_axi_wlast),
      .m_axi_wvalid(frame_axi_wvalid),
      .m_axi_wready(frame_axi_wready),
      .m_axi_bresp(frame_axi_bresp),
      .m_axi_bvalid(frame_axi_bvalid),
      .m_axi_bready(frame_axi_bready),
      .done_valid(done_valid),
      .done_seq(done_seq),
      .done_slot(done_slot),
      .done_length(done_length),
      .dropped_inc(dropped_inc)
  );

  // AXI4-Lite protection bits carry nothing this block uses (PG195: 3'h0).
  logic unused_ok;
  assign unused_ok = &{1'b0, m_axil_awprot, m_axil_arprot, pattern_frame_gap, stream_seq,
                       s_axis_video_tdata, s_axis_video_tvalid, s_axis_video_tuser,
                       s_axis_video_tlast};
endmodule

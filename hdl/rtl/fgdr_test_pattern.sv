// Test-pattern source: an AXI4-Stream video source whose frames, once the frame writer
// has put them in a slot, are byte for byte those of the simulated card's test pattern
// (appliance/fpgagdr-sim, TestPattern; docs/frames.md): WIDTH x HEIGHT pixels of FORMAT
// (1 mono8, 2 rgb8 in the byte order R, G, B), pixel (x, y) of frame s has the value
// x + y + s (mod 256) in each channel c plus 85 x c, and the payload's first 8 bytes
// are s, little-endian.  Row padding (STRIDE > WIDTH x bytes per pixel) is 0.
//
// Stream: byte lane k of tdata is the byte at address k of the beat; tuser marks a
// frame's first beat, tlast a row's last.  `seq` is sampled when a frame starts:
// the frame writer's `stream_seq`, the sequence the frame will get.  A frame starts
// when `enable` is set and `frame_gap` clocks passed since the previous one.
module fgdr_test_pattern #(
    parameter int DATA_W = 64,
    parameter int WIDTH = 64,
    parameter int HEIGHT = 16,
    parameter int FORMAT = 1,
    parameter int STRIDE = 64,
    parameter int LINE_GAP = 0
) (
    input  logic              clk,
    input  logic              rst_n,
    input  logic              enable,
    input  logic [31:0]       frame_gap,
    input  logic [63:0]       seq,
    output logic [DATA_W-1:0] m_axis_tdata,
    output logic              m_axis_tvalid,
    input  logic              m_axis_tready,
    output logic              m_axis_tuser,
    output logic              m_axis_tlast
);
  localparam int B = DATA_W / 8;
  localparam int BPP = (FORMAT == 2) ? 3 : 1;
  localparam int ROW_BYTES = WIDTH * BPP;
  localparam int BEATS_PER_ROW = STRIDE / B;
  // advance of (x, channel) per beat: B bytes = Q pixels + R channels
  localparam int Q = B / BPP;
  localparam int R = B % BPP;

  logic [31:0] gap;
  logic        sending;
  logic [31:0] bx;        // beat within the row
  logic [31:0] y;         // row
  logic [31:0] line_gap;
  logic [63:0] seq_r;
  logic [7:0]  x0;        // pixel of the beat's byte 0, mod 256
  logic [1:0]  c0;        // its channel
  logic        first;     // the frame's first beat

  // The beat's bytes.  (A function, so that its temporaries are no signals: Icarus
  // would re-run an always_comb that writes and then reads them.)
  function automatic logic [DATA_W-1:0] beat_bytes(input logic [7:0] x0_i, input logic [1:0] c0_i,
                                                   input logic [31:0] y_i, input logic [31:0] bx_i,
                                                   input logic [63:0] s);
    logic [DATA_W-1:0] d;
    logic [7:0] t, v, c, dx;
    d = '0;
    for (int k = 0; k < B; k++) begin
      t = {6'd0, c0_i} + 8'(k);
      c = t % 8'(BPP);
      dx = t / 8'(BPP);
`ifdef FGDR_BROKEN_PATTERN_CHANNEL_ORDER
      // BROKEN (test only): rgb8 channels in the order B, G, R.
      v = x0_i + dx + y_i[7:0] + s[7:0] + 8'(85) * (8'(BPP - 1) - c);
`else
      v = x0_i + dx + y_i[7:0] + s[7:0] + 8'(85) * c;
`endif
      if (bx_i * B + 32'(k) >= ROW_BYTES) v = 8'd0;
      d[8*k+:8] = v;
    end
    // the payload's first 8 bytes: the sequence
    if (y_i == 0 && bx_i == 0) d[63:0] = s;
    beat_bytes = d;
  endfunction

  assign m_axis_tdata = beat_bytes(x0, c0, y, bx, seq_r);

  assign m_axis_tvalid = sending && line_gap == 0;
  assign m_axis_tuser = first;
  assign m_axis_tlast = bx == BEATS_PER_ROW - 1;

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      gap <= '0;
      sending <= 1'b0;
      bx <= '0;
      y <= '0;
      line_gap <= '0;
      seq_r <= '0;
      x0 <= '0;
      c0 <= '0;
      first <= 1'b0;
    end else if (!sending) begin
      if (gap != 0) begin
        gap <= gap - 32'd1;
      end else if (enable) begin
        sending <= 1'b1;
        first <= 1'b1;
        seq_r <= seq;
        bx <= '0;
        y <= '0;
        x0 <= '0;
        c0 <= '0;
      end
    end else if (line_gap != 0) begin
      line_gap <= line_gap - 32'd1;
    end else if (m_axis_tready) begin
      first <= 1'b0;
      if (bx == BEATS_PER_ROW - 1) begin
        bx <= '0;
        x0 <= '0;
        c0 <= '0;
        line_gap <= 32'(LINE_GAP);
        if (y == HEIGHT - 1) begin
          sending <= 1'b0;
          gap <= frame_gap;
        end else begin
          y <= y + 32'd1;
        end
      end else begin
        bx <= bx + 32'd1;
        if (32'(c0) + R >= BPP) begin
          x0 <= x0 + 8'(Q + 1);
          c0 <= 2'(32'(c0) + R - BPP);
        end else begin
          x0 <= x0 + 8'(Q);
          c0 <= 2'(32'(c0) + R);
        end
      end
    end
  end
endmodule

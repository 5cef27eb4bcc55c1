// The frame writer (docs/card-protocol.md, "The frame in its slot", "Back-pressure",
// "Write order"): AXI4-Stream video in, frames out into the slots of card memory
// through an AXI4 (full) write master, then the frame-done record.
//
// - A frame is FRAME_BEATS = STRIDE x HEIGHT / (DATA_W / 8) beats; tuser marks its
//   first beat (tlast is not needed).  Byte lane k of tdata is the byte at offset k of
//   the beat; bytes of a row's last beat past WIDTH x bytes per pixel are written as 0.
// - CAPTURE is sampled at a frame's first beat: a frame that starts while it is 0 is
//   not written (and not counted); one that started while it was 1 is finished.
// - The writer never stalls the stream (a sensor cannot wait): beats go into a FIFO of
//   2^FIFO_DEPTH_LOG2 entries.  When the FIFO is full, or the stream starts a new frame
//   before the current one had all its beats, the frame is dropped whole: it consumes
//   no sequence number, its slot is written again by the next frame, DROPPED counts it.
// - Frame s goes into slot s mod SLOT_COUNT; its payload is written from the slot's
//   byte 64 in INCR bursts of at most MAX_BURST beats that never cross 4 KiB, then,
//   once every payload write response is in, the 64-byte header of docs/frames.md
//   (CRC-32s computed DATA_W / 8 bytes per clock), then, once the header's write
//   response is in, the frame is done (done_valid).  A write response other than OKAY
//   drops the frame.  The next frame's first write is issued only after that: the
//   writer starts frame s + N only after frame s + N - 1 completed.
// - SEQ_IN_PAYLOAD (the test pattern, whose pixels depend on the sequence it was
//   rendered for, carried in its first 8 bytes): a frame rendered for another sequence
//   than the one it would get (a frame ahead of it in the FIFO was dropped for a write
//   error after the source had counted it) is dropped whole too.
module fgdr_frame_writer #(
    parameter int DATA_W = 64,
    parameter logic [63:0] SLOT_BASE = 64'h0,
    parameter int SLOT_SIZE = 4096,
    parameter int SLOT_COUNT = 4,
    parameter int WIDTH = 64,
    parameter int HEIGHT = 16,
    parameter int FORMAT = 1,
    parameter int STRIDE = 64,
    parameter int FIFO_DEPTH_LOG2 = 9,
    parameter int MAX_BURST = 64,
    parameter bit SEQ_IN_PAYLOAD = 1'b0
) (
    input  logic                clk,
    input  logic                rst_n,
    input  logic                capture,     // CONTROL.CAPTURE
    input  logic [63:0]         ts_ns,       // fgdr_timestamp
    output logic [63:0]         stream_seq,  // sequence of the next frame to start
    // AXI4-Stream video in
    input  logic [DATA_W-1:0]   s_axis_tdata,
    input  logic                s_axis_tvalid,
    output logic                s_axis_tready,
    input  logic                s_axis_tuser,
    input  logic                s_axis_tlast,
    // AXI4 write master to card memory
    output logic [63:0]         m_axi_awaddr,
    output logic [7:0]          m_axi_awlen,
    output logic [2:0]          m_axi_awsize,
    output logic [1:0]          m_axi_awburst,
    output logic [3:0]          m_axi_awcache,
    output logic [2:0]          m_axi_awprot,
    output logic                m_axi_awvalid,
    input  logic                m_axi_awready,
    output logic [DATA_W-1:0]   m_axi_wdata,
    output logic [DATA_W/8-1:0] m_axi_wstrb,
    output logic                m_axi_wlast,
    output logic                m_axi_wvalid,
    input  logic                m_axi_wready,
    input  logic [1:0]          m_axi_bresp,
    input  logic                m_axi_bvalid,
    output logic                m_axi_bready,
    // frame done, to the register block
    output logic                done_valid,
    output logic [63:0]         done_seq,
    output logic [31:0]         done_slot,
    output logic [31:0]         done_length,
    output logic [1:0]          dropped_inc
);
  localparam int B = DATA_W / 8;
  localparam int BPP = (FORMAT == 2) ? 3 : 1;
  localparam int ROW_BYTES = WIDTH * BPP;
  localparam int ROW_BEATS = STRIDE / B;
  localparam int PAYLOAD = STRIDE * HEIGHT;
  localparam int FRAME_BEATS = PAYLOAD / B;
  localparam int HDR_BEATS = 64 / B;
  localparam int DEPTH = 1 << FIFO_DEPTH_LOG2;
  localparam logic [2:0] AWSIZE = (B == 32) ? 3'd5 : (B == 16) ? 3'd4 : 3'd3;

  // ---- CRC-32 (zlib: reflected 0xEDB88320, init and xorout 0xFFFFFFFF), bytes in
  //      address order: lane 0 first ----
  function automatic logic [31:0] crc_byte(input logic [31:0] crc, input logic [7:0] b);
    logic [31:0] c;
    c = crc ^ {24'd0, b};
    for (int i = 0; i < 8; i++) c = c[0] ? ((c >> 1) ^ 32'hedb8_8320) : (c >> 1);
    crc_byte = c;
  endfunction

  function automatic logic [31:0] crc_beat(input logic [31:0] crc, input logic [DATA_W-1:0] d);
    logic [31:0] c;
    c = crc;
`ifdef FGDR_BROKEN_CRC_LANE_ORDER
    // BROKEN (test only): the beat's bytes from the top lane down.
    for (int k = B - 1; k >= 0; k--) c = crc_byte(c, d[8*k+:8]);
`else
    for (int k = 0; k < B; k++) c = crc_byte(c, d[8*k+:8]);
`endif
    crc_beat = c;
  endfunction

  // the first n bytes of a beat (the header's last CRC-covered beat is partial)
  function automatic logic [31:0] crc_part(input logic [31:0] crc, input logic [DATA_W-1:0] d,
                                           input logic [31:0] n);
    logic [31:0] c;
    c = crc;
    for (int k = 0; k < B; k++) if (32'(k) < n) c = crc_byte(c, d[8*k+:8]);
    crc_part = c;
  endfunction

  // ======================= input side: stream -> FIFO =======================
  // FIFO entry: {abort, sof, data}.  abort: the frame that was open at the input is
  // dropped (an entry of its own, or together with the next frame's first beat).
  localparam int EW = DATA_W + 2;
  logic [EW-1:0]            push_entry;
  logic                     push;
  logic                     fifo_full, fifo_out_valid, fifo_pop;
  logic [EW-1:0]            fifo_out;
  logic [FIFO_DEPTH_LOG2:0] fifo_count;
  logic                     data_room;
  logic                     in_open;
  logic [31:0]              in_beats;   // beats of the open frame pushed
  logic                     in_drop;    // a frame dropped at the input with nothing pushed
  logic                     in_full_frame;  // the open frame's last beat was pushed
  logic [31:0]              markers;    // abort entries in the FIFO, not yet taken
  logic                     marker_in, marker_taken;
  logic                     ts_push, ts_full, ts_valid, ts_pop;
  logic [63:0]              ts_head;
  logic [2:0]               ts_count;
  logic                     beat, sof;

  assign s_axis_tready = rst_n;
  assign beat = s_axis_tvalid && s_axis_tready;
  assign sof = s_axis_tuser;
  assign data_room = fifo_count < (FIFO_DEPTH_LOG2 + 1)'(DEPTH - 1);

  always_comb begin
    push = 1'b0;
    push_entry = {1'b0, 1'b0, s_axis_tdata};
    in_drop = 1'b0;
    ts_push = 1'b0;
    in_full_frame = 1'b0;
    if (beat && sof) begin
      if (capture && data_room && !ts_full) begin
        push = 1'b1;
        push_entry = {in_open, 1'b1, s_axis_tdata};
        ts_push = 1'b1;
        in_full_frame = FRAME_BEATS == 1;
      end else begin
        // the previous frame (if open) is abandoned; this one is dropped whole when
        // wanted but there is no room (nothing of it was pushed)
        push = in_open;
        push_entry = {1'b1, 1'b0, {DATA_W{1'b0}}};
        in_drop = capture;
      end
    end else if (beat && in_open) begin
      push = 1'b1;
      if (data_room) begin
        push_entry = {1'b0, 1'b0, s_axis_tdata};
        in_full_frame = in_beats == FRAME_BEATS - 1;
      end else begin
        push_entry = {1'b1, 1'b0, {DATA_W{1'b0}}};  // overflow: the frame is dropped
      end
    end
  end
  assign marker_in = push && push_entry[EW-1];

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      in_open <= 1'b0;
      in_beats <= '0;
`ifdef FGDR_BROKEN_CAPTURE_MIDFRAME
    end else if (!capture) begin
      // BROKEN (test only): CAPTURE falling abandons the frame being written.
      in_open <= 1'b0;
`endif
    end else if (beat && sof) begin
      in_open <= push && push_entry[EW-2] && FRAME_BEATS > 1;
      in_beats <= 32'd1;
    end else if (beat && in_open) begin
      in_open <= data_room && in_beats != FRAME_BEATS - 1;
      in_beats <= in_beats + 32'd1;
    end
  end

  fgdr_fifo #(
      .WIDTH(EW),
      .DEPTH_LOG2(FIFO_DEPTH_LOG2)
  ) u_fifo (
      .clk(clk),
      .rst_n(rst_n),
      .in_valid(push),
      .in_data(push_entry),
      .full(fifo_full),
      .out_valid(fifo_out_valid),
      .out_data(fifo_out),
      .out_ready(fifo_pop),
      .count(fifo_count)
  );

  // capture timestamps of the frames in the FIFO
  fgdr_fifo #(
      .WIDTH(64),
      .DEPTH_LOG2(2)
  ) u_ts_fifo (
      .clk(clk),
      .rst_n(rst_n),
      .in_valid(ts_push),
      .in_data(ts_ns),
      .full(ts_full),
      .out_valid(ts_valid),
      .out_data(ts_head),
      .out_ready(ts_pop),
      .count(ts_count)
  );

  // ======================= output side: FIFO -> card memory =======================
  typedef enum logic [3:0] {
    O_IDLE,
    O_AW,
    O_W,
    O_PAD,
    O_WAIT_PAYLOAD,
    O_HDR_AW,
    O_HDR_W,
    O_HDR_WAIT,
    O_DRAIN,
    O_SKIP
  } ostate_t;

  ostate_t     os;
  logic [63:0] seq_next;      // sequence of the next frame to complete
  logic [31:0] slot;          // its slot
  logic [63:0] slot_addr;     // its slot's card address
  logic [63:0] addr;          // next payload write address
  logic [31:0] beats_left;    // payload beats of the frame not yet written
  logic        aw_started;    // awvalid is up, awready not yet seen
  logic [8:0]  burst_cnt;     // beats of the burst still to send
  logic [31:0] row_bx;        // beat within the row
  logic [31:0] crc;           // payload CRC, running (not yet inverted)
  logic [31:0] outstanding;   // write bursts issued, response not yet received
  logic        berr;          // a write response of this frame was not OKAY
  logic        abort_done;    // the head entry's abort was taken (entry not yet popped)
  logic [31:0] full_inflight; // frames with all beats in the FIFO, not yet done/dropped
  logic [3:0]  hidx;          // header CRC: next beat
  logic [31:0] hcrc;          // header CRC, running
  logic [2:0]  hbeat;         // header beat being sent
  logic        out_drop;      // one clock: the output side dropped a frame

  logic            head_abort, head_is_sof;
  logic [DATA_W-1:0] head_data, wmask;
  assign head_is_sof = fifo_out[EW-2];
  assign head_data = fifo_out[DATA_W-1:0];
  // inside a frame, an abort or a new frame's first beat ends it
  assign head_abort = fifo_out_valid && (fifo_out[EW-1] || head_is_sof) && !abort_done;

  // bytes of the beat that are pixels (the rest of a row is padding)
  function automatic logic [DATA_W-1:0] row_mask(input logic [31:0] bx);
    logic [DATA_W-1:0] m;
    m = '1;
    for (int k = 0; k < B; k++) if (bx * B + 32'(k) >= ROW_BYTES) m[8*k+:8] = 8'h00;
    row_mask = m;
  endfunction
  assign wmask = row_mask(row_bx);

  // the header of docs/frames.md, bytes 0..63 (byte i at bits 8i+7:8i)
  logic [511:0] hdr;
  logic [31:0]  pcrc;
  assign pcrc = ~crc;
  assign hdr = {~hcrc, 64'd0, pcrc, ts_head, seq_next, 32'(PAYLOAD), 32'(STRIDE),
                32'(HEIGHT), 32'(WIDTH), 16'd0, 16'(FORMAT), 16'd64, 16'd1,
                64'h314d_5246_5244_4746};

  // the burst: at most MAX_BURST beats, the frame's rest, up to the 4 KiB boundary
  function automatic logic [31:0] burst_beats(input logic [11:0] a, input logic [31:0] left);
    logic [31:0] n, to_boundary;
    to_boundary = (32'd4096 - {20'd0, a}) / B;
    n = left;
    if (n > MAX_BURST) n = MAX_BURST;
    if (n > to_boundary) n = to_boundary;
    burst_beats = n;
  endfunction
  logic [31:0] blen;
  assign blen = burst_beats(addr[11:0], beats_left);

  // the whole burst is in the FIFO (or the frame ends early); once up, awvalid stays up
  // until awready
  logic aw_want;
  assign aw_want = aw_started || (!head_abort && (32'(fifo_count) >= blen || markers != 0));
  assign marker_taken = ((os == O_AW && !aw_want) || os == O_W || os == O_SKIP) && head_abort;

  logic aw_fire, w_fire, b_fire;
  assign aw_fire = m_axi_awvalid && m_axi_awready;
  assign w_fire = m_axi_wvalid && m_axi_wready;
  assign b_fire = m_axi_bvalid && m_axi_bready;

  always_comb begin
    m_axi_awvalid = 1'b0;
    m_axi_awaddr = addr;
    m_axi_awlen = 8'(blen - 32'd1);
    m_axi_wvalid = 1'b0;
    m_axi_wdata = head_data & wmask;
    m_axi_wstrb = '1;
    m_axi_wlast = burst_cnt == 9'd1;
    fifo_pop = 1'b0;
    case (os)
      O_AW: m_axi_awvalid = aw_want;
      O_W: begin
        m_axi_wvalid = fifo_out_valid && !head_abort;
        fifo_pop = w_fire;
      end
      O_PAD: begin
        // the rest of a burst whose frame was dropped: beats that write nothing
        m_axi_wvalid = 1'b1;
        m_axi_wdata = '0;
        m_axi_wstrb = '0;
      end
      O_SKIP: fifo_pop = fifo_out_valid && !head_abort;
      O_HDR_AW: begin
        m_axi_awvalid = 1'b1;
        m_axi_awaddr = slot_addr;
        m_axi_awlen = 8'(HDR_BEATS - 1);
      end
      O_HDR_W: begin
        m_axi_wvalid = 1'b1;
        m_axi_wdata = hdr[DATA_W*hbeat+:DATA_W];
        m_axi_wlast = 32'(hbeat) == HDR_BEATS - 1;
      end
      default: ;
    endcase
    // a stray entry outside a frame, or a pure abort entry being taken
    if (os == O_IDLE && fifo_out_valid && !head_is_sof) fifo_pop = 1'b1;
    if (marker_taken && !head_is_sof) fifo_pop = 1'b1;
  end

  assign m_axi_awsize = AWSIZE;
  assign m_axi_awburst = 2'b01;     // INCR
  assign m_axi_awcache = 4'b0011;   // normal, non-cacheable, bufferable
  assign m_axi_awprot = 3'b000;
  assign m_axi_bready = 1'b1;

  assign ts_pop = (os == O_HDR_WAIT && outstanding == 0) ||
                  (os == O_DRAIN && outstanding == 0);

  // a frame whose beats were all pushed leaves the writer (done, or dropped for a write
  // error)
  logic full_leave;
  assign full_leave = outstanding == 0 &&
                      (os == O_HDR_WAIT || (os == O_DRAIN && beats_left == 32'd0));

`ifdef FGDR_BROKEN_DONE_BEFORE_BRESP
  // BROKEN (test only): the frame is announced when its header is sent, not written.
  logic early_done;
  assign early_done = os == O_HDR_W && w_fire && m_axi_wlast;
`endif

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      os <= O_IDLE;
      seq_next <= '0;
      slot <= '0;
      slot_addr <= SLOT_BASE;
      addr <= '0;
      beats_left <= '0;
      aw_started <= 1'b0;
      burst_cnt <= '0;
      row_bx <= '0;
      crc <= '0;
      outstanding <= '0;
      berr <= 1'b0;
      abort_done <= 1'b0;
      hidx <= '0;
      hcrc <= '0;
      hbeat <= '0;
      done_valid <= 1'b0;
      done_seq <= '0;
      done_slot <= '0;
      done_length <= '0;
      out_drop <= 1'b0;
    end else begin
      done_valid <= 1'b0;
      out_drop <= 1'b0;
      outstanding <= outstanding + {31'd0, aw_fire} - {31'd0, b_fire};
      if (b_fire && m_axi_bresp != 2'b00) berr <= 1'b1;
      if (fifo_pop) abort_done <= 1'b0;
      else if (marker_taken) abort_done <= 1'b1;

      case (os)
        O_IDLE:
          if (fifo_out_valid && head_is_sof) begin
            os <= (SEQ_IN_PAYLOAD && head_data[63:0] != seq_next) ? O_SKIP : O_AW;
            addr <= slot_addr + 64'd64;
            beats_left <= 32'(FRAME_BEATS);
            row_bx <= '0;
            crc <= 32'hffff_ffff;
            berr <= 1'b0;
            // the entry's abort flag ended the previous frame, already taken
            abort_done <= 1'b1;
          end
        O_AW:
          if (aw_fire) begin
            os <= O_W;
            aw_started <= 1'b0;
            burst_cnt <= 9'(blen);
          end else if (m_axi_awvalid) begin
            aw_started <= 1'b1;
          end else if (head_abort) begin
            os <= O_DRAIN;
          end
        O_W:
          if (head_abort) begin
            os <= O_PAD;
          end else if (w_fire) begin
            crc <= crc_beat(crc, head_data & wmask);
            addr <= addr + 64'(B);
            beats_left <= beats_left - 32'd1;
            burst_cnt <= burst_cnt - 9'd1;
            row_bx <= (row_bx == ROW_BEATS - 1) ? 32'd0 : row_bx + 32'd1;
            if (burst_cnt == 9'd1) begin
              if (beats_left == 32'd1) begin
                os <= O_WAIT_PAYLOAD;
                hidx <= '0;
                hcrc <= 32'hffff_ffff;
              end else begin
                os <= O_AW;
              end
            end
          end
        O_PAD:
          if (w_fire) begin
            burst_cnt <= burst_cnt - 9'd1;
            if (burst_cnt == 9'd1) os <= O_DRAIN;
          end
        O_WAIT_PAYLOAD: begin
          // CRC of header bytes 0..59, a beat per clock
          if (32'(hidx) != HDR_BEATS) begin
            hcrc <= crc_part(hcrc, hdr[DATA_W*hidx+:DATA_W], 32'd60 - 32'(hidx) * B);
            hidx <= hidx + 4'd1;
          end
`ifdef FGDR_BROKEN_HEADER_BEFORE_BRESP
          // BROKEN (test only): the header goes out before the payload is written.
          if (32'(hidx) == HDR_BEATS) begin
`else
          if (32'(hidx) == HDR_BEATS && outstanding == 0) begin
`endif
            if (berr) begin
              os <= O_DRAIN;
            end else begin
              os <= O_HDR_AW;
            end
          end
        end
        O_HDR_AW:
          if (aw_fire) begin
            os <= O_HDR_W;
            hbeat <= '0;
          end
        O_HDR_W:
          if (w_fire) begin
            hbeat <= hbeat + 3'd1;
            if (32'(hbeat) == HDR_BEATS - 1) os <= O_HDR_WAIT;
          end
        O_HDR_WAIT:
          if (outstanding == 0) begin
            os <= O_IDLE;
            if (!berr) begin
`ifndef FGDR_BROKEN_DONE_BEFORE_BRESP
              done_valid <= 1'b1;
`endif
              done_seq <= seq_next;
              done_slot <= slot;
              done_length <= 32'(PAYLOAD + 64);
              seq_next <= seq_next + 64'd1;
              if (slot == SLOT_COUNT - 1) begin
                slot <= '0;
                slot_addr <= SLOT_BASE;
              end else begin
                slot <= slot + 32'd1;
                slot_addr <= slot_addr + 64'(SLOT_SIZE);
              end
            end else begin
              out_drop <= 1'b1;
            end
          end
        O_DRAIN:
          if (outstanding == 0) begin
            os <= O_IDLE;
            out_drop <= 1'b1;
`ifdef FGDR_BROKEN_DROP_CONSUMES_SEQ
            // BROKEN (test only): a dropped frame takes a sequence number and a slot.
            seq_next <= seq_next + 64'd1;
            if (slot == SLOT_COUNT - 1) begin
              slot <= '0;
              slot_addr <= SLOT_BASE;
            end else begin
              slot <= slot + 32'd1;
              slot_addr <= slot_addr + 64'(SLOT_SIZE);
            end
`endif
          end
        O_SKIP:
          // a frame dropped whole without a write: its beats leave the FIFO
          if (head_abort) begin
            os <= O_DRAIN;
          end else if (fifo_out_valid) begin
            beats_left <= beats_left - 32'd1;
            if (beats_left == 32'd1) os <= O_DRAIN;
          end
        default:
          os <= O_IDLE;
      endcase
`ifdef FGDR_BROKEN_DONE_BEFORE_BRESP
      if (early_done) begin
        done_valid <= 1'b1;
        done_seq <= seq_next;
        done_slot <= slot;
        done_length <= 32'(PAYLOAD + 64);
      end
`endif
    end
  end

  // ---- counters shared by both sides ----
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      markers <= '0;
      full_inflight <= '0;
    end else begin
      markers <= markers + {31'd0, marker_in} - {31'd0, marker_taken && !head_is_sof} -
                 {31'd0, marker_taken && head_is_sof && fifo_out[EW-1]};
      full_inflight <= full_inflight + {31'd0, in_full_frame && push} -
                       {31'd0, full_leave};
    end
  end

  assign stream_seq = seq_next + {32'd0, full_inflight};
`ifdef FGDR_BROKEN_DROP_UNCOUNTED
  // BROKEN (test only): frames dropped whole are not counted.
  assign dropped_inc = 2'd0;
`else
  assign dropped_inc = {1'b0, in_drop} + {1'b0, out_drop};
`endif

  logic unused_ok;
  assign unused_ok = &{1'b0, s_axis_tlast, fifo_full, ts_valid, ts_count};
endmodule

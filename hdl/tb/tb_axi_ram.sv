// TEST MODEL of card memory (e.g. DDR behind an AXI interconnect): an AXI4 write slave
// over a RAM of WORDS beats from BASE, for the card's testbench.  Written in
// SystemVerilog rather than Python because a Python AXI RAM cost about 0.35 ms of
// wall time per beat here, which the 10,000-frame runs cannot afford; the host's C2H
// reads take the RAM's words directly (test_card.py, C2hReader).
//
// - Up to 4 write addresses are taken ahead of their data; the write response of a
//   burst comes B_DELAY..B_DELAY+15 clocks after its last beat, up to 8 waiting, so
//   the writer sees responses arrive late and out of step with its addresses.
// - stall_{aw,w,b}: out of 256, the chance that a clock's awready / wready / bvalid is
//   held low (a slow or busy memory), from an LFSR.
// - A burst that starts in [err_lo, err_hi) answers SLVERR; one outside the RAM
//   DECERR; neither writes.
`timescale 1ns / 1ps
module tb_axi_ram #(
    parameter int DATA_W = 64,
    parameter logic [63:0] BASE = 64'h0001_0000,
    parameter int WORDS = 2048
) (
    input  logic                clk,
    input  logic                rst_n,
    input  logic [7:0]          stall_aw,
    input  logic [7:0]          stall_w,
    input  logic [7:0]          stall_b,
    input  logic [7:0]          b_delay,
    input  logic [63:0]         err_lo,
    input  logic [63:0]         err_hi,
    input  logic [63:0]         awaddr,
    input  logic [7:0]          awlen,
    input  logic                awvalid,
    output logic                awready,
    input  logic [DATA_W-1:0]   wdata,
    input  logic [DATA_W/8-1:0] wstrb,
    input  logic                wlast,
    input  logic                wvalid,
    output logic                wready,
    output logic [1:0]          bresp,
    output logic                bvalid,
    input  logic                bready
);
  localparam int B = DATA_W / 8;

  logic [DATA_W-1:0] mem[WORDS];

  // pseudo-random stalls
  logic [31:0] lfsr = 32'h1;
  always @(posedge clk) lfsr <= {lfsr[30:0], lfsr[31] ^ lfsr[21] ^ lfsr[1] ^ lfsr[0]};
  logic aw_ok, w_ok, b_ok;
  assign aw_ok = lfsr[7:0] >= stall_aw;
  assign w_ok = lfsr[15:8] >= stall_w;
  assign b_ok = lfsr[23:16] >= stall_b;

  // write addresses taken ahead: {addr, len}
  logic [63:0] aq_addr[4];
  logic [7:0]  aq_len[4];
  logic [2:0]  aq_count;
  logic [1:0]  aq_rd, aq_wr;
  // write responses waiting: {due clock, resp}
  logic [31:0] bq_due[8];
  logic [1:0]  bq_resp[8];
  logic [3:0]  bq_count;
  logic [2:0]  bq_rd, bq_wr;
  logic [31:0] now;

  logic [63:0] cur_addr;
  logic [8:0]  cur_beat;
  logic [1:0]  cur_resp;
  logic        cur_active;

  assign awready = rst_n && aq_count != 3'd4 && aw_ok;
  assign wready = rst_n && cur_active && bq_count != 4'd8 && w_ok;
  assign bvalid = rst_n && bq_count != 4'd0 && now >= bq_due[bq_rd] && b_ok;
  assign bresp = bq_resp[bq_rd];

  logic aw_fire, w_fire, b_fire, start;
  assign aw_fire = awvalid && awready;
  assign w_fire = wvalid && wready;
  assign b_fire = bvalid && bready;
  assign start = !cur_active && aq_count != 3'd0;

  function automatic logic [1:0] resp_of(input logic [63:0] a, input logic [7:0] len);
    if (a >= err_lo && a < err_hi) resp_of = 2'b10;               // SLVERR
    else if (a < BASE || a + 64'(len + 1) * B > BASE + 64'(WORDS) * B) resp_of = 2'b11;  // DECERR
    else resp_of = 2'b00;
  endfunction

  integer k;
  always @(posedge clk) begin
    if (!rst_n) begin
      aq_count <= 0;
      aq_rd <= 0;
      aq_wr <= 0;
      bq_count <= 0;
      bq_rd <= 0;
      bq_wr <= 0;
      now <= 0;
      cur_active <= 1'b0;
      cur_addr <= 0;
      cur_beat <= 0;
      cur_resp <= 0;
    end else begin
      now <= now + 1;
      if (aw_fire) begin
        aq_addr[aq_wr] <= awaddr;
        aq_len[aq_wr] <= awlen;
        aq_wr <= aq_wr + 1;
      end
      if (start) begin
        cur_active <= 1'b1;
        cur_addr <= aq_addr[aq_rd];
        cur_beat <= 0;
        cur_resp <= resp_of(aq_addr[aq_rd], aq_len[aq_rd]);
        aq_rd <= aq_rd + 1;
      end
      aq_count <= aq_count + {2'd0, aw_fire} - {2'd0, start};
      if (w_fire) begin
        if (cur_resp == 2'b00)
          for (k = 0; k < B; k = k + 1)
            if (wstrb[k]) mem[(cur_addr - BASE) / B][8*k+:8] <= wdata[8*k+:8];
        cur_addr <= cur_addr + B;
        cur_beat <= cur_beat + 1;
        if (wlast) begin
          cur_active <= 1'b0;
          bq_due[bq_wr] <= now + {24'd0, b_delay} + {28'd0, lfsr[27:24]};
          bq_resp[bq_wr] <= cur_resp;
          bq_wr <= bq_wr + 1;
        end
      end
      if (b_fire) bq_rd <= bq_rd + 1;
      bq_count <= bq_count + {3'd0, w_fire && wlast} - {3'd0, b_fire};
    end
  end
endmodule

// Synchronous first-word-fall-through FIFO: the memory is read into an output register
// (a block-RAM read with enable), so `out_data` is valid while `out_valid`.
// `count` counts every entry, the output register's included.
module fgdr_fifo #(
    parameter int WIDTH = 8,
    parameter int DEPTH_LOG2 = 4
) (
    input  logic                  clk,
    input  logic                  rst_n,
    input  logic                  in_valid,  // push; ignored when full
    input  logic [WIDTH-1:0]      in_data,
    output logic                  full,
    output logic                  out_valid,
    output logic [WIDTH-1:0]      out_data,
    input  logic                  out_ready, // pop when out_valid
    output logic [DEPTH_LOG2:0]   count
);
  localparam int DEPTH = 1 << DEPTH_LOG2;

  logic [WIDTH-1:0]      mem[DEPTH];
  logic [DEPTH_LOG2-1:0] wr_ptr, rd_ptr;
  logic [DEPTH_LOG2:0]   mem_count;
  logic                  push, fetch, pop;

  assign full = count == (DEPTH_LOG2 + 1)'(DEPTH);
  assign push = in_valid && !full;
  assign pop = out_valid && out_ready;
  assign fetch = (mem_count != '0) && (!out_valid || pop);
  assign count = mem_count + {{DEPTH_LOG2{1'b0}}, out_valid};

  always_ff @(posedge clk) begin
    if (push) mem[wr_ptr] <= in_data;
    if (fetch) out_data <= mem[rd_ptr];
  end

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      wr_ptr <= '0;
      rd_ptr <= '0;
      mem_count <= '0;
      out_valid <= 1'b0;
    end else begin
      if (push) wr_ptr <= wr_ptr + 1'b1;
      if (fetch) rd_ptr <= rd_ptr + 1'b1;
      mem_count <= mem_count + {{DEPTH_LOG2{1'b0}}, push} - {{DEPTH_LOG2{1'b0}}, fetch};
      if (fetch) out_valid <= 1'b1;
      else if (pop) out_valid <= 1'b0;
    end
  end
endmodule

// The card's free-running timestamp: nanoseconds since the block's last reset
// (axi_aresetn), advanced every clock by NS_PER_CLK_Q16 / 65536 ns (e.g. 4 ns at
// 250 MHz: 32'h0004_0000).  The frame header's capture timestamp is this value at the
// frame's first beat (docs/card-protocol.md, "The frame in its slot").
module fgdr_timestamp #(
    parameter logic [31:0] NS_PER_CLK_Q16 = 32'h0004_0000
) (
    input  logic        clk,
    input  logic        rst_n,
    output logic [63:0] ns
);
  logic [15:0] frac;
  always_ff @(posedge clk) begin
    if (!rst_n) {ns, frac} <= '0;
    else {ns, frac} <= {ns, frac} + {48'd0, NS_PER_CLK_Q16};
  end
endmodule

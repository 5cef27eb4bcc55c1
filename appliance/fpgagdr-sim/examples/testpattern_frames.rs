//! Writes frames of the simulated card's [`TestPattern`] to standard output, header and
//! payload, one after the other: the bytes the reference RTL's test-pattern source must
//! produce (`hdl/`, compared byte for byte by its testbench).
//!
//! Usage: `testpattern_frames FORMAT WIDTH HEIGHT FIRST_SEQ COUNT`, FORMAT `mono8` or
//! `rgb8`; frames `FIRST_SEQ .. FIRST_SEQ + COUNT`, each `64 + WIDTH × HEIGHT × bytes per
//! pixel` bytes with the capture timestamp 0 (the source's own; the card writes its
//! clock there).

use std::io::Write;

use fpgagdr::PixelFormat;
use fpgagdr_sim::{FrameSource, TestPattern};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [format, width, height, first, count] = args.as_slice() else {
        return Err("usage: testpattern_frames mono8|rgb8 WIDTH HEIGHT FIRST_SEQ COUNT".into());
    };
    let format = match format.as_str() {
        "mono8" => PixelFormat::Mono8,
        "rgb8" => PixelFormat::Rgb8,
        other => return Err(format!("format {other:?} is neither mono8 nor rgb8").into()),
    };
    let mut pattern = TestPattern::new(format, width.parse()?, height.parse()?)?;
    let first: u64 = first.parse()?;
    let count: u64 = count.parse()?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut frame = Vec::new();
    for seq in first..first + count {
        pattern.render(seq, &mut frame);
        out.write_all(&frame)?;
    }
    out.flush()?;
    Ok(())
}

//! CPU preprocessing per frame (`Preprocessor::run`: centre crop, Pillow's antialiased
//! bilinear resize to 224×224, normalisation into NCHW planes), one thread, steady state
//! (the coefficient tables and buffers already sized for the geometry).
//!
//! Frames: 640×480 and 1024×1024 mono8, 1920×1080 RGB8, filled with a pattern that is
//! not flat (`i × 7 mod 251`), so no shortcut for uniform input can hide work.
//!
//! Run: `cargo bench -p fpgagdr-infer --bench preprocess` (about half a minute).

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use fpgagdr::PixelFormat;
use fpgagdr_infer::{FrameView, Preprocessor};

fn preprocess(c: &mut Criterion) {
    let mut group = c.benchmark_group("cpu_preprocess_224");
    for (format, w, h) in [
        (PixelFormat::Mono8, 640u32, 480u32),
        (PixelFormat::Mono8, 1024, 1024),
        (PixelFormat::Rgb8, 1920, 1080),
    ] {
        let stride = w * format.bytes_per_pixel() as u32;
        let pixels: Vec<u8> = (0..(stride * h) as usize)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        let view = FrameView {
            format,
            width: w,
            height: h,
            stride,
            pixels: &pixels,
        };
        let mut pre = Preprocessor::new(224, 224);
        let mut out = vec![0f32; pre.output_len()];
        pre.run(&view, &mut out);
        group.throughput(Throughput::Bytes(pixels.len() as u64));
        group.bench_function(
            BenchmarkId::from_parameter(format!("{w}x{h}_{}", format.as_str())),
            |b| b.iter(|| pre.run(black_box(&view), black_box(&mut out))),
        );
    }
    group.finish();
}

criterion_group!(benches, preprocess);
criterion_main!(benches);

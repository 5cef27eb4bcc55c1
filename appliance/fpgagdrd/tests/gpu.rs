//! GPU tests: the frame ring in CUDA device memory and GPU preprocessing against the CPU
//! reference. On a machine without a CUDA driver (or NVRTC) each test prints why it is
//! skipped and passes; where a driver loads, a misbehaving GPU path fails.
//!
//! On a GPU machine without Rust: build here with `cargo test -p fpgagdrd --test gpu
//! --no-run`, copy the test binary (and `.deps/`) there, and run it (see
//! appliance/scripts/gpu-check.sh).

use std::time::Duration;

use fpgagdr::frame::{FrameHeader, HEADER_LEN};
use fpgagdr::{
    Card, DmaMemory, FrameSource, FrameTrigger, LinkPreset, MemoryKind, PixelFormat, SimCard,
    SimConfig, SimSensor, TestPattern,
};
use fpgagdrd::inference::gpu::{GpuError, GpuPreprocessor, TOLERANCE};
use fpgagdrd::inference::{FrameView, Preprocessor};

/// The GPU preprocessor, or `None` after printing why the test is skipped.
fn gpu(w: usize, h: usize) -> Option<GpuPreprocessor> {
    match GpuPreprocessor::new(w, h) {
        Ok(g) => Some(g),
        Err(GpuError::Unavailable(why)) => {
            eprintln!("skipped: no GPU here ({why})");
            None
        }
        Err(e) => panic!("a CUDA driver loaded but the GPU path failed: {e}"),
    }
}

/// Bytes with no short period, different per seed.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn cpu_tensor(view: &FrameView<'_>, w: usize, h: usize) -> Vec<f32> {
    let mut pre = Preprocessor::new(w, h);
    let mut out = vec![0f32; pre.output_len()];
    pre.run(view, &mut out);
    out
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn gpu_preprocessing_matches_the_cpu_reference() {
    let Some(mut g) = gpu(224, 224) else { return };
    // (format, width, height, row padding in bytes)
    let cases = [
        (PixelFormat::Mono8, 640, 480, 0),
        (PixelFormat::Rgb8, 1920, 1080, 0),
        (PixelFormat::Rgb8, 451, 300, 7),
        (PixelFormat::Mono8, 17, 23, 3),
        (PixelFormat::Rgb8, 224, 224, 0),
    ];
    for (i, (format, width, height, pad)) in cases.into_iter().enumerate() {
        let stride = width * format.bytes_per_pixel() as u32 + pad;
        let pixels = noise((stride * height) as usize, i as u64 + 1);
        let view = FrameView {
            format,
            width,
            height,
            stride,
            pixels: &pixels,
        };
        let cpu = cpu_tensor(&view, 224, 224);
        g.run_host(&view).expect("GPU preprocessing");
        let mut out = vec![0f32; g.output_len()];
        g.tensor_to_host(&mut out).expect("tensor to host");
        let d = max_diff(&cpu, &out);
        assert!(
            d <= TOLERANCE,
            "{width}x{height} {}: GPU differs from CPU by {d}",
            format.as_str()
        );
    }
}

#[test]
fn gpu_preprocessing_refuses_a_frame_larger_than_its_buffer() {
    let Some(mut g) = gpu(8, 8) else { return };
    let pixels = vec![0u8; 100];
    let view = FrameView {
        format: PixelFormat::Rgb8,
        width: 10,
        height: 10,
        stride: 30,
        pixels: &pixels,
    };
    match g.run_host(&view) {
        Err(GpuError::Geometry(m)) => assert!(m.contains("300 bytes"), "{m}"),
        other => panic!("expected a geometry error, got {other:?}"),
    }
}

#[test]
fn frame_ring_entry_in_cuda_memory_is_preprocessed_where_it_lies() {
    let Some(mut g) = gpu(224, 224) else { return };
    let sim = std::sync::Arc::new(SimCard::new(SimConfig {
        preset: LinkPreset::Off,
        ..SimConfig::default()
    }));
    let card = Card::from_backend(sim.clone());
    let (w, h, format) = (640u32, 480u32, PixelFormat::Rgb8);
    let mut sensor = SimSensor::new(
        sim,
        Box::new(TestPattern::new(format, w, h).unwrap()),
        0.0,
        0,
    )
    .expect("sensor");
    let align = card.status().alignment as usize;
    let entry = sensor.max_frame_len().div_ceil(align) * align;
    let mem =
        DmaMemory::for_frames(entry, align, MemoryKind::CudaDevice).expect("frame-ring memory");
    assert_eq!(
        mem.kind(),
        MemoryKind::CudaDevice,
        "a CUDA driver loaded, so the ring is device memory"
    );
    let buf = card.pin(mem).expect("pin");
    for _ in 0..3 {
        let slot = sensor.wait_frame(Duration::from_secs(1)).expect("a frame");
        card.read_c2h(0, &buf, slot.card_addr, slot.len, Duration::from_secs(1))
            .expect("C2H into GPU memory");
        // The same frame, rendered on the host, is the reference.
        let mut host = Vec::new();
        TestPattern::new(format, w, h)
            .unwrap()
            .render(slot.seq, &mut host);
        let header = FrameHeader::parse(&host, host.len()).unwrap();
        let mut back = vec![0u8; host.len()];
        // SAFETY: no C2H into `buf` runs during the copy (this thread issued the last one).
        #[allow(unsafe_code)]
        unsafe { buf.copy_to_host(0, &mut back) }.expect("device to host");
        assert!(
            back == host,
            "frame {} changed on its way through GPU memory",
            slot.seq
        );
        let pixels = buf.region().addr + HEADER_LEN as u64;
        g.run_device(format, w, h, header.stride, pixels, buf.len() - HEADER_LEN)
            .expect("GPU preprocessing");
        let mut out = vec![0f32; g.output_len()];
        g.tensor_to_host(&mut out).unwrap();
        let view = FrameView {
            format,
            width: w,
            height: h,
            stride: header.stride,
            pixels: &host[HEADER_LEN..],
        };
        let d = max_diff(&cpu_tensor(&view, 224, 224), &out);
        assert!(
            d <= TOLERANCE,
            "frame {}: GPU differs from CPU by {d}",
            slot.seq
        );
    }
}

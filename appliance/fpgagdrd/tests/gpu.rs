//! GPU tests: the frame ring in CUDA device memory and GPU preprocessing against the CPU
//! reference. On a machine without a CUDA driver (or NVRTC) each test prints why it is
//! skipped and passes; where a driver loads, a misbehaving GPU path fails.
//!
//! On a GPU machine without Rust: build here with `cargo test -p fpgagdrd --test gpu
//! --no-run`, copy the test binary (and `.deps/`) there, and run it (see
//! appliance/scripts/gpu-check.sh).

use std::time::Duration;

use fpgagdr::frame::{FrameHeader, HEADER_LEN};
use fpgagdr::{Card, DmaMemory, FrameTrigger, MemoryKind, PixelFormat};
use fpgagdr_infer::gpu::{GpuCrc32, GpuError, GpuPreprocessor, TOLERANCE, crc32_chunked};
use fpgagdr_infer::{FrameView, Model, ModelError, Preprocessor, Provider};
use fpgagdr_sim::{FrameSource, LinkPreset, Replay, SimCard, SimConfig, SimSensor, TestPattern};
use fpgagdrd::config::{CardChoice, RawConfig, RingMemory, SourceKind};
use fpgagdrd::metrics::Stage;
use fpgagdrd::pipeline::{Shared, Supervisor, prepare};

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
        // SAFETY: `pixels .. + len − 64` lies in the pinned ring entry `buf`, device
        // memory that lives until the end of the test; no C2H into it runs meanwhile.
        #[allow(unsafe_code)]
        unsafe { g.run_device(format, w, h, header.stride, pixels, buf.len() - HEADER_LEN) }
            .expect("GPU preprocessing");
        let mut crc = GpuCrc32::on_stream(g.stream()).expect("CRC kernels");
        // SAFETY: as above, the payload inside the ring entry.
        #[allow(unsafe_code)]
        unsafe { crc.launch(pixels, header.frame_len() - HEADER_LEN) }.expect("CRC launch");
        assert_eq!(
            crc.result().expect("CRC"),
            header.payload_crc,
            "frame {}: the GPU CRC of the payload in the ring differs from the header's",
            slot.seq
        );
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

#[test]
fn gpu_crc32_equals_the_plain_crc_and_sees_one_flipped_bit() {
    let Some(g) = gpu(8, 8) else { return };
    let mut crc = GpuCrc32::on_stream(g.stream()).expect("CRC kernels");
    // Around the chunk (64 B), block (16 KiB) and 1024-block boundaries, odd tails, and
    // the frame sizes of the benchmarks.
    let lens = [
        1usize,
        63,
        64,
        65,
        16_383,
        16_384,
        16_385,
        307_200,
        1 << 20,
        6_220_800,
        (16 << 20) + 7,
        (40 << 20) + 1,
    ];
    for (i, len) in lens.into_iter().enumerate() {
        let mut data = noise(len, 100 + i as u64);
        let want = crc32fast::hash(&data);
        assert_eq!(crc.of_host(&data).expect("GPU CRC"), want, "{len} bytes");
        assert_eq!(
            crc32_chunked(&data),
            want,
            "{len} bytes, CPU model of the kernels"
        );
        data[len / 3] ^= 0x10;
        assert_ne!(
            crc.of_host(&data).expect("GPU CRC"),
            want,
            "{len} bytes, one bit flipped"
        );
    }
}

/// The service's pipeline, in process: a CUDA frame ring, GPU checksum and
/// preprocessing, a real frame and the real model. Needs `ORT_DYLIB_PATH` and
/// `FPGAGDR_DATA_DIR` (set by appliance/scripts/gpu-check.sh).
#[test]
fn the_pipeline_on_a_cuda_ring_checks_and_preprocesses_frames_on_the_gpu() {
    if gpu(8, 8).is_none() {
        return;
    }
    // Device memory (a discrete GPU's ring) and GPU-mapped page-locked host memory
    // (what an Orin's ring is; here it runs over PCIe).
    for (memory, kind) in [
        (RingMemory::CudaDevice, MemoryKind::CudaDevice),
        (RingMemory::CudaHost, MemoryKind::CudaHost),
    ] {
        let mut config = RawConfig::default();
        config.source.kind = SourceKind::Replay;
        config.source.path = "frames/chelsea.png".into();
        config.source.fps = 60.0;
        config.ring.memory = memory;
        let config = config.check().expect("a valid config");
        let prepared = prepare(
            &config,
            &CardChoice::Sim,
            &fpgagdrd::files::Policy::in_data_dir(),
        )
        .unwrap_or_else(|e| panic!("{e} (set ORT_DYLIB_PATH and FPGAGDR_DATA_DIR)"));
        let shared = std::sync::Arc::new(Shared::default());
        let mut sup = Supervisor::new(shared.clone());
        sup.start(prepared);
        let info = sup.info().expect("info").clone();
        assert_eq!(info.memory, kind);
        assert!(info.preprocess.starts_with("GPU"), "{}", info.preprocess);
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while shared.counters.read().frames_inferred < 30 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(Duration::from_millis(300)); // one more publish
        sup.stop();
        let c = shared.counters.read();
        assert!(
            c.frames_inferred >= 30,
            "{kind:?}: only {} frames inferred: {:?}",
            c.frames_inferred,
            shared.fault()
        );
        assert_eq!(
            c.checksum_errors, 0,
            "{kind:?}: frames failed the GPU CRC check"
        );
        let latest = shared
            .published
            .lock()
            .unwrap()
            .latest
            .clone()
            .expect("a result");
        assert_eq!(
            latest.top5[0].label, "tiger cat",
            "{kind:?}: {:?}",
            latest.top5
        );
        assert!(latest.frame.checksum_ok);
        let totals = shared.totals.lock().unwrap();
        for stage in [Stage::D2h, Stage::Preprocess] {
            let i = Stage::ALL.iter().position(|s| *s == stage).unwrap();
            assert!(
                totals.stages[i].len() >= 30,
                "{kind:?}: {} recorded {} times",
                stage.as_str(),
                totals.stages[i].len()
            );
        }
    }
}

/// ONNX Runtime's CUDA provider reading the tensor where GPU preprocessing left it, with
/// the same answer as the CPU provider on the host copy. Skips with the reason when the
/// loaded ONNX Runtime has no CUDA provider (the CPU-only build that CI fetches).
#[test]
fn the_cuda_provider_reads_the_tensor_in_gpu_memory_and_agrees_with_the_cpu() {
    let Some(mut g) = gpu(224, 224) else { return };
    let data = std::path::PathBuf::from(
        std::env::var_os("FPGAGDR_DATA_DIR").expect("FPGAGDR_DATA_DIR (see gpu-check.sh)"),
    );
    let (model, labels) = (
        data.join("models/efficientnet-lite0.onnx"),
        data.join("models/efficientnet-lite0.labels.txt"),
    );
    let mut on_gpu = match Model::load(&model, &labels, 0, Provider::Cuda) {
        Ok(m) => m,
        Err(ModelError::Provider(why)) => {
            eprintln!("skipped: no GPU inference here ({why})");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert!(on_gpu.takes_device_input(), "{}", on_gpu.provider());
    let mut on_cpu = Model::load(&model, &labels, 0, Provider::Cpu).expect("CPU model");
    let mut replay = Replay::load(&data.join("frames/chelsea.png")).expect("frame");
    let mut frame = Vec::new();
    let header = replay.render(0, &mut frame);
    let view = FrameView {
        format: header.format,
        width: header.width,
        height: header.height,
        stride: header.stride,
        pixels: &frame[HEADER_LEN..header.frame_len()],
    };
    g.run_host(&view).expect("GPU preprocessing");
    let mut host = vec![0f32; g.output_len()];
    g.tensor_to_host(&mut host).expect("tensor to host"); // also synchronises the stream
    let ptr = {
        use cudarc::driver::DevicePtr;
        let (p, _sync) = g.tensor().device_ptr(g.stream());
        p
    };
    let (mut top_gpu, mut top_cpu) = ([(0u32, 0f32); 5], [(0u32, 0f32); 5]);
    // SAFETY: `ptr` is the preprocessor's output tensor (3 × 224 × 224 f32, device 0),
    // its stream synchronised above; nothing runs on it until the call returns.
    #[allow(unsafe_code)]
    unsafe { on_gpu.classify_device(ptr, &mut top_gpu) }.expect("inference on the GPU");
    on_cpu
        .classify(&host, &mut top_cpu)
        .expect("inference on the CPU");
    assert_eq!(on_gpu.label(top_gpu[0].0), "tiger cat", "{top_gpu:?}");
    for (a, b) in top_gpu.iter().zip(&top_cpu) {
        assert_eq!(a.0, b.0, "top-5 order: GPU {top_gpu:?} CPU {top_cpu:?}");
        assert!((a.1 - b.1).abs() < 0.01, "GPU {top_gpu:?} CPU {top_cpu:?}");
    }
}

#[test]
fn cuda_ring_memory_is_aligned_to_the_64_kib_gpu_page_whatever_came_before() {
    if gpu(8, 8).is_none() {
        return;
    }
    // Small allocations first: the driver sub-allocates them at 512 B granularity, which
    // is what a ring entry allocated after an ONNX Runtime session met on the H200.
    let mut keep = Vec::new();
    for i in 0..16usize {
        let m = DmaMemory::cuda(4096 + i * 512, MemoryKind::CudaDevice).expect("CUDA memory");
        assert_eq!(
            m.addr() % (64 << 10),
            0,
            "allocation {i} at {:#x}",
            m.addr()
        );
        keep.push(m);
    }
}

//! GPU tests: the frame ring in CUDA device memory, GPU preprocessing against the CPU
//! reference, the header and CRC checks of a batch on the GPU, and (with the GPU build of
//! ONNX Runtime) the model reading a batch where it lies, fp16, and the TensorRT provider
//! failing for want of its libraries while CUDA runs. On a machine without a CUDA driver
//! (or NVRTC) each test prints why it is skipped and passes; where a driver loads, a
//! misbehaving GPU path fails. Tests that need ONNX Runtime's CUDA provider print why
//! they skip with the CPU-only build.
//!
//! On a GPU machine without Rust: build here with `cargo test -p fpgagdrd --test gpu
//! --no-run`, copy the test binary (and `.deps/`) there, and run it (see
//! appliance/scripts/gpu-check.sh).

use std::path::PathBuf;
use std::time::Duration;

use fpgagdr::frame::{FrameError, FrameHeader, HEADER_LEN};
use fpgagdr::{Card, DmaMemory, FrameTrigger, MemoryKind, PinnedBuffer, PixelFormat};
use fpgagdr_infer::gpu::{GpuCrc32, GpuError, GpuPreprocessor, TOLERANCE, crc32_chunked};
use fpgagdr_infer::{
    FramePrep, FrameView, Model, ModelError, ModelOptions, Precision, Preprocessor, Provider,
    Pushed, Ran, TOP_K, Top,
};
use fpgagdr_sim::{FrameSource, LinkPreset, Replay, SimCard, SimConfig, SimSensor, TestPattern};
use fpgagdrd::cards::CardChoice;
use fpgagdrd::config::{RawConfig, RingMemory, SourceKind};
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
        (PixelFormat::Mono8, 1024, 1024, 0),
        (PixelFormat::Rgb8, 3840, 2160, 0),
        (PixelFormat::Mono8, 320, 240, 0),
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
        eprintln!(
            "{width}x{height} {}: GPU - CPU max |diff| {d}",
            format.as_str()
        );
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
        // The sensor stamps the capture time, which a render leaves 0.
        let got = FrameHeader::parse(&back, back.len()).expect("a header");
        assert_eq!(
            FrameHeader {
                timestamp_ns: 0,
                ..got
            },
            header
        );
        assert!(
            back[HEADER_LEN..] == host[HEADER_LEN..],
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
            &CardChoice::sim(),
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
        let recorded = |stage: Stage| {
            let i = Stage::ALL.iter().position(|s| *s == stage).unwrap();
            totals.stages[i].len()
        };
        assert!(recorded(Stage::Preprocess) >= 30, "{kind:?}: preprocess");
        // No device-to-host copy per frame: with the model on the GPU there is none at
        // all; with the model on the CPU, the batch's tensors come back once.
        if info.inference.starts_with("ONNX Runtime CPU") {
            assert!(recorded(Stage::D2h) >= 30, "{kind:?}: {}", info.inference);
        } else {
            assert_eq!(recorded(Stage::D2h), 0, "{kind:?}: {}", info.inference);
        }
    }
}

fn data_dir() -> PathBuf {
    PathBuf::from(
        std::env::var_os("FPGAGDR_DATA_DIR").expect("FPGAGDR_DATA_DIR (see gpu-check.sh)"),
    )
}

fn model_paths() -> (PathBuf, PathBuf) {
    let data = data_dir();
    (
        data.join("models/efficientnet-lite0.onnx"),
        data.join("models/efficientnet-lite0.labels.txt"),
    )
}

/// The default model on ONNX Runtime's CUDA provider, reading its input on `g`'s
/// stream, or `None` after printing why (the CPU-only ONNX Runtime).
fn cuda_model(g: &GpuPreprocessor, precision: Precision, max_batch: usize) -> Option<Model> {
    let (model, labels) = model_paths();
    let options = ModelOptions {
        provider: Provider::Cuda,
        precision,
        max_batch,
        batch_limit: max_batch,
        stream: Some(g.stream().clone()),
        ..ModelOptions::default()
    };
    match Model::load(&model, &labels, &options) {
        Ok(m) => Some(m),
        Err(ModelError::Provider(why)) => {
            eprintln!("skipped: no GPU inference here ({why})");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

fn cpu_model(max_batch: usize) -> Model {
    let (model, labels) = model_paths();
    let options = ModelOptions {
        provider: Provider::Cpu,
        max_batch,
        batch_limit: max_batch,
        ..ModelOptions::default()
    };
    Model::load(&model, &labels, &options).expect("CPU model")
}

fn chelsea() -> (FrameHeader, Vec<u8>) {
    let mut replay = Replay::load(&data_dir().join("frames/chelsea.png")).expect("frame");
    let mut frame = Vec::new();
    let header = replay.render(0, &mut frame);
    (header, frame)
}

fn device_ptr(g: &GpuPreprocessor) -> u64 {
    use cudarc::driver::DevicePtr;
    let (p, _sync) = g.tensor().device_ptr(g.stream());
    p
}

/// ONNX Runtime's CUDA provider reading the tensor where GPU preprocessing left it, on
/// the same stream, with the same answer as the CPU provider on the host copy. Skips
/// with the reason when the loaded ONNX Runtime has no CUDA provider (the CPU-only build
/// that CI fetches).
#[test]
fn the_cuda_provider_reads_the_tensor_in_gpu_memory_and_agrees_with_the_cpu() {
    let Some(mut g) = gpu(224, 224) else { return };
    let Some(mut on_gpu) = cuda_model(&g, Precision::Fp32, 1) else {
        return;
    };
    assert!(on_gpu.takes_device_input(), "{}", on_gpu.provider());
    let mut on_cpu = cpu_model(1);
    let (header, frame) = chelsea();
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
    let (mut top_gpu, mut top_cpu) = ([[(0u32, 0f32); TOP_K]; 1], [(0u32, 0f32); TOP_K]);
    // SAFETY: the preprocessor's output tensor (3 × 224 × 224 f32, device 0), written on
    // the model's stream; the preprocessor outlives the model's use of it.
    #[allow(unsafe_code)]
    unsafe { on_gpu.classify_batch_device(device_ptr(&g), 1, &mut top_gpu) }
        .expect("inference on the GPU");
    let top_gpu = top_gpu[0];
    on_cpu
        .classify(&host, &mut top_cpu)
        .expect("inference on the CPU");
    assert_eq!(on_gpu.label(top_gpu[0].0), "tiger cat", "{top_gpu:?}");
    for (a, b) in top_gpu.iter().zip(&top_cpu) {
        assert_eq!(a.0, b.0, "top-5 order: GPU {top_gpu:?} CPU {top_cpu:?}");
        assert!((a.1 - b.1).abs() < 0.01, "GPU {top_gpu:?} CPU {top_cpu:?}");
    }
}

/// A batch of 8 different frames on the GPU, bound where preprocessing left it (with a
/// CUDA graph per batch size), gives what 8 single runs give, and what the CPU gives.
#[test]
fn a_batch_on_the_gpu_gives_the_outputs_of_single_runs() {
    let (n, max) = (5usize, 8usize);
    let Some(probe) = gpu(224, 224) else { return };
    let stream = probe.stream().clone();
    let mut g = GpuPreprocessor::on_stream(&stream, 224, 224, max, 64 << 20).expect("kernels");
    let Some(mut model) = cuda_model(&g, Precision::Fp32, max) else {
        return;
    };
    assert_eq!(model.max_batch(), max, "{}", model.provider());
    // n tensors side by side: preprocess each frame into slot 0 and move it to slot i.
    let mut host = vec![0f32; n * g.output_len()];
    let chw = g.output_len();
    for i in 0..n {
        let (w, h) = (300 + 131 * i as u32, 200 + 77 * i as u32);
        let format = if i % 2 == 0 {
            PixelFormat::Rgb8
        } else {
            PixelFormat::Mono8
        };
        let stride = w * format.bytes_per_pixel() as u32;
        let px = noise((stride * h) as usize, 40 + i as u64);
        let view = FrameView {
            format,
            width: w,
            height: h,
            stride,
            pixels: &px,
        };
        g.run_host(&view).expect("preprocess");
        g.tensor_to_host(&mut host[i * chw..(i + 1) * chw])
            .expect("to host");
    }
    let mut dev = stream.alloc_zeros::<f32>(max * chw).expect("batch tensor");
    stream
        .memcpy_htod(&host, &mut dev.slice_mut(..n * chw))
        .expect("upload");
    stream.synchronize().expect("sync");
    let addr = {
        use cudarc::driver::DevicePtr;
        let (p, _s) = dev.device_ptr(&stream);
        p
    };
    let mut together = vec![[(0u32, 0f32); TOP_K]; n];
    // SAFETY: `dev` holds max ≥ n tensors in device memory on the model's stream and
    // outlives every use of the model below.
    #[allow(unsafe_code)]
    unsafe { model.warm_up_device(addr) }.expect("warm-up");
    #[allow(unsafe_code)]
    // SAFETY: as above.
    unsafe { model.classify_batch_device(addr, n, &mut together) }.expect("a batch");
    let mut cpu = cpu_model(1);
    for i in 0..n {
        let mut alone = [[(0u32, 0f32); TOP_K]; 1];
        let mut one = stream.alloc_zeros::<f32>(max * chw).expect("one tensor");
        stream
            .memcpy_htod(&host[i * chw..(i + 1) * chw], &mut one.slice_mut(..chw))
            .expect("upload");
        stream.synchronize().expect("sync");
        let a = {
            use cudarc::driver::DevicePtr;
            let (p, _s) = one.device_ptr(&stream);
            p
        };
        // SAFETY: as above, `one` lives until the model is next given another address,
        // which re-binds (the bindings to `one` are dropped then).
        #[allow(unsafe_code)]
        unsafe { model.classify_batch_device(a, 1, &mut alone) }.expect("one frame");
        let mut on_cpu: Top = [(0, 0.0); TOP_K];
        cpu.classify(&host[i * chw..(i + 1) * chw], &mut on_cpu)
            .expect("CPU");
        for ((b, s), c) in together[i].iter().zip(&alone[0]).zip(&on_cpu) {
            assert_eq!(
                b.0, s.0,
                "frame {i}: batch {:?} single {:?}",
                together[i], alone[0]
            );
            assert!(
                (b.1 - s.1).abs() < 1e-3,
                "frame {i}: batch {:?} single {:?}",
                together[i],
                alone[0]
            );
            assert!(
                (b.1 - c.1).abs() < 0.01,
                "frame {i}: GPU {:?} CPU {on_cpu:?}",
                together[i]
            );
        }
        drop(one);
    }
}

/// `precision: fp16` on the CUDA provider loads the model's fp16 copy and gives fp32's
/// top-5 within 0.01 on a real photograph.
#[test]
fn fp16_on_the_cuda_provider_agrees_with_fp32() {
    let Some(mut g) = gpu(224, 224) else { return };
    let Some(mut full) = cuda_model(&g, Precision::Fp32, 1) else {
        return;
    };
    let mut half = cuda_model(&g, Precision::Fp16, 1).expect("the fp16 copy loads");
    assert!(half.provider().contains("fp16"), "{}", half.provider());
    let (header, frame) = chelsea();
    let view = FrameView {
        format: header.format,
        width: header.width,
        height: header.height,
        stride: header.stride,
        pixels: &frame[HEADER_LEN..header.frame_len()],
    };
    g.run_host(&view).expect("GPU preprocessing");
    let (mut a, mut b) = ([[(0u32, 0f32); TOP_K]; 1], [[(0u32, 0f32); TOP_K]; 1]);
    // SAFETY: the preprocessor's tensor on the models' stream; it outlives both models'
    // use of it.
    #[allow(unsafe_code)]
    unsafe {
        full.classify_batch_device(device_ptr(&g), 1, &mut a)
            .expect("fp32");
        half.classify_batch_device(device_ptr(&g), 1, &mut b)
            .expect("fp16");
    }
    assert_eq!(a[0][0].0, b[0][0].0, "fp32 {a:?} fp16 {b:?}");
    for (x, y) in a[0].iter().zip(&b[0]) {
        assert!((x.1 - y.1).abs() < 0.01, "fp32 {a:?} fp16 {b:?}");
    }
}

/// The one test of the TensorRT path that can run here (TensorRT is written, not
/// run: README, "What has run where"): with `auto`, the GPU
/// build of ONNX Runtime tries its TensorRT provider first; TensorRT's libraries are not
/// on this machine, so loading it fails, status says so (naming the missing library),
/// and CUDA runs.
#[test]
fn tensorrt_fails_without_its_libraries_status_says_why_and_cuda_runs() {
    let Some(g) = gpu(224, 224) else { return };
    if cuda_model(&g, Precision::Fp32, 1).is_none() {
        return;
    }
    let (model, labels) = model_paths();
    let cache = tempfile::tempdir().expect("cache dir");
    let m = Model::load(
        &model,
        &labels,
        &ModelOptions {
            provider: Provider::Auto,
            max_batch: 1,
            batch_limit: 1,
            stream: Some(g.stream().clone()),
            tensorrt: fpgagdr_infer::TensorRtOptions {
                cache_dir: cache.path().to_path_buf(),
                dla_core: None,
            },
            ..ModelOptions::default()
        },
    )
    .expect("auto loads");
    eprintln!("status: {}", m.provider());
    assert_eq!(m.ran(), Ran::Cuda, "{}", m.provider());
    assert!(
        m.provider().contains("TensorRT not used:"),
        "{}",
        m.provider()
    );
    assert!(m.provider().contains("libnvinfer"), "{}", m.provider());
    // Asking for TensorRT alone is refused with the same reason.
    match Model::load(
        &model,
        &labels,
        &ModelOptions {
            provider: Provider::Tensorrt,
            batch_limit: 1,
            stream: Some(g.stream().clone()),
            tensorrt: fpgagdr_infer::TensorRtOptions {
                cache_dir: cache.path().to_path_buf(),
                dla_core: None,
            },
            ..ModelOptions::default()
        },
    ) {
        Err(ModelError::Provider(why)) => assert!(why.contains("libnvinfer"), "{why}"),
        other => panic!("TensorRT without its libraries: {other:?}"),
    }
}

/// Writes `frame` into card memory and moves it into `buf` by C2H (the real path).
fn into_ring(sim: &SimCard, card: &Card, buf: &PinnedBuffer, frame: &[u8]) {
    sim.fpga_write(0, frame).expect("card memory");
    card.read_c2h(0, buf, 0, frame.len() as u64, Duration::from_secs(1))
        .expect("C2H into GPU memory");
}

/// The GPU checks each frame's header and payload CRC in the ring (no host copy per
/// frame) and preprocesses the batch; a damaged payload and a damaged header are
/// rejected with their reasons, the good frames classified as the CPU path classifies
/// them.
#[test]
fn a_batch_in_gpu_memory_is_checked_on_the_gpu_and_bad_frames_are_rejected() {
    if gpu(8, 8).is_none() {
        return;
    }
    let sim = std::sync::Arc::new(SimCard::new(SimConfig {
        preset: LinkPreset::Off,
        ..SimConfig::default()
    }));
    let card = Card::from_backend(sim.clone());
    let align = card.status().alignment as usize;
    let (header, good) = chelsea();
    let entry = good.len().div_ceil(align) * align;
    let bufs: Vec<PinnedBuffer> = (0..5)
        .map(|_| {
            let m = DmaMemory::for_frames(entry, align, MemoryKind::CudaDevice).expect("memory");
            card.pin(m).expect("pin")
        })
        .collect();
    let mut bad_payload = good.clone();
    bad_payload[HEADER_LEN + 1000] ^= 0x04;
    let mut bad_magic = good.clone();
    bad_magic[0] = b'X';
    let frames = [&good, &good, &bad_payload, &bad_magic, &good];
    for (buf, f) in bufs.iter().zip(frames) {
        into_ring(&sim, &card, buf, f);
    }
    let mut model = cpu_model(8);
    let (mut prep, how) = FramePrep::new(MemoryKind::CudaDevice, entry, &model);
    assert!(how.starts_with("GPU"), "{how}");
    for buf in &bufs {
        // SAFETY: nothing writes the entries (this thread did the last C2H) until the
        // end of the test.
        #[allow(unsafe_code)]
        let pushed = unsafe { prep.push(buf, good.len(), true) }.expect("push");
        assert_eq!(pushed, Pushed::Pending);
    }
    let (outcomes, _) = prep.finish(&mut model, true).expect("the batch");
    assert_eq!(outcomes.len(), 5);
    let mut expect: Top = [(0, 0.0); TOP_K];
    let mut pre = Preprocessor::new(224, 224);
    let mut t = vec![0f32; pre.output_len()];
    pre.run(
        &FrameView {
            format: header.format,
            width: header.width,
            height: header.height,
            stride: header.stride,
            pixels: &good[HEADER_LEN..],
        },
        &mut t,
    );
    model.classify(&t, &mut expect).expect("CPU path");
    for i in [0, 1, 4] {
        let o = &outcomes[i];
        assert_eq!(o.header.as_ref().expect("a good frame").seq, header.seq);
        assert_eq!(
            o.top[0].0, expect[0].0,
            "frame {i}: {:?} vs {expect:?}",
            o.top
        );
        assert!(
            (o.top[0].1 - expect[0].1).abs() < 1e-4,
            "frame {i}: {:?} vs {expect:?}",
            o.top
        );
        assert!(
            o.d2h_ns.is_some(),
            "the tensors came back for the CPU model"
        );
    }
    assert!(
        matches!(outcomes[2].header, Err(FrameError::PayloadCrc { .. })),
        "{:?}",
        outcomes[2].header
    );
    assert!(
        matches!(outcomes[3].header, Err(FrameError::BadMagic { .. })),
        "{:?}",
        outcomes[3].header
    );
}

/// The inference stage alone on a full ring of 1 MiB frames in GPU memory runs full
/// batches, checks every frame and damages none.
#[test]
fn the_inference_stage_runs_full_batches_from_a_full_ring() {
    if gpu(8, 8).is_none() {
        return;
    }
    let mut config = RawConfig::default();
    config.source.kind = SourceKind::TestPattern;
    config.source.fps = 0.0;
    config.card.sim_link = LinkPreset::Off;
    config.ring.memory = RingMemory::CudaDevice;
    config.ring.entries = 16;
    config.ring.when_full = fpgagdr::WhenFull::Wait;
    config.inference.max_batch = 8;
    let config = config.check().expect("a valid config");
    let prepared = prepare(
        &config,
        &CardChoice::sim(),
        &fpgagdrd::files::Policy::in_data_dir(),
    )
    .expect("prepare");
    let shared = std::sync::Arc::new(Shared::default());
    let mut sup = Supervisor::new(shared.clone());
    sup.start_inference_only(prepared);
    let info = sup.info().expect("info").clone();
    assert_eq!(info.max_batch, 8, "{}", info.inference);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while shared.counters.read().frames_inferred < 200 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    sup.stop();
    let c = shared.counters.read();
    assert!(c.frames_inferred >= 200, "{c:?} {:?}", shared.fault());
    assert_eq!(c.checksum_errors, 0, "{c:?}");
    // A full ring: nearly every run is a full batch.
    assert!(
        c.frames_inferred as f64 / c.batches_run as f64 > 6.0,
        "mean batch {}: {c:?}",
        c.frames_inferred as f64 / c.batches_run as f64
    );
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

/// The softmax top-5 computed where the logits lie is the host's: the same classes in
/// the same order (ties to the lowest class) and the same probabilities to within
/// rounding.
#[test]
fn the_top5_on_the_gpu_is_the_softmax_top5_of_the_host() {
    use fpgagdr_infer::gpu::{GpuTopK, TOPK_K};
    let Some(ctx) = fpgagdr::cuda_context() else {
        eprintln!("skipped: no CUDA driver");
        return;
    };
    let stream = ctx.new_stream().expect("stream");
    let mut topk = match GpuTopK::on_stream(&stream, 8) {
        Ok(t) => t,
        Err(GpuError::Unavailable(why)) => {
            eprintln!("skipped: {why}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let classes = 1000;
    let mut logits: Vec<f32> = noise(8 * classes, 3)
        .iter()
        .map(|&b| (b as f32 - 128.0) / 16.0)
        .collect();
    // Row 1: ties at the top (the lowest class first); row 2: one class far ahead.
    for c in [7, 300, 999] {
        logits[classes + c] = 50.0;
    }
    logits[2 * classes + 5] = 90.0;
    let dev = stream.clone_htod(&logits).expect("logits");
    let (addr, _sync) = {
        use cudarc::driver::DevicePtr;
        dev.device_ptr(&stream)
    };
    // SAFETY: `dev` holds 8 × 1000 floats written by the copy queued on this stream; it
    // lives until the end of the test, after the stream is synchronised.
    #[allow(unsafe_code)]
    unsafe { topk.launch(addr, 8, classes) }.expect("launch");
    stream.synchronize().expect("synchronize");
    for row in 0..8 {
        let l = &logits[row * classes..(row + 1) * classes];
        let max = l.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
        let sum: f64 = l.iter().map(|&v| (v as f64 - max).exp()).sum();
        let mut order: Vec<usize> = (0..classes).collect();
        order.sort_by(|&a, &b| l[b].total_cmp(&l[a]).then(a.cmp(&b)));
        let got = topk.read(row).expect("read");
        for k in 0..TOPK_K {
            let want = ((l[order[k]] as f64 - max).exp() / sum) as f32;
            assert_eq!(got[k].0 as usize, order[k], "row {row} rank {k}: {got:?}");
            assert!(
                (got[k].1 - want).abs() <= 1e-6 * want.max(1e-3),
                "row {row} rank {k}: {} vs {want}",
                got[k].1
            );
        }
    }
    assert_eq!(topk.read(1).unwrap().map(|t| t.0)[..3], [7, 300, 999]);
}

/// Batches queued ahead (check and preprocessing on a second stream beside the model)
/// give exactly the outcomes of the same batches run one at a time, rejected frames
/// included.
#[test]
fn batches_queued_ahead_give_the_outcomes_of_batches_run_one_at_a_time() {
    let Some(g) = gpu(224, 224) else { return };
    let Some(mut model) = cuda_model(&g, Precision::Fp32, 8) else {
        return;
    };
    let sim = std::sync::Arc::new(SimCard::new(SimConfig {
        preset: LinkPreset::Off,
        ..SimConfig::default()
    }));
    let card = Card::from_backend(sim.clone());
    let align = card.status().alignment as usize;
    let (_, good) = chelsea();
    let entry = good.len().div_ceil(align) * align;
    let mut bad_payload = good.clone();
    bad_payload[HEADER_LEN + 77] ^= 0x10;
    let mut other = Vec::new();
    let pattern_header = TestPattern::new(PixelFormat::Rgb8, 300, 200)
        .unwrap()
        .render(9, &mut other);
    let frames = [&good, &bad_payload, &other, &good, &other, &good];
    let bufs: Vec<PinnedBuffer> = frames
        .iter()
        .map(|f| {
            let m = DmaMemory::for_frames(entry, align, MemoryKind::CudaDevice).expect("memory");
            let b = card.pin(m).expect("pin");
            into_ring(&sim, &card, &b, f);
            b
        })
        .collect();
    let (mut prep, _) = FramePrep::new(MemoryKind::CudaDevice, entry, &model);
    prep.warm_up(&mut model).expect("warm-up");
    assert!(prep.queues_ahead(&model), "{}", model.provider());
    let push = |prep: &mut FramePrep, range: std::ops::Range<usize>| {
        for i in range {
            // SAFETY: nothing writes the entries after `into_ring` above.
            #[allow(unsafe_code)]
            unsafe { prep.push(&bufs[i], frames[i].len(), true) }.expect("push");
        }
    };
    let summary = |outcomes: &[fpgagdr_infer::FrameOutcome]| -> Vec<String> {
        outcomes
            .iter()
            .map(|o| match &o.header {
                Ok(h) => format!("{} {:?}", h.seq, o.top.map(|t| (t.0, (t.1 * 1e5).round()))),
                Err(e) => e.to_string(),
            })
            .collect()
    };
    let mut one_at_a_time = Vec::new();
    for range in [0..4, 4..6] {
        push(&mut prep, range);
        one_at_a_time.extend(summary(prep.finish(&mut model, true).expect("finish").0));
    }
    let mut ahead = Vec::new();
    push(&mut prep, 0..4);
    prep.submit(&mut model, true).expect("submit");
    push(&mut prep, 4..6);
    prep.submit(&mut model, true).expect("submit");
    assert_eq!(prep.in_flight(), 2);
    while let Some(done) = prep.collect(&mut model) {
        ahead.extend(summary(done.expect("collect").0));
    }
    assert_eq!(ahead, one_at_a_time);
    assert!(
        one_at_a_time[1].contains("frame-checksum"),
        "{one_at_a_time:?}"
    );
    assert!(one_at_a_time[2].starts_with(&format!("{} ", pattern_header.seq)));
}

/// Defect: after a config change restarted the pipeline, status gave the model 2 MiB of
/// GPU memory where its first start had 472 MiB (H100, fp32, max batch 8): the new
/// model's share was measured from the device's use before it loaded, which still held
/// the replaced run's model and ring, and those were freed before the new warm-up
/// ended. The share after a restart must be the new model's own.
#[test]
fn the_model_s_gpu_memory_after_a_restart_is_its_own() {
    if gpu(8, 8).is_none() {
        return;
    }
    let mut config = RawConfig::default();
    config.source.kind = SourceKind::TestPattern;
    config.source.fps = 60.0;
    config.ring.memory = RingMemory::CudaDevice;
    config.ring.entries = 16;
    config.inference.max_batch = 8;
    let config = config.check().expect("a valid config");
    let policy = fpgagdrd::files::Policy::in_data_dir();
    let shared = std::sync::Arc::new(Shared::default());
    let mut sup = Supervisor::new(shared.clone());
    let mut model_bytes = Vec::new();
    for run in 0..2 {
        // The second start replaces the first, as a config change does.
        let prepared = prepare(&config, &CardChoice::sim(), &policy).expect("prepare");
        sup.start(prepared);
        let info = sup.info().expect("info");
        if !info.inference.starts_with("ONNX Runtime CUDA") {
            println!(
                "skipped: the model runs on the CPU here ({})",
                info.inference
            );
            return;
        }
        let gpu = info.gpu_memory.expect("GPU memory in status");
        let bytes = gpu.model_bytes.expect("measured after the warm-up");
        println!("run {run}: model {bytes} B, ring {} B", gpu.ring_bytes);
        model_bytes.push(bytes);
    }
    sup.stop();
    let (first, second) = (model_bytes[0], model_bytes[1]);
    assert!(first > 16 << 20, "the first start's model: {first} B");
    assert!(
        second >= first / 2,
        "after the restart the model has {second} B, at its first start {first} B"
    );
}

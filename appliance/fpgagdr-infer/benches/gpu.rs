//! GPU measurements (issue: the frame path in real GPU memory), timed with CUDA events:
//!
//! 1. the host-to-device hop that GPUDirect removes, per transfer, from pinned
//!    (`cuMemHostAlloc`) and from pageable host memory, at 4 KiB … 8 MiB;
//! 2. GPU preprocessing per frame (kernel time: crop and Pillow's antialiased bilinear
//!    resize to 224×224) at 640×480 and 1024×1024 mono8, 1920×1080 and 3840×2160 RGB8,
//!    with the CPU reference's time beside it;
//! 3. the frame payload's CRC-32 on the GPU (both kernels, CUDA events) beside
//!    `crc32fast` on one CPU core, at the payload sizes of those frames and 1 MiB.
//!
//! Prints Markdown tables. Without a CUDA driver it prints why and exits 0.
//!
//! ```text
//! cargo bench -p fpgagdrd --bench gpu                       # on a machine with a GPU
//! cargo bench -p fpgagdrd --bench gpu --no-run              # build here, run the binary there
//! ```

use std::time::Instant;

use cudarc::driver::{CudaSlice, sys};
use fpgagdr::PixelFormat;
use fpgagdr_infer::gpu::{EventTimer, GpuCrc32, GpuError, GpuPreprocessor};
use fpgagdr_infer::{FrameView, Preprocessor};

const SIZES_KIB: [usize; 6] = [4, 64, 512, 1024, 4096, 8192];
const ITERS: usize = 200;

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("gpu: bench");
        return;
    }
    let Some(ctx) = fpgagdr::cuda_context() else {
        println!("skipped: no CUDA driver here ({:?})", fpgagdr::gpu_memory());
        return;
    };
    println!("device: {}\n", ctx.name().unwrap_or_default());
    let stream = ctx.new_stream().expect("stream");
    let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
    let (start, end) = (
        ctx.new_event(timing).unwrap(),
        ctx.new_event(timing).unwrap(),
    );

    println!("## Host-to-device copy per transfer ({ITERS} runs each, CUDA events)\n");
    println!(
        "| size | pinned mean µs | pinned p50 / p99 µs | pinned GB/s | pageable mean µs | pageable p50 / p99 µs | pageable GB/s |"
    );
    println!("|---|---|---|---|---|---|---|");
    for kib in SIZES_KIB {
        let n = kib * 1024;
        let mut dst: CudaSlice<u8> = stream.alloc_zeros(n).unwrap();
        #[allow(unsafe_code)]
        // SAFETY: the pinned buffer is fully written below before it is read.
        let mut pinned = unsafe { ctx.alloc_pinned::<u8>(n) }.expect("pinned host memory");
        pinned.as_mut_slice().unwrap().fill(0x5a);
        let pageable = vec![0xa5u8; n];
        let mut measure = |from_pinned: bool| {
            let mut us: Vec<f64> = (0..ITERS + 10)
                .map(|_| {
                    start.record(&stream).unwrap();
                    if from_pinned {
                        stream.memcpy_htod(&pinned, &mut dst).unwrap();
                    } else {
                        stream.memcpy_htod(&pageable, &mut dst).unwrap();
                    }
                    end.record(&stream).unwrap();
                    start.elapsed_ms(&end).unwrap() as f64 * 1000.0
                })
                .skip(10) // warm-up
                .collect();
            us.sort_by(f64::total_cmp);
            let mean = us.iter().sum::<f64>() / us.len() as f64;
            (
                mean,
                quantile(&us, 0.5),
                quantile(&us, 0.99),
                n as f64 / (mean * 1e-6) / 1e9,
            )
        };
        let (pm, p50, p99, pg) = measure(true);
        let (qm, q50, q99, qg) = measure(false);
        println!(
            "| {kib} KiB | {pm:.1} | {p50:.1} / {p99:.1} | {pg:.2} | {qm:.1} | {q50:.1} / {q99:.1} | {qg:.2} |"
        );
    }

    println!("\n## Preprocessing per frame to a 224×224 NCHW tensor ({ITERS} runs each)\n");
    let mut g = match GpuPreprocessor::new(224, 224) {
        Ok(g) => g,
        Err(GpuError::Unavailable(why)) => {
            println!("skipped: {why}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    println!("| frame | GPU kernel p50 / p99 / max µs | CPU reference p50 µs (1 thread) |");
    println!("|---|---|---|");
    for (format, w, h) in [
        (PixelFormat::Mono8, 640u32, 480u32),
        (PixelFormat::Mono8, 1024, 1024),
        (PixelFormat::Rgb8, 1920, 1080),
        (PixelFormat::Rgb8, 3840, 2160),
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
        // The frame goes to the device once; the kernel then runs where it lies.
        g.run_host(&view).unwrap();
        let mut gpu_us: Vec<f64> = (0..ITERS)
            .map(|_| g.run_again().unwrap().kernel_us)
            .collect();
        gpu_us.sort_by(f64::total_cmp);
        let mut pre = Preprocessor::new(224, 224);
        let mut out = vec![0f32; pre.output_len()];
        let mut cpu_us: Vec<f64> = (0..ITERS / 4)
            .map(|_| {
                let t = Instant::now();
                pre.run(&view, &mut out);
                t.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        cpu_us.sort_by(f64::total_cmp);
        println!(
            "| {w}×{h} {} | {:.1} / {:.1} / {:.1} | {:.0} |",
            format.as_str(),
            quantile(&gpu_us, 0.5),
            quantile(&gpu_us, 0.99),
            gpu_us[gpu_us.len() - 1],
            quantile(&cpu_us, 0.5)
        );
    }

    println!("\n## Payload CRC-32 on the GPU ({ITERS} runs each)\n");
    let mut crc = GpuCrc32::on_stream(g.stream()).expect("CRC kernels");
    let timer = EventTimer::new(g.kernels()).expect("events");
    println!("| payload | GPU p50 / p99 / max µs | CPU crc32fast p50 µs (1 core) |");
    println!("|---|---|---|");
    for (name, len) in [
        ("640×480 mono8", 640 * 480),
        ("1 MiB", 1 << 20),
        ("1920×1080 RGB8", 1920 * 1080 * 3),
    ] {
        let data: Vec<u8> = (0..len).map(|i| (i * 13 % 251) as u8).collect();
        let want = crc32fast::hash(&data);
        assert_eq!(crc.of_host(&data).unwrap(), want, "GPU CRC of {name}");
        let mut dev = g.stream().clone_htod(&data).expect("copy to device");
        let ptr = {
            use cudarc::driver::DevicePtrMut;
            let (p, _sync) = dev.device_ptr_mut(g.stream());
            p
        };
        let mut gpu_us: Vec<f64> = (0..ITERS)
            .map(|_| {
                timer.start(g.stream()).unwrap();
                // SAFETY: `ptr .. ptr + len` is `dev`, alive and unwritten until the end
                // of this loop; `result` waits for the kernels.
                #[allow(unsafe_code)]
                unsafe { crc.launch(ptr, len) }.unwrap();
                timer.stop(g.stream()).unwrap();
                assert_eq!(crc.result().unwrap(), want);
                timer.elapsed_us().unwrap()
            })
            .collect();
        gpu_us.sort_by(f64::total_cmp);
        let mut cpu_us: Vec<f64> = (0..ITERS)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(crc32fast::hash(std::hint::black_box(&data)));
                t.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        cpu_us.sort_by(f64::total_cmp);
        println!(
            "| {name} ({len} B) | {:.1} / {:.1} / {:.1} | {:.0} |",
            quantile(&gpu_us, 0.5),
            quantile(&gpu_us, 0.99),
            gpu_us[gpu_us.len() - 1],
            quantile(&cpu_us, 0.5)
        );
    }
}

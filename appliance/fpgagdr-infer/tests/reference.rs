//! The model and the preprocessing against their references, with the real model on
//! ONNX Runtime's CPU provider:
//!
//! * a batch of N frames gives the outputs of N single runs;
//! * a model whose batch dimension is fixed at 1 (a user's model exported without
//!   dynamic axes) still runs, one frame at a time;
//! * the CPU preprocessing equals Pillow's (`models/verify_model.py`, the reference the
//!   model was verified with) within one grey level, and every top-5 score within 0.01,
//!   for frames from 320×240 to 3840×2160, mono and RGB: mosaics of the CC0 /
//!   public-domain photographs `fetch-deps.sh` fetches, at their own resolution, so the
//!   frames have a real photograph's detail at every size. Pillow runs in a venv that
//!   `appliance/scripts/resize-reference.sh` installs from PyPI.
//!
//! Needs `ORT_DYLIB_PATH` and `FPGAGDR_DATA_DIR` (defaults: the repository's `.deps/`,
//! filled by `appliance/scripts/fetch-deps.sh`).

use std::path::{Path, PathBuf};
use std::process::Command;

use fpgagdr::PixelFormat;
use fpgagdr_infer::{
    FrameView, Model, ModelError, ModelOptions, Preprocessor, Provider, TOP_K, Top,
};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn data_dir() -> PathBuf {
    let dir = std::env::var_os("FPGAGDR_DATA_DIR")
        .map_or_else(|| repo().join(".deps/share"), PathBuf::from);
    assert!(
        std::env::var_os("ORT_DYLIB_PATH").is_some(),
        "set ORT_DYLIB_PATH to ONNX Runtime (appliance/scripts/fetch-deps.sh prints it)"
    );
    assert!(
        dir.join("models/efficientnet-lite0.onnx").is_file(),
        "no model in {}: run appliance/scripts/fetch-deps.sh",
        dir.display()
    );
    dir
}

fn default_model(max_batch: usize) -> Model {
    let d = data_dir();
    Model::load(
        &d.join("models/efficientnet-lite0.onnx"),
        &d.join("models/efficientnet-lite0.labels.txt"),
        &ModelOptions {
            provider: Provider::Cpu,
            max_batch,
            batch_limit: max_batch,
            ..ModelOptions::default()
        },
    )
    .expect("the default model loads")
}

/// An 8-bit image: (width, height, channels, pixels).
struct Image {
    w: u32,
    h: u32,
    c: u32,
    px: Vec<u8>,
}

/// Reads a PNG the fetch script brought (8-bit grey or RGB).
fn photo(name: &str) -> Image {
    let img = image::open(data_dir().join("frames").join(name)).expect("a photograph");
    let (w, h) = (img.width(), img.height());
    match img {
        image::DynamicImage::ImageLuma8(g) => Image {
            w,
            h,
            c: 1,
            px: g.into_raw(),
        },
        other => Image {
            w,
            h,
            c: 3,
            px: other.to_rgb8().into_raw(),
        },
    }
}

/// A `w × h` frame tiled with the photographs at their own resolution, each tile shifted
/// so the seams fall differently at every size; grey frames take the luma of RGB
/// photographs and the camera as it is.
fn mosaic(w: u32, h: u32, format: PixelFormat, photos: &[Image]) -> Vec<u8> {
    let c = format.bytes_per_pixel() as u32;
    let mut out = vec![0u8; (w * h * c) as usize];
    let tile = 400u32;
    for y in 0..h {
        for x in 0..w {
            let k = ((x / tile) + 3 * (y / tile)) as usize % photos.len();
            let p = &photos[k];
            let (sx, sy) = ((x + 37 * k as u32) % p.w, (y + 53 * k as u32) % p.h);
            let i = ((sy * p.w + sx) * p.c) as usize;
            let rgb = if p.c == 1 {
                [p.px[i]; 3]
            } else {
                [p.px[i], p.px[i + 1], p.px[i + 2]]
            };
            let o = ((y * w + x) * c) as usize;
            if c == 1 {
                let l = (299 * rgb[0] as u32 + 587 * rgb[1] as u32 + 114 * rgb[2] as u32) / 1000;
                out[o] = l as u8;
            } else {
                out[o..o + 3].copy_from_slice(&rgb);
            }
        }
    }
    out
}

/// Writes a binary PGM (mono) or PPM (RGB), which Pillow reads as "L" or "RGB".
fn write_pnm(path: &Path, w: u32, h: u32, format: PixelFormat, px: &[u8]) {
    let magic = if format == PixelFormat::Mono8 {
        "P5"
    } else {
        "P6"
    };
    let mut bytes = format!("{magic}\n{w} {h}\n255\n").into_bytes();
    bytes.extend_from_slice(px);
    std::fs::write(path, bytes).expect("write frame");
}

fn cpu_tensor(pre: &mut Preprocessor, w: u32, h: u32, format: PixelFormat, px: &[u8]) -> Vec<f32> {
    let mut out = vec![0f32; pre.output_len()];
    pre.run(
        &FrameView {
            format,
            width: w,
            height: h,
            stride: w * format.bytes_per_pixel() as u32,
            pixels: px,
        },
        &mut out,
    );
    out
}

#[test]
fn a_batch_of_n_gives_the_outputs_of_n_single_runs() {
    let mut model = default_model(8);
    assert_eq!(model.max_batch(), 8, "{}", model.provider());
    let photos = [
        photo("chelsea.png"),
        photo("coffee.png"),
        photo("astronaut.png"),
        photo("camera.png"),
    ];
    let mut pre = Preprocessor::new(224, 224);
    let mut batch = Vec::new();
    for i in 0..8u32 {
        let (w, h) = (300 + 97 * i, 240 + 61 * i);
        let format = if i % 3 == 0 {
            PixelFormat::Mono8
        } else {
            PixelFormat::Rgb8
        };
        let px = mosaic(w, h, format, &photos[(i as usize % 4)..]);
        batch.extend(cpu_tensor(&mut pre, w, h, format, &px));
    }
    let chw = pre.output_len();
    let mut together = vec![[(0u32, 0f32); TOP_K]; 8];
    model
        .classify_batch(&batch, 8, &mut together)
        .expect("a batch of 8");
    for (i, got) in together.iter().enumerate() {
        let mut alone: Top = [(0, 0.0); TOP_K];
        model
            .classify(&batch[i * chw..(i + 1) * chw], &mut alone)
            .expect("one frame");
        for (a, b) in got.iter().zip(&alone) {
            assert_eq!(a.0, b.0, "frame {i}: batch {got:?} single {alone:?}");
            assert!(
                (a.1 - b.1).abs() < 1e-5,
                "frame {i}: batch {got:?} single {alone:?}"
            );
        }
    }
    // Different frames, different answers: the batch did not repeat one frame.
    assert!(
        together.windows(2).any(|w| w[0][0].0 != w[1][0].0),
        "{together:?}"
    );
    match model.classify_batch(&batch, 9, &mut vec![[(0, 0.0); TOP_K]; 9]) {
        Err(ModelError::Run(m)) => assert!(m.contains("1..=8"), "{m}"),
        other => panic!("a batch of 9 on a model of 8: {other:?}"),
    }
}

#[test]
fn a_model_with_its_batch_fixed_at_1_runs_one_frame_at_a_time() {
    data_dir();
    let dir = repo().join("appliance/fpgagdrd/tests/data");
    let mut model = Model::load(
        &dir.join("fixed-batch.onnx"),
        &dir.join("fixed-batch.labels.txt"),
        &ModelOptions {
            provider: Provider::Cpu,
            max_batch: 8,
            batch_limit: 8,
            ..ModelOptions::default()
        },
    )
    .expect("a fixed-batch model loads");
    assert_eq!(model.max_batch(), 1);
    assert!(
        model.provider().contains("fixed at 1"),
        "status says why: {}",
        model.provider()
    );
    // Channel means 0.5, 0, 0 → the first class wins (see make_bad_models.py).
    let mut input = vec![0f32; 3 * 8 * 8];
    input[..64].fill(0.5);
    let mut top = [(0, 0.0); TOP_K];
    model.classify(&input, &mut top).expect("one frame");
    assert_eq!(model.label(top[0].0), "red", "{top:?}");
    let mut two = vec![[(0, 0.0); TOP_K]; 2];
    assert!(
        model
            .classify_batch(&[input.clone(), input].concat(), 2, &mut two)
            .is_err()
    );
}

#[test]
fn the_resize_matches_pillow_from_320x240_to_3840x2160() {
    let photos = [
        photo("astronaut.png"),
        photo("coffee.png"),
        photo("chelsea.png"),
        photo("camera.png"),
    ];
    let dir = tempfile::tempdir().expect("temp dir");
    let sizes = [
        (320u32, 240u32),
        (640, 480),
        (1280, 720),
        (1920, 1080),
        (2592, 1944),
        (3840, 2160),
    ];
    let mut frames = Vec::new();
    for (w, h) in sizes {
        for format in [PixelFormat::Mono8, PixelFormat::Rgb8] {
            let name = format!(
                "{w}x{h}-{}.{}",
                format.as_str(),
                if format == PixelFormat::Mono8 {
                    "pgm"
                } else {
                    "ppm"
                }
            );
            let px = mosaic(w, h, format, &photos);
            write_pnm(&dir.path().join(&name), w, h, format, &px);
            frames.push((name, w, h, format, px));
        }
    }
    let out = dir.path().join("tensors");
    let status = Command::new(repo().join("appliance/scripts/resize-reference.sh"))
        .arg(&out)
        .args(frames.iter().map(|f| dir.path().join(&f.0)))
        .status()
        .expect("run resize-reference.sh");
    assert!(status.success(), "resize-reference.sh failed: {status}");
    let mut pre = Preprocessor::new(224, 224);
    let mut model = default_model(1);
    let mut worst = (0f32, String::new());
    for (name, w, h, format, px) in &frames {
        let ours = cpu_tensor(&mut pre, *w, *h, *format, px);
        let bytes = std::fs::read(out.join(format!("{name}.f32"))).expect("Pillow's tensor");
        let theirs: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(ours.len(), theirs.len(), "{name}");
        // The tensor is (x − 127) / 128: one grey level is 1/128.
        let levels = ours
            .iter()
            .zip(&theirs)
            .map(|(a, b)| (a - b).abs() * 128.0)
            .fold(0f32, f32::max);
        if levels >= worst.0 {
            worst = (levels, name.clone());
        }
        assert!(
            levels <= 1.0 + 1e-4,
            "{name}: the preprocessed tensor differs from Pillow's by {levels} grey levels"
        );
        let (mut a, mut b) = ([(0, 0.0); TOP_K], [(0, 0.0); TOP_K]);
        model.classify(&ours, &mut a).expect("ours");
        model.classify(&theirs, &mut b).expect("Pillow's");
        for &(class, score) in &b {
            let mine = a.iter().find(|c| c.0 == class).map(|c| c.1);
            assert!(
                mine.is_some_and(|s| (s - score).abs() <= 0.01),
                "{name}: Pillow's top-5 {b:?}, ours {a:?}"
            );
        }
    }
    eprintln!(
        "largest difference from Pillow: {} grey levels ({})",
        worst.0, worst.1
    );
}

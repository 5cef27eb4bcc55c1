//! Where simulated frames come from: a test pattern, or replay of real image files.
//!
//! Owns: [`FrameSource`] and its two implementations, [`TestPattern`] and [`Replay`].
//! Must not: touch card memory (`sim/sensor.rs` writes what a source renders).

use std::path::{Path, PathBuf};

use fpgagdr::frame::{FrameError, FrameHeader, HEADER_LEN, PixelFormat};

/// Produces the bytes of frame `seq` (header + payload), as the FPGA's capture logic
/// would write them into card memory.
pub trait FrameSource: Send {
    /// One line for status pages, e.g. `"replay: 14 frames from /data/frames"` (`"1 frame"`
    /// for one).
    fn describe(&self) -> String;
    /// Upper bound of a rendered frame's length (header included), bytes.
    fn max_frame_len(&self) -> usize;
    /// Renders frame `seq` into `out` (cleared first; its capacity is reused).
    fn render(&mut self, seq: u64, out: &mut Vec<u8>) -> FrameHeader;
}

/// A synthetic frame: a diagonal gradient that moves one pixel per frame, with the
/// sequence number also written into the first 8 payload bytes (little-endian), so a
/// frame's identity survives even if its header is lost.
#[derive(Debug, Clone)]
pub struct TestPattern {
    format: PixelFormat,
    width: u32,
    height: u32,
}

impl TestPattern {
    /// A pattern of `width` × `height` pixels of `format`.
    ///
    /// Errors: [`FrameError::Geometry`] for a zero side or a payload of 8 bytes or less.
    pub fn new(format: PixelFormat, width: u32, height: u32) -> Result<Self, FrameError> {
        let bytes = width as u64 * height as u64 * format.bytes_per_pixel() as u64;
        if width == 0 || height == 0 || bytes <= 8 || bytes > u32::MAX as u64 {
            return Err(FrameError::Geometry(format!(
                "test pattern {width}x{height} {} must have more than 8 and at most 4 GiB of payload",
                format.as_str()
            )));
        }
        Ok(TestPattern {
            format,
            width,
            height,
        })
    }
}

impl FrameSource for TestPattern {
    fn describe(&self) -> String {
        format!(
            "test pattern {}x{} {}",
            self.width,
            self.height,
            self.format.as_str()
        )
    }

    fn max_frame_len(&self) -> usize {
        HEADER_LEN + (self.width * self.height) as usize * self.format.bytes_per_pixel()
    }

    fn render(&mut self, seq: u64, out: &mut Vec<u8>) -> FrameHeader {
        let bpp = self.format.bytes_per_pixel();
        let row = self.width as usize * bpp;
        out.clear();
        out.resize(self.max_frame_len(), 0);
        let payload = &mut out[HEADER_LEN..];
        for (y, line) in payload.chunks_exact_mut(row).enumerate() {
            for (x, px) in line.chunks_exact_mut(bpp).enumerate() {
                let v = (x as u64 + y as u64 + seq) as u8;
                for (c, b) in px.iter_mut().enumerate() {
                    *b = v.wrapping_add(c as u8 * 85);
                }
            }
        }
        payload[..8].copy_from_slice(&seq.to_le_bytes());
        let header = FrameHeader::packed(self.format, self.width, self.height, seq, payload);
        out[..HEADER_LEN].copy_from_slice(&header.encode());
        header
    }
}

#[derive(Debug)]
struct Image {
    format: PixelFormat,
    width: u32,
    height: u32,
    pixels: Vec<u8>,
    crc: u32,
}

/// Replays a sequence of real image files as if the FPGA captured them, in file-name
/// order, looping. Grey images become mono8 frames, everything else rgb8.
#[derive(Debug)]
pub struct Replay {
    origin: PathBuf,
    images: Vec<Image>,
}

/// File extensions [`Replay`] reads.
pub const IMAGE_EXTENSIONS: &[&str] = &["png", "jpg", "jpeg", "pgm", "ppm", "pnm"];

impl Replay {
    /// Loads `path`: one image file, or every image file directly inside a directory.
    ///
    /// Errors: [`FrameError::Unreadable`] naming the first file that cannot be read or
    /// decoded; [`FrameError::Source`] when a directory holds no image file.
    pub fn load(path: &Path) -> Result<Self, FrameError> {
        let unreadable = |p: &Path, reason: String| FrameError::Unreadable {
            path: p.to_path_buf(),
            reason,
        };
        let files = if path.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| unreadable(path, e.to_string()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.extension().and_then(|e| e.to_str()).is_some_and(|e| {
                        IMAGE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str())
                    })
                })
                .collect();
            files.sort();
            files
        } else if path.exists() {
            vec![path.to_path_buf()]
        } else {
            return Err(unreadable(path, "no such file or directory".into()));
        };
        if files.is_empty() {
            return Err(FrameError::Source(format!(
                "{} holds no image file ({})",
                path.display(),
                IMAGE_EXTENSIONS.join(", ")
            )));
        }
        let images = files
            .iter()
            .map(|f| {
                let img = image::open(f).map_err(|e| unreadable(f, e.to_string()))?;
                let (format, width, height, pixels) = if img.color().has_color() {
                    let rgb = img.to_rgb8();
                    (PixelFormat::Rgb8, rgb.width(), rgb.height(), rgb.into_raw())
                } else {
                    let grey = img.to_luma8();
                    (
                        PixelFormat::Mono8,
                        grey.width(),
                        grey.height(),
                        grey.into_raw(),
                    )
                };
                let crc = crc32fast::hash(&pixels);
                Ok(Image {
                    format,
                    width,
                    height,
                    pixels,
                    crc,
                })
            })
            .collect::<Result<Vec<_>, FrameError>>()?;
        Ok(Replay {
            origin: path.to_path_buf(),
            images,
        })
    }

    /// Number of images in the sequence.
    pub fn len(&self) -> usize {
        self.images.len()
    }

    /// Always false: a loaded replay has at least one image.
    pub fn is_empty(&self) -> bool {
        self.images.is_empty()
    }
}

impl FrameSource for Replay {
    fn describe(&self) -> String {
        let n = self.images.len();
        format!(
            "replay: {n} frame{} from {}",
            if n == 1 { "" } else { "s" },
            self.origin.display()
        )
    }

    fn max_frame_len(&self) -> usize {
        HEADER_LEN
            + self
                .images
                .iter()
                .map(|i| i.pixels.len())
                .max()
                .unwrap_or(0)
    }

    fn render(&mut self, seq: u64, out: &mut Vec<u8>) -> FrameHeader {
        let img = &self.images[(seq % self.images.len() as u64) as usize];
        let mut header = FrameHeader::packed(img.format, img.width, img.height, seq, &[]);
        header.payload_len = img.pixels.len() as u32;
        header.payload_crc = img.crc;
        out.clear();
        out.extend_from_slice(&header.encode());
        out.extend_from_slice(&img.pixels);
        header
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_frames_carry_seq_and_valid_checksum() {
        let mut p = TestPattern::new(PixelFormat::Mono8, 64, 8).unwrap();
        let mut out = Vec::new();
        for seq in [0u64, 1, 255, 1 << 40] {
            let h = p.render(seq, &mut out);
            let parsed = FrameHeader::parse(&out, out.len()).unwrap();
            assert_eq!(parsed, h);
            assert_eq!(parsed.seq, seq);
            parsed.verify(&out[HEADER_LEN..]).unwrap();
            assert_eq!(
                u64::from_le_bytes(out[HEADER_LEN..HEADER_LEN + 8].try_into().unwrap()),
                seq
            );
        }
    }

    #[test]
    fn pattern_refuses_empty_geometry() {
        assert!(TestPattern::new(PixelFormat::Rgb8, 0, 10).is_err());
        assert!(TestPattern::new(PixelFormat::Mono8, 2, 2).is_err());
    }

    #[test]
    fn replay_reads_grey_and_colour_files_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        image::GrayImage::from_fn(5, 3, |x, y| image::Luma([(x * 10 + y) as u8]))
            .save(dir.path().join("a.png"))
            .unwrap();
        image::RgbImage::from_fn(4, 2, |x, _| image::Rgb([x as u8, 1, 2]))
            .save(dir.path().join("b.png"))
            .unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not an image").unwrap();
        let mut r = Replay::load(dir.path()).unwrap();
        assert_eq!(r.len(), 2);
        let mut out = Vec::new();
        let h0 = r.render(10, &mut out);
        assert_eq!(
            (h0.format, h0.width, h0.height, h0.seq),
            (PixelFormat::Mono8, 5, 3, 10)
        );
        assert_eq!(out[HEADER_LEN + 5 + 1], 11); // pixel (1, 1) = 1*10 + 1
        let h1 = r.render(11, &mut out);
        assert_eq!((h1.format, h1.width, h1.height), (PixelFormat::Rgb8, 4, 2));
        FrameHeader::parse(&out, out.len())
            .unwrap()
            .verify(&out[HEADER_LEN..])
            .unwrap();
    }

    #[test]
    fn replay_names_the_bad_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("broken.png"), b"not a png").unwrap();
        let e = Replay::load(dir.path()).unwrap_err();
        assert!(e.to_string().contains("broken.png"), "{e}");
        let empty = tempfile::tempdir().unwrap();
        assert!(
            Replay::load(empty.path())
                .unwrap_err()
                .to_string()
                .contains("holds no image")
        );
        assert!(Replay::load(Path::new("/nonexistent/x.png")).is_err());
    }
}

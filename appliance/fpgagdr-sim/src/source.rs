//! Where simulated frames come from: a test pattern, or replay of real image files.
//!
//! Owns: [`FrameSource`] and its two implementations, [`TestPattern`] and [`Replay`].
//! Must not: touch card memory (`sim/sensor.rs` writes what a source renders).

use std::path::{Path, PathBuf};

use fpgagdr::frame::{FrameError, FrameHeader, HEADER_LEN, PixelFormat};

/// Most identity bytes a source may write at the start of a payload
/// ([`FrameSource::identity_len`]).
pub const MAX_IDENTITY_LEN: usize = 16;

/// Produces the bytes of frame `seq` (header + payload), as the FPGA's capture logic
/// would write them into card memory.
///
/// A source may say which frames show the same picture ([`FrameSource::picture`]) and
/// which payload bytes carry a frame's identity rather than its picture
/// ([`FrameSource::identity`]): the sensor then writes a frame that shows the picture a
/// frame slot already holds by rewriting only its header and those bytes, with the
/// payload CRC still that of the payload as written. The bytes are exactly those
/// [`FrameSource::render`] gives (apart from the header's timestamp, which the sensor
/// sets either way).
pub trait FrameSource: Send {
    /// One line for status pages, e.g. `"replay: 14 frames from /data/frames"` (`"1 frame"`
    /// for one).
    fn describe(&self) -> String;
    /// Upper bound of a rendered frame's length (header included), bytes.
    fn max_frame_len(&self) -> usize;
    /// Renders frame `seq` into `out` (cleared first; its capacity is reused).
    fn render(&mut self, seq: u64, out: &mut Vec<u8>) -> FrameHeader;
    /// Which picture frame `seq` shows: two frames with the same key render the same
    /// header fields (bar sequence number, timestamp and CRCs) and the same payload bar
    /// its first [`FrameSource::identity_len`] bytes. `None` (the default): every frame
    /// is rendered in full.
    fn picture(&self, _seq: u64) -> Option<u64> {
        None
    }
    /// How many bytes at the start of the payload carry the frame's identity (at most
    /// [`MAX_IDENTITY_LEN`] and less than any payload); 0 (the default) for none.
    fn identity_len(&self) -> usize {
        0
    }
    /// Writes frame `seq`'s identity bytes into `out` (`identity_len()` bytes), as
    /// [`FrameSource::render`] writes them.
    fn identity(&self, _seq: u64, _out: &mut [u8]) {}
}

/// A synthetic frame: a diagonal gradient that moves one pixel every
/// [`TestPattern::with_step`] frames (every frame by default), with the sequence number
/// also written into the first 8 payload bytes (little-endian, its identity bytes), so a
/// frame's identity survives even if its header is lost.
///
/// Pixel (x, y) of frame `seq`, channel c: `(x + y + seq / step + 85 c) mod 256`, the
/// payload's first 8 bytes replaced by `seq`. Rows are copied out of one precomputed
/// cycle of the gradient, so rendering costs a copy and a CRC, not a loop per pixel.
#[derive(Debug, Clone)]
pub struct TestPattern {
    format: PixelFormat,
    width: u32,
    height: u32,
    step: u64,
    /// 256 + width pixels of the gradient row with phase 0: row y of phase p is the
    /// `width` pixels from pixel `(y + p) mod 256`.
    cycle: Vec<u8>,
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
        let bpp = format.bytes_per_pixel();
        let cycle = (0..256 + width as usize)
            .flat_map(|i| (0..bpp).map(move |c| (i as u8).wrapping_add(c as u8 * 85)))
            .collect();
        Ok(TestPattern {
            format,
            width,
            height,
            step: 1,
            cycle,
        })
    }

    /// The same pattern moving one pixel every `frames` frames (at least 1): frames in
    /// between show the same picture with their own identity, which lets the simulated
    /// sensor rewrite only header and identity of a frame slot that already holds it.
    pub fn with_step(mut self, frames: u64) -> Self {
        self.step = frames.max(1);
        self
    }

    /// Frames per one-pixel move of the gradient.
    pub fn step(&self) -> u64 {
        self.step
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
        let phase = (seq / self.step) % 256;
        out.clear();
        out.resize(self.max_frame_len(), 0);
        let payload = &mut out[HEADER_LEN..];
        for (y, line) in payload.chunks_exact_mut(row).enumerate() {
            let from = ((y as u64 + phase) % 256) as usize * bpp;
            line.copy_from_slice(&self.cycle[from..from + row]);
        }
        payload[..8].copy_from_slice(&seq.to_le_bytes());
        let header = FrameHeader::packed(self.format, self.width, self.height, seq, payload);
        out[..HEADER_LEN].copy_from_slice(&header.encode());
        header
    }

    fn picture(&self, seq: u64) -> Option<u64> {
        Some((seq / self.step) % 256)
    }

    fn identity_len(&self) -> usize {
        8
    }

    fn identity(&self, seq: u64, out: &mut [u8]) {
        out[..8].copy_from_slice(&seq.to_le_bytes());
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
///
/// Loading happens in two steps so that a caller can hold the decoded size to a memory
/// rule before anything is decoded: [`Replay::plan`] reads each file's header (format,
/// size), [`ReplayPlan::decode`] decodes them. [`Replay::load`] does both for a path.
#[derive(Debug)]
pub struct Replay {
    origin: String,
    images: Vec<Image>,
}

/// File extensions [`Replay`] reads.
pub const IMAGE_EXTENSIONS: &[&str] = &["png", "jpg", "jpeg", "pgm", "ppm", "pnm"];
/// Largest side of a replayed image, pixels (the test pattern's too).
pub const MAX_IMAGE_SIDE: u32 = 8192;
/// Most image files one replay takes.
pub const MAX_IMAGES: usize = 10_000;

/// One image file of a [`ReplayPlan`]: its name (for messages), the open file, and what
/// its header says.
#[derive(Debug)]
struct Planned {
    name: String,
    file: std::fs::File,
    format: PixelFormat,
    width: u32,
    height: u32,
}

impl Planned {
    fn decoded_bytes(&self) -> u64 {
        self.width as u64 * self.height as u64 * self.format.bytes_per_pixel() as u64
    }
}

/// Image files whose headers were read, not yet decoded: what decoding them will take.
#[derive(Debug)]
pub struct ReplayPlan {
    origin: String,
    images: Vec<Planned>,
}

fn unreadable(name: &str, reason: impl std::fmt::Display) -> FrameError {
    FrameError::Unreadable {
        path: PathBuf::from(name),
        reason: reason.to_string(),
    }
}

/// A reader of `file` from its start, with the replay's limits on sides and memory.
fn image_reader<'f>(
    name: &str,
    file: &'f std::fs::File,
    max_alloc: u64,
) -> Result<image::ImageReader<std::io::BufReader<&'f std::fs::File>>, FrameError> {
    use std::io::Seek;
    let mut f = file;
    f.seek(std::io::SeekFrom::Start(0))
        .map_err(|e| unreadable(name, e))?;
    let mut reader = image::ImageReader::new(std::io::BufReader::new(f))
        .with_guessed_format()
        .map_err(|e| unreadable(name, e))?;
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_IMAGE_SIDE);
    limits.max_image_height = Some(MAX_IMAGE_SIDE);
    limits.max_alloc = Some(max_alloc);
    reader.limits(limits);
    Ok(reader)
}

impl Replay {
    /// Loads `path`: one image file, or every image file directly inside a directory
    /// (at most [`MAX_IMAGES`]).
    ///
    /// Errors: [`FrameError::Unreadable`] naming the first file that cannot be read or
    /// decoded; [`FrameError::Source`] when a directory holds no image file or too many.
    pub fn load(path: &Path) -> Result<Self, FrameError> {
        let shown = path.display().to_string();
        let files = if path.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| unreadable(&shown, e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| is_image_name(p))
                .take(MAX_IMAGES + 1)
                .collect();
            files.sort();
            files
        } else if path.exists() {
            vec![path.to_path_buf()]
        } else {
            return Err(unreadable(&shown, "no such file or directory"));
        };
        let opened = files
            .iter()
            .map(|f| {
                let name = f.display().to_string();
                std::fs::File::open(f)
                    .map(|file| (name.clone(), file))
                    .map_err(|e| unreadable(&name, e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Replay::plan(shown, opened)?.decode()
    }

    /// Reads the header of each of `files` (name for messages, open file), in the order
    /// given: format and size, nothing decoded. `origin` names the source in
    /// [`FrameSource::describe`].
    ///
    /// Errors: [`FrameError::Source`] for no file or more than [`MAX_IMAGES`];
    /// [`FrameError::Unreadable`] naming a file that is no image this reads, or whose
    /// side is over [`MAX_IMAGE_SIDE`].
    pub fn plan(
        origin: String,
        files: Vec<(String, std::fs::File)>,
    ) -> Result<ReplayPlan, FrameError> {
        use image::ImageDecoder;
        if files.is_empty() {
            return Err(FrameError::Source(format!(
                "{origin} holds no image file ({})",
                IMAGE_EXTENSIONS.join(", ")
            )));
        }
        if files.len() > MAX_IMAGES {
            return Err(FrameError::Source(format!(
                "{origin} holds more than {MAX_IMAGES} image files"
            )));
        }
        let images = files
            .into_iter()
            .map(|(name, file)| {
                let decoder = image_reader(&name, &file, u64::MAX)?
                    .into_decoder()
                    .map_err(|e| unreadable(&name, e))?;
                let (width, height) = decoder.dimensions();
                let format = if decoder.color_type().has_color() {
                    PixelFormat::Rgb8
                } else {
                    PixelFormat::Mono8
                };
                drop(decoder);
                if width == 0 || height == 0 || width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE {
                    return Err(unreadable(
                        &name,
                        format!(
                            "{width} x {height} pixels: each side must be 1 to {MAX_IMAGE_SIDE}"
                        ),
                    ));
                }
                Ok(Planned {
                    name,
                    file,
                    format,
                    width,
                    height,
                })
            })
            .collect::<Result<Vec<_>, FrameError>>()?;
        Ok(ReplayPlan { origin, images })
    }

    /// Number of images in the sequence.
    pub fn len(&self) -> usize {
        self.images.len()
    }

    /// Always false: a loaded replay has at least one image.
    pub fn is_empty(&self) -> bool {
        self.images.is_empty()
    }

    /// Bytes the decoded images take (their pixels).
    pub fn decoded_bytes(&self) -> u64 {
        self.images.iter().map(|i| i.pixels.len() as u64).sum()
    }
}

impl ReplayPlan {
    /// Bytes the decoded images will take (their pixels: width × height × 1 for grey, 3
    /// for colour).
    pub fn decoded_bytes(&self) -> u64 {
        self.images.iter().map(Planned::decoded_bytes).sum()
    }

    /// The longest frame the decoded images will make (header included), bytes: what
    /// [`FrameSource::max_frame_len`] of the [`Replay`] will say.
    pub fn max_frame_len(&self) -> usize {
        HEADER_LEN
            + self
                .images
                .iter()
                .map(|i| i.decoded_bytes() as usize)
                .max()
                .unwrap_or(0)
    }

    /// Number of images.
    pub fn len(&self) -> usize {
        self.images.len()
    }

    /// Always false: a plan has at least one image.
    pub fn is_empty(&self) -> bool {
        self.images.is_empty()
    }

    /// Decodes every image; each may take no more memory while decoding than its header
    /// announced (twice, for a conversion), so a file changed since [`Replay::plan`]
    /// cannot make it larger.
    ///
    /// Errors: [`FrameError::Unreadable`] naming the first file that does not decode,
    /// or whose size is not what its header said.
    pub fn decode(self) -> Result<Replay, FrameError> {
        let images = self
            .images
            .iter()
            .map(|p| {
                let budget = p.width as u64 * p.height as u64 * 8 + (1 << 20);
                let img = image_reader(&p.name, &p.file, budget)?
                    .decode()
                    .map_err(|e| unreadable(&p.name, e))?;
                if (img.width(), img.height()) != (p.width, p.height) {
                    return Err(unreadable(
                        &p.name,
                        "the file changed while it was being loaded",
                    ));
                }
                let pixels = match p.format {
                    PixelFormat::Rgb8 => img.to_rgb8().into_raw(),
                    _ => img.to_luma8().into_raw(),
                };
                let crc = crc32fast::hash(&pixels);
                Ok(Image {
                    format: p.format,
                    width: p.width,
                    height: p.height,
                    pixels,
                    crc,
                })
            })
            .collect::<Result<Vec<_>, FrameError>>()?;
        Ok(Replay {
            origin: self.origin,
            images,
        })
    }
}

/// Whether `path`'s extension is one of [`IMAGE_EXTENSIONS`] (any case).
pub fn is_image_name(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| IMAGE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

impl FrameSource for Replay {
    fn describe(&self) -> String {
        let n = self.images.len();
        format!(
            "replay: {n} frame{} from {}",
            if n == 1 { "" } else { "s" },
            self.origin
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

    fn picture(&self, seq: u64) -> Option<u64> {
        Some(seq % self.images.len() as u64)
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
    fn pattern_rows_are_the_gradient_of_every_pixel() {
        for (format, step) in [(PixelFormat::Mono8, 1), (PixelFormat::Rgb8, 3)] {
            let (w, h) = (300u32, 7u32);
            let mut p = TestPattern::new(format, w, h).unwrap().with_step(step);
            let bpp = format.bytes_per_pixel();
            let mut out = Vec::new();
            for seq in [0u64, 5, 255 * step, 1000] {
                p.render(seq, &mut out);
                let payload = &out[HEADER_LEN..];
                for y in 0..h as usize {
                    for x in 0..w as usize {
                        for c in 0..bpp {
                            let i = (y * w as usize + x) * bpp + c;
                            if i < 8 {
                                continue; // the identity bytes
                            }
                            let v = (x as u64 + y as u64 + seq / step) as u8;
                            assert_eq!(payload[i], v.wrapping_add(c as u8 * 85), "{seq} {x} {y}");
                        }
                    }
                }
                // Frames of one picture differ only in their identity bytes.
                let key = p.picture(seq);
                let mut again = Vec::new();
                let next = seq + 1;
                if p.picture(next) == key {
                    p.render(next, &mut again);
                    assert_eq!(again[HEADER_LEN + 8..], out[HEADER_LEN + 8..]);
                    let mut id = [0u8; 8];
                    p.identity(next, &mut id);
                    assert_eq!(again[HEADER_LEN..HEADER_LEN + 8], id);
                }
            }
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

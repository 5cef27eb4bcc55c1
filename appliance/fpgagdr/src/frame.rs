//! The frame format on the card: a 64-byte header followed by the pixels.
//!
//! Owns: [`FrameHeader`] (layout, encode, parse, checksum), [`PixelFormat`],
//! [`FrameError`]. Must not: know where frames come from (`source.rs`) or where they go.
//!
//! Layout (all integers little-endian, as the FPGA's AXI side writes them):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `FGDRFRM1` |
//! | 8 | 2 | header version (1) |
//! | 10 | 2 | header length in bytes (64) |
//! | 12 | 2 | pixel format (1 = mono8, 2 = rgb8) |
//! | 14 | 2 | reserved, 0 |
//! | 16 | 4 | width, pixels |
//! | 20 | 4 | height, pixels |
//! | 24 | 4 | stride, bytes per row |
//! | 28 | 4 | payload length, bytes (= stride × height) |
//! | 32 | 8 | sequence number, from 0, +1 per frame the sensor produced |
//! | 40 | 8 | capture timestamp, ns of the card's clock |
//! | 48 | 4 | CRC-32 (IEEE) of the payload |
//! | 52 | 8 | reserved, 0 |
//! | 60 | 4 | CRC-32 (IEEE) of bytes 0..60 |

use std::path::PathBuf;

/// Size of the header in bytes.
pub const HEADER_LEN: usize = 64;
/// Magic at the start of every frame.
pub const MAGIC: [u8; 8] = *b"FGDRFRM1";

/// Pixel layouts a frame can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum PixelFormat {
    /// One byte per pixel, grey.
    Mono8,
    /// Three bytes per pixel, R, G, B.
    Rgb8,
}

impl PixelFormat {
    /// Bytes per pixel.
    pub fn bytes_per_pixel(self) -> usize {
        match self {
            PixelFormat::Mono8 => 1,
            PixelFormat::Rgb8 => 3,
        }
    }

    /// Name as in the API: `"mono8"`, `"rgb8"`.
    pub fn as_str(self) -> &'static str {
        match self {
            PixelFormat::Mono8 => "mono8",
            PixelFormat::Rgb8 => "rgb8",
        }
    }

    fn code(self) -> u16 {
        match self {
            PixelFormat::Mono8 => 1,
            PixelFormat::Rgb8 => 2,
        }
    }

    fn from_code(code: u16) -> Option<Self> {
        match code {
            1 => Some(PixelFormat::Mono8),
            2 => Some(PixelFormat::Rgb8),
            _ => None,
        }
    }
}

/// What can be wrong with a frame or a frame source.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The header's magic is not `FGDRFRM1`.
    #[error("rule frame-magic: no frame header (magic {found:02x?})")]
    BadMagic {
        /// The first 8 bytes found.
        found: [u8; 8],
    },
    /// The header's own CRC does not match: the header was damaged in transit.
    #[error("rule frame-header-crc: header CRC {stored:#010x} != computed {computed:#010x}")]
    HeaderCrc {
        /// CRC stored in the header.
        stored: u32,
        /// CRC computed over bytes 0..60.
        computed: u32,
    },
    /// Header fields disagree with each other or with the bytes available.
    #[error("rule frame-geometry: {0}")]
    Geometry(String),
    /// The payload CRC does not match: pixels were damaged in transit.
    #[error(
        "rule frame-checksum: frame {seq}: payload CRC {stored:#010x} != computed {computed:#010x}"
    )]
    PayloadCrc {
        /// Frame sequence number.
        seq: u64,
        /// CRC stored in the header.
        stored: u32,
        /// CRC of the payload as received.
        computed: u32,
    },
    /// An image file could not be read or decoded.
    #[error("rule frame-file: cannot use {path}: {reason}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A frame source has nothing to play.
    #[error("rule frame-source: {0}")]
    Source(String),
}

/// The decoded header of one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// Pixel layout.
    pub format: PixelFormat,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Bytes per row (≥ width × bytes per pixel).
    pub stride: u32,
    /// Payload length in bytes (= stride × height).
    pub payload_len: u32,
    /// Sequence number given by the sensor.
    pub seq: u64,
    /// Capture time, ns of the card's clock.
    pub timestamp_ns: u64,
    /// CRC-32 (IEEE) of the payload.
    pub payload_crc: u32,
}

impl FrameHeader {
    /// A header for a tightly packed payload (`stride = width × bytes per pixel`).
    pub fn packed(format: PixelFormat, width: u32, height: u32, seq: u64, payload: &[u8]) -> Self {
        let stride = width * format.bytes_per_pixel() as u32;
        FrameHeader {
            format,
            width,
            height,
            stride,
            payload_len: payload.len() as u32,
            seq,
            timestamp_ns: 0,
            payload_crc: crc32fast::hash(payload),
        }
    }

    /// Total frame length in bytes: header + payload.
    pub fn frame_len(&self) -> usize {
        HEADER_LEN + self.payload_len as usize
    }

    /// Encodes the header into its 64 bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..10].copy_from_slice(&1u16.to_le_bytes());
        b[10..12].copy_from_slice(&(HEADER_LEN as u16).to_le_bytes());
        b[12..14].copy_from_slice(&self.format.code().to_le_bytes());
        b[16..20].copy_from_slice(&self.width.to_le_bytes());
        b[20..24].copy_from_slice(&self.height.to_le_bytes());
        b[24..28].copy_from_slice(&self.stride.to_le_bytes());
        b[28..32].copy_from_slice(&self.payload_len.to_le_bytes());
        b[32..40].copy_from_slice(&self.seq.to_le_bytes());
        b[40..48].copy_from_slice(&self.timestamp_ns.to_le_bytes());
        b[48..52].copy_from_slice(&self.payload_crc.to_le_bytes());
        let crc = crc32fast::hash(&b[..60]);
        b[60..64].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Parses and checks a header (magic, header CRC, geometry). `available` is how many
    /// bytes of frame (header included) the buffer holds.
    pub fn parse(bytes: &[u8], available: usize) -> Result<Self, FrameError> {
        let b: &[u8; HEADER_LEN] = bytes
            .get(..HEADER_LEN)
            .and_then(|s| s.try_into().ok())
            .ok_or_else(|| {
                FrameError::Geometry(format!("{} bytes is shorter than a header", bytes.len()))
            })?;
        if b[0..8] != MAGIC {
            return Err(FrameError::BadMagic {
                found: b[0..8].try_into().expect("8 bytes"),
            });
        }
        let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        let stored = u32_at(60);
        let computed = crc32fast::hash(&b[..60]);
        if stored != computed {
            return Err(FrameError::HeaderCrc { stored, computed });
        }
        let format = PixelFormat::from_code(u16_at(12)).ok_or_else(|| {
            FrameError::Geometry(format!("unknown pixel format code {}", u16_at(12)))
        })?;
        let h = FrameHeader {
            format,
            width: u32_at(16),
            height: u32_at(20),
            stride: u32_at(24),
            payload_len: u32_at(28),
            seq: u64_at(32),
            timestamp_ns: u64_at(40),
            payload_crc: u32_at(48),
        };
        let row = h.width as u64 * format.bytes_per_pixel() as u64;
        if h.width == 0 || h.height == 0 {
            return Err(FrameError::Geometry(format!(
                "{}x{} frame has no pixels",
                h.width, h.height
            )));
        }
        if (h.stride as u64) < row {
            return Err(FrameError::Geometry(format!(
                "stride {} < row of {row} bytes",
                h.stride
            )));
        }
        if h.payload_len as u64 != h.stride as u64 * h.height as u64 {
            return Err(FrameError::Geometry(format!(
                "payload {} bytes != stride {} x height {}",
                h.payload_len, h.stride, h.height
            )));
        }
        if h.frame_len() > available {
            return Err(FrameError::Geometry(format!(
                "frame of {} bytes does not fit the {available} bytes received",
                h.frame_len()
            )));
        }
        Ok(h)
    }

    /// Checks the payload against the header's CRC.
    ///
    /// Errors: [`FrameError::PayloadCrc`] when they differ.
    pub fn verify(&self, payload: &[u8]) -> Result<(), FrameError> {
        self.verify_crc(crc32fast::hash(payload))
    }

    /// Checks a payload CRC computed elsewhere (e.g. on the GPU, where the payload lies)
    /// against the header's.
    ///
    /// Errors: [`FrameError::PayloadCrc`] when they differ.
    pub fn verify_crc(&self, computed: u32) -> Result<(), FrameError> {
        if computed == self.payload_crc {
            Ok(())
        } else {
            Err(FrameError::PayloadCrc {
                seq: self.seq,
                stored: self.payload_crc,
                computed,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(seq: u64) -> Vec<u8> {
        let payload: Vec<u8> = (0..6 * 4 * 3).map(|i| i as u8).collect();
        let h = FrameHeader::packed(PixelFormat::Rgb8, 6, 4, seq, &payload);
        let mut f = h.encode().to_vec();
        f.extend_from_slice(&payload);
        f
    }

    #[test]
    fn header_round_trips() {
        let f = frame(42);
        let h = FrameHeader::parse(&f, f.len()).unwrap();
        assert_eq!((h.width, h.height, h.stride, h.seq), (6, 4, 18, 42));
        assert_eq!(h.format, PixelFormat::Rgb8);
        h.verify(&f[HEADER_LEN..]).unwrap();
    }

    #[test]
    fn damaged_payload_fails_the_checksum() {
        let mut f = frame(7);
        f[HEADER_LEN + 5] ^= 1;
        let h = FrameHeader::parse(&f, f.len()).unwrap();
        let e = h.verify(&f[HEADER_LEN..]).unwrap_err();
        assert!(
            e.to_string().starts_with("rule frame-checksum: frame 7"),
            "{e}"
        );
    }

    #[test]
    fn damaged_header_is_refused() {
        let mut f = frame(1);
        f[20] ^= 1;
        assert!(matches!(
            FrameHeader::parse(&f, f.len()),
            Err(FrameError::HeaderCrc { .. })
        ));
        f[0] = b'X';
        assert!(matches!(
            FrameHeader::parse(&f, f.len()),
            Err(FrameError::BadMagic { .. })
        ));
    }

    #[test]
    fn truncated_frame_is_refused() {
        let f = frame(1);
        let e = FrameHeader::parse(&f, f.len() - 1).unwrap_err();
        assert!(e.to_string().contains("does not fit"), "{e}");
    }
}

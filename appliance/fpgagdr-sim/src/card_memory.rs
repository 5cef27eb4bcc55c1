//! The simulated card's DDR: 2 GiB of address space held sparsely.
//!
//! Owns: [`CardMemory`]. Memory is kept in 64 KiB chunks allocated on first write;
//! unwritten chunks read as zero. Each chunk has its own lock, so the FPGA side writing
//! one frame slot never waits for a DMA reading another.

use std::sync::RwLock;

/// Size of one sparse chunk, bytes.
pub(crate) const CHUNK: u64 = 64 * 1024;

#[derive(Debug)]
pub(crate) struct CardMemory {
    size: u64,
    chunks: Vec<RwLock<Option<Box<[u8]>>>>,
}

impl CardMemory {
    /// `size` bytes of card address space; `size` is a multiple of [`CHUNK`].
    pub(crate) fn new(size: u64) -> Self {
        assert!(
            size.is_multiple_of(CHUNK),
            "card memory size must be a multiple of 64 KiB"
        );
        let chunks = (0..size / CHUNK).map(|_| RwLock::new(None)).collect();
        CardMemory { size, chunks }
    }

    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// Bytes of host memory actually held (allocated chunks × chunk size).
    pub(crate) fn resident_bytes(&self) -> u64 {
        self.chunks
            .iter()
            .filter(|c| c.read().expect("chunk lock").is_some())
            .count() as u64
            * CHUNK
    }

    /// Splits `addr .. addr + len` into (chunk index, offset in chunk, length, offset in
    /// the caller's buffer) pieces. The range is inside the memory (checked by `Card`).
    fn pieces(addr: u64, len: usize) -> impl Iterator<Item = (usize, usize, usize, usize)> {
        let mut done = 0usize;
        std::iter::from_fn(move || {
            if done == len {
                return None;
            }
            let a = addr + done as u64;
            let in_chunk = (a % CHUNK) as usize;
            let n = (CHUNK as usize - in_chunk).min(len - done);
            let piece = ((a / CHUNK) as usize, in_chunk, n, done);
            done += n;
            Some(piece)
        })
    }

    /// Reads `dst.len()` bytes at `addr` by calling `sink(buffer offset, bytes)` per
    /// piece; unwritten memory reads as zero.
    pub(crate) fn read_with(&self, addr: u64, len: usize, mut sink: impl FnMut(usize, &[u8])) {
        static ZERO: [u8; CHUNK as usize] = [0; CHUNK as usize];
        for (i, off, n, at) in Self::pieces(addr, len) {
            let guard = self.chunks[i].read().expect("chunk lock");
            match guard.as_deref() {
                Some(chunk) => sink(at, &chunk[off..off + n]),
                None => sink(at, &ZERO[..n]),
            }
        }
    }

    /// Reads into `dst`.
    pub(crate) fn read(&self, addr: u64, dst: &mut [u8]) {
        let len = dst.len();
        self.read_with(addr, len, |at, bytes| {
            dst[at..at + bytes.len()].copy_from_slice(bytes)
        });
    }

    /// Writes `src` at `addr`, allocating chunks on first touch.
    pub(crate) fn write(&self, addr: u64, src: &[u8]) {
        for (i, off, n, at) in Self::pieces(addr, src.len()) {
            let mut guard = self.chunks[i].write().expect("chunk lock");
            let chunk = guard.get_or_insert_with(|| vec![0u8; CHUNK as usize].into_boxed_slice());
            chunk[off..off + n].copy_from_slice(&src[at..at + n]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_memory_reads_zero_and_spans_chunks() {
        let m = CardMemory::new(2 << 30);
        assert_eq!(m.resident_bytes(), 0);
        let mut z = [1u8; 16];
        m.read(123, &mut z);
        assert_eq!(z, [0; 16]);
        let data: Vec<u8> = (0..3 * CHUNK as usize).map(|i| (i % 251) as u8).collect();
        let addr = CHUNK - 7;
        m.write(addr, &data);
        assert_eq!(m.resident_bytes(), 4 * CHUNK);
        let mut back = vec![0u8; data.len()];
        m.read(addr, &mut back);
        assert_eq!(back, data);
        let end = m.size() - 4;
        m.write(end, &[9, 9, 9, 9]);
        let mut tail = [0u8; 4];
        m.read(end, &mut tail);
        assert_eq!(tail, [9; 4]);
    }
}

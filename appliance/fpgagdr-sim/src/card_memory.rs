//! The simulated card's DDR: 2 GiB of address space held sparsely, with dense blocks of
//! page-locked memory where the sensor keeps its frame slots.
//!
//! Owns: [`CardMemory`]. Memory is kept in 64 KiB chunks allocated on first write;
//! unwritten chunks read as zero. Each chunk has its own lock, so the FPGA side writing
//! one frame slot never waits for a DMA reading another.
//!
//! A range can be backed instead by one contiguous block ([`CardMemory::map_dense`]):
//! page-locked host memory (`cuMemHostAlloc`) when a CUDA driver is present, plain host
//! memory otherwise. The simulated card's C2H into CUDA device memory then copies a
//! frame from there with one DMA of the GPU's copy engine, with no staging copy
//! (docs/decisions.md, "The simulated card's DMA engine for device rings"). A block has
//! one lock: the sensor rewriting a slot waits for a C2H still reading it, and a C2H
//! reading it waits for the sensor. What the bytes are does not depend on how they are
//! held.

use std::sync::{Arc, RwLock};

use fpgagdr::{DmaMemory, GpuMemory, MemoryKind, Result};

/// Size of one sparse chunk, bytes.
pub(crate) const CHUNK: u64 = 64 * 1024;

/// A contiguous block laid over `base .. base + len` of card memory.
#[derive(Debug)]
struct Dense {
    base: u64,
    len: u64,
    /// Page-locked (`MemoryKind::CudaHost`) or plain host memory, `len` bytes.
    mem: RwLock<DmaMemory>,
}

impl Dense {
    fn end(&self) -> u64 {
        self.base + self.len
    }
}

#[derive(Debug)]
pub(crate) struct CardMemory {
    size: u64,
    chunks: Vec<RwLock<Option<Box<[u8]>>>>,
    /// Dense blocks, sorted by address, never overlapping; the chunks under them are
    /// not used.
    dense: RwLock<Vec<Arc<Dense>>>,
}

/// Where the piece of a range starting at some address lies.
enum Piece {
    /// In a dense block: (block, offset in the block, length).
    Dense(Arc<Dense>, usize, usize),
    /// In a sparse chunk: (chunk index, offset in the chunk, length).
    Sparse(usize, usize, usize),
}

impl CardMemory {
    /// `size` bytes of card address space; `size` is a multiple of [`CHUNK`].
    pub(crate) fn new(size: u64) -> Self {
        assert!(
            size.is_multiple_of(CHUNK),
            "card memory size must be a multiple of 64 KiB"
        );
        let chunks = (0..size / CHUNK).map(|_| RwLock::new(None)).collect();
        CardMemory {
            size,
            chunks,
            dense: RwLock::new(Vec::new()),
        }
    }

    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// Bytes of host memory actually held (allocated chunks × chunk size, and the dense
    /// blocks).
    pub(crate) fn resident_bytes(&self) -> u64 {
        let sparse = self
            .chunks
            .iter()
            .filter(|c| c.read().expect("chunk lock").is_some())
            .count() as u64
            * CHUNK;
        let dense: u64 = self
            .dense
            .read()
            .expect("dense list lock")
            .iter()
            .map(|d| d.len)
            .sum();
        sparse + dense
    }

    /// Backs `base .. base + len` (inside the memory, both multiples of [`CHUNK`]) with
    /// one contiguous block: page-locked host memory when a CUDA driver is present,
    /// else plain host memory. What the range held is copied over. A range that
    /// overlaps a block already mapped is left as it is (a dense block changes how bytes
    /// are held, never what they are). Returns the kind of memory now behind the range.
    ///
    /// Errors: [`fpgagdr::Error::Alloc`] when neither kind of memory can be allocated.
    pub(crate) fn map_dense(&self, base: u64, len: u64) -> Result<MemoryKind> {
        debug_assert!(base.is_multiple_of(CHUNK) && len.is_multiple_of(CHUNK) && len > 0);
        debug_assert!(base + len <= self.size);
        let mut dense = self.dense.write().expect("dense list lock");
        if let Some(d) = dense.iter().find(|d| d.base < base + len && base < d.end()) {
            return Ok(d.mem.read().expect("dense lock").kind());
        }
        let page_locked = match fpgagdr::gpu_memory() {
            GpuMemory::Available(_) => DmaMemory::cuda(len as usize, MemoryKind::CudaHost).ok(),
            GpuMemory::Absent(_) => None,
        };
        let mut mem = match page_locked {
            Some(m) => m,
            None => DmaMemory::host(len as usize, CHUNK as usize)?,
        };
        let bytes = mem
            .as_mut_slice()
            .expect("host and page-locked memory are addressable");
        // Move what the chunks held into the block, and free them.
        for (i, at) in (base / CHUNK..(base + len) / CHUNK).zip((0..).step_by(CHUNK as usize)) {
            let mut chunk = self.chunks[i as usize].write().expect("chunk lock");
            if let Some(c) = chunk.take() {
                bytes[at..at + CHUNK as usize].copy_from_slice(&c);
            }
        }
        let kind = mem.kind();
        let at = dense.partition_point(|d| d.base < base);
        dense.insert(
            at,
            Arc::new(Dense {
                base,
                len,
                mem: RwLock::new(mem),
            }),
        );
        Ok(kind)
    }

    /// The piece of `addr .. addr + left` that starts at `addr`: the rest of a dense
    /// block, or the rest of a sparse chunk up to the next dense block.
    fn piece(dense: &[Arc<Dense>], addr: u64, left: usize) -> Piece {
        let next = dense.partition_point(|d| d.end() <= addr);
        match dense.get(next) {
            Some(d) if d.base <= addr => {
                let n = (d.end() - addr).min(left as u64) as usize;
                Piece::Dense(d.clone(), (addr - d.base) as usize, n)
            }
            following => {
                let in_chunk = (addr % CHUNK) as usize;
                let to_dense = following.map_or(u64::MAX, |d| d.base - addr);
                let n = (CHUNK as usize - in_chunk)
                    .min(left)
                    .min(to_dense.min(usize::MAX as u64) as usize);
                Piece::Sparse((addr / CHUNK) as usize, in_chunk, n)
            }
        }
    }

    /// Reads `len` bytes at `addr` by calling `sink(buffer offset, bytes)` per piece (a
    /// whole dense block's part in one piece); unwritten memory reads as zero. The range
    /// is inside the memory (checked by the card).
    pub(crate) fn read_with(&self, addr: u64, len: usize, mut sink: impl FnMut(usize, &[u8])) {
        static ZERO: [u8; CHUNK as usize] = [0; CHUNK as usize];
        let dense = self.dense.read().expect("dense list lock");
        let mut done = 0;
        while done < len {
            match Self::piece(&dense, addr + done as u64, len - done) {
                Piece::Dense(d, off, n) => {
                    let mem = d.mem.read().expect("dense lock");
                    let bytes = mem.as_slice().expect("dense memory is addressable");
                    sink(done, &bytes[off..off + n]);
                    done += n;
                }
                Piece::Sparse(i, off, n) => {
                    let guard = self.chunks[i].read().expect("chunk lock");
                    match guard.as_deref() {
                        Some(chunk) => sink(done, &chunk[off..off + n]),
                        None => sink(done, &ZERO[..n]),
                    }
                    done += n;
                }
            }
        }
    }

    /// Calls `f` with the `len` bytes at `addr` when they lie in one dense block of
    /// page-locked memory (held for reading during the call); `None` otherwise.
    pub(crate) fn with_page_locked<R>(
        &self,
        addr: u64,
        len: usize,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Option<R> {
        let dense = self.dense.read().expect("dense list lock");
        match Self::piece(&dense, addr, len) {
            Piece::Dense(d, off, n) if n == len => {
                let mem = d.mem.read().expect("dense lock");
                if mem.kind() != MemoryKind::CudaHost {
                    return None;
                }
                let bytes = mem.as_slice().expect("dense memory is addressable");
                Some(f(&bytes[off..off + n]))
            }
            _ => None,
        }
    }

    /// Reads into `dst`.
    pub(crate) fn read(&self, addr: u64, dst: &mut [u8]) {
        let len = dst.len();
        self.read_with(addr, len, |at, bytes| {
            dst[at..at + bytes.len()].copy_from_slice(bytes)
        });
    }

    /// Writes `src` at `addr`, allocating sparse chunks on first touch.
    pub(crate) fn write(&self, addr: u64, src: &[u8]) {
        let dense = self.dense.read().expect("dense list lock");
        let mut done = 0;
        while done < src.len() {
            match Self::piece(&dense, addr + done as u64, src.len() - done) {
                Piece::Dense(d, off, n) => {
                    let mut mem = d.mem.write().expect("dense lock");
                    let bytes = mem.as_mut_slice().expect("dense memory is addressable");
                    bytes[off..off + n].copy_from_slice(&src[done..done + n]);
                    done += n;
                }
                Piece::Sparse(i, off, n) => {
                    let mut guard = self.chunks[i].write().expect("chunk lock");
                    let chunk =
                        guard.get_or_insert_with(|| vec![0u8; CHUNK as usize].into_boxed_slice());
                    chunk[off..off + n].copy_from_slice(&src[done..done + n]);
                    done += n;
                }
            }
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

    #[test]
    fn a_dense_block_keeps_what_the_range_held_and_reads_across_its_edges() {
        let m = CardMemory::new(64 * CHUNK);
        let data: Vec<u8> = (0..8 * CHUNK as usize).map(|i| (i % 253) as u8).collect();
        m.write(2 * CHUNK, &data);
        assert_eq!(m.resident_bytes(), 8 * CHUNK);
        // Chunks 4..6 become one block; what they held moves into it.
        m.map_dense(4 * CHUNK, 2 * CHUNK).unwrap();
        assert_eq!(m.resident_bytes(), 8 * CHUNK);
        let mut back = vec![0u8; data.len()];
        m.read(2 * CHUNK, &mut back);
        assert_eq!(back, data);
        // A write across both edges of the block, then a read piece by piece.
        let patch: Vec<u8> = (0..3 * CHUNK as usize).map(|i| (i % 7) as u8 + 1).collect();
        m.write(3 * CHUNK + 5, &patch);
        let mut pieces = Vec::new();
        let mut again = vec![0u8; patch.len()];
        m.read_with(3 * CHUNK + 5, patch.len(), |at, b| {
            pieces.push((at, b.len()));
            again[at..at + b.len()].copy_from_slice(b);
        });
        assert_eq!(again, patch);
        let whole_block = 2 * CHUNK as usize;
        assert!(pieces.iter().any(|&(_, n)| n == whole_block), "{pieces:?}");
        // Mapping an overlapping range again changes nothing.
        m.map_dense(5 * CHUNK, 4 * CHUNK).unwrap();
        m.read(3 * CHUNK + 5, &mut again);
        assert_eq!(again, patch);
        // Without CUDA the block is plain host memory: no page-locked fast path.
        if m.map_dense(40 * CHUNK, CHUNK).unwrap() == MemoryKind::Host {
            assert!(m.with_page_locked(40 * CHUNK, 16, |_| ()).is_none());
        }
        assert!(m.with_page_locked(4 * CHUNK - 1, 16, |_| ()).is_none());
    }
}

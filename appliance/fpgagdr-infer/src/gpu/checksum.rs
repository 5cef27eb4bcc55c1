//! CRC-32 (IEEE 802.3, the frame header's payload checksum) of bytes in GPU memory, so a
//! frame in a CUDA ring is checked without copying its pixels to the host.
//!
//! Owns: [`GpuCrc32`] and the GF(2) arithmetic that makes the CRC parallel
//! ([`crc32_combine`], [`crc32_chunked`]).
//! How: CRC-32 is linear, so `crc(A‖B) = (x^(8·|B|) mod P) · crc(A) ⊕ crc(B)` in GF(2)[x]
//! modulo the CRC polynomial P (the identity zlib's `crc32_combine` rests on). One thread
//! per chunk of `L` bytes computes a plain table CRC; chunks are aligned to the **end** of
//! the data, so the only short chunk is the first and every right-hand operand of the
//! pairwise combine tree is a whole power-of-two number of chunks: its shift
//! `x^(8·L·2^k)` comes from a table the host computes once per chunk length. Empty chunks
//! (CRC 0) on the left are neutral, which pads each tree to a power of two.
//! Blocks of 256 threads combine their chunks; one block of up to 1024 threads combines
//! the blocks. Result: one `u32` back to the host.

// Kernel launches on device addresses: each `unsafe` states the bounds it relies on.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg};

use super::kernels::{GEOM_WORDS, GpuError, GpuKernels, cuda};

/// The reflected CRC-32 polynomial (IEEE 802.3; bit 31 is the x⁰ coefficient).
const POLY: u32 = 0xedb8_8320;
/// Threads (chunks) per block of the chunk kernel; its combine tree has 8 levels.
const CHUNKS_PER_BLOCK: usize = 256;
/// Most blocks the final combine handles (one block of 1024 threads; 10 levels).
const MAX_BLOCKS: usize = 1024;
/// Shortest chunk, bytes: long enough that one thread's table loop outweighs its share
/// of the combine tree.
const MIN_CHUNK: usize = 64;

const KERNEL: &str = r#"
#define POLY 0xedb88320u
__device__ unsigned int fg_mulmodp(unsigned int a, unsigned int b) {
    unsigned int p = 0;
    for (int i = 0; i < 32; ++i) {
        if (a & (0x80000000u >> i)) p ^= b;
        b = (b & 1u) ? (b >> 1) ^ POLY : (b >> 1);
    }
    return p;
}

/* Combines sh[0..n) pairwise (n a power of two); level k's right operand is shifted in
   by shifts[k]. Result in sh[0]. Every thread of the block calls this. */
__device__ void fg_tree(unsigned int* sh, int n, const unsigned int* shifts) {
    int t = threadIdx.x;
    int k = 0;
    for (int s = 1; s < n; s <<= 1, ++k) {
        __syncthreads();
        if (t % (2 * s) == 0 && t + s < n)
            sh[t] = fg_mulmodp(shifts[k], sh[t]) ^ sh[t + s];
    }
    __syncthreads();
}

/* Frame z = blockIdx.y, its geometry record geom[z*8..] (pixel address in words 0-1,
   payload length in word 6, 0 for a frame whose header failed). Block b, thread t: chunk
   g = b*256 + t of N = gridDim.x*256 chunks, covering bytes [len - (N-g)*chunk,
   len - (N-g-1)*chunk) clipped at 0. shifts[0..8): x^(8*chunk*2^k). */
extern "C" __global__ void fpgagdr_crc32_chunks(const unsigned int* geom, long long chunk,
    const unsigned int* shifts, unsigned int* partials)
{
    __shared__ unsigned int table[256];
    __shared__ unsigned int sh[256];
    int t = threadIdx.x;
    const unsigned int* g = geom + blockIdx.y * 8;
    const unsigned char* data =
        (const unsigned char*)((unsigned long long)g[0] | ((unsigned long long)g[1] << 32));
    long long len = g[6];
    unsigned int c = t;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ POLY : (c >> 1);
    table[t] = c;
    __syncthreads();
    long long n_chunks = (long long)gridDim.x * 256;
    long long gi = (long long)blockIdx.x * 256 + t;
    long long hi = len - (n_chunks - gi - 1) * chunk;
    long long lo = hi - chunk;
    if (lo < 0) lo = 0;
    unsigned int crc = 0xffffffffu;
    for (long long i = lo; i < hi; ++i)
        crc = table[(crc ^ data[i]) & 0xffu] ^ (crc >> 8);
    sh[t] = hi > 0 ? ~crc : 0u;
    fg_tree(sh, 256, shifts);
    if (t == 0) partials[blockIdx.y * gridDim.x + blockIdx.x] = sh[0];
}

/* Frame z = blockIdx.x; one block of n_pow2 threads: partials[z*n_blocks ..][0..n_blocks)
   right-aligned in a tree of n_pow2 leaves. shifts[8..18): x^(8*chunk*256*2^k). The CRC
   goes to out[out_offset + z * out_stride]. */
extern "C" __global__ void fpgagdr_crc32_blocks(const unsigned int* partials,
    int n_blocks, int n_pow2, const unsigned int* shifts, unsigned int* out, int out_offset,
    int out_stride)
{
    __shared__ unsigned int sh[1024];
    int t = threadIdx.x;
    int i = t - (n_pow2 - n_blocks);
    sh[t] = i >= 0 ? partials[blockIdx.x * n_blocks + i] : 0u;
    fg_tree(sh, n_pow2, shifts + 8);
    if (t == 0) out[out_offset + blockIdx.x * out_stride] = sh[0];
}
"#;

/// `a · b mod P` in GF(2)[x], both in the reflected representation (bit 31 = x⁰).
fn mul_mod_p(a: u32, mut b: u32) -> u32 {
    let mut p = 0;
    for i in 0..32 {
        if a & (0x8000_0000 >> i) != 0 {
            p ^= b;
        }
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
    }
    p
}

/// `x^(8·n) mod P`: the operator that appends `n` zero bytes to a CRC.
fn x8n_mod_p(mut n: u64) -> u32 {
    let mut r = 0x8000_0000; // x⁰
    let mut base = 0x0080_0000; // x⁸
    while n != 0 {
        if n & 1 != 0 {
            r = mul_mod_p(r, base);
        }
        base = mul_mod_p(base, base);
        n >>= 1;
    }
    r
}

/// CRC-32 of `A‖B` from `crc_a` = CRC-32 of A, `crc_b` = CRC-32 of B and `len_b` = |B|
/// in bytes.
pub fn crc32_combine(crc_a: u32, crc_b: u32, len_b: u64) -> u32 {
    mul_mod_p(x8n_mod_p(len_b), crc_a) ^ crc_b
}

/// The shift table the kernels use for chunks of `chunk` bytes: `[0..8)` =
/// `x^(8·chunk·2^k)` (the chunk tree), `[8..18)` = `x^(8·chunk·256·2^k)` (the block tree).
fn shift_table(chunk: u64) -> [u32; 18] {
    let mut t = [0; 18];
    for (k, v) in t.iter_mut().enumerate() {
        let chunks = if k < 8 {
            1u64 << k
        } else {
            (CHUNKS_PER_BLOCK as u64) << (k - 8)
        };
        *v = x8n_mod_p(chunk * chunks);
    }
    t
}

/// Chunk length and block count for `len` bytes: at least [`MIN_CHUNK`] bytes a chunk
/// and at most [`MAX_BLOCKS`] blocks.
fn geometry(len: usize) -> (usize, usize) {
    let chunk = len.div_ceil(CHUNKS_PER_BLOCK * MAX_BLOCKS).max(MIN_CHUNK);
    let blocks = len.div_ceil(chunk * CHUNKS_PER_BLOCK).max(1);
    (chunk, blocks)
}

/// CRC-32 of `data` computed the way the GPU does (end-aligned chunks, the same combine
/// trees), on the CPU: the reference the kernels are checked against, and the proof
/// that the arithmetic equals the plain CRC (a unit test compares it with `crc32fast`).
pub fn crc32_chunked(data: &[u8]) -> u32 {
    let (chunk, blocks) = geometry(data.len());
    let shifts = shift_table(chunk as u64);
    let n_chunks = (blocks * CHUNKS_PER_BLOCK) as i64;
    let len = data.len() as i64;
    let tree = |leaves: &mut [u32], shifts: &[u32]| {
        let mut s = 1;
        let mut k = 0;
        while s < leaves.len() {
            for t in (0..leaves.len()).step_by(2 * s) {
                leaves[t] = mul_mod_p(shifts[k], leaves[t]) ^ leaves[t + s];
            }
            s <<= 1;
            k += 1;
        }
        leaves[0]
    };
    let mut partials = Vec::with_capacity(blocks);
    for b in 0..blocks {
        let mut sh = [0u32; CHUNKS_PER_BLOCK];
        for (t, leaf) in sh.iter_mut().enumerate() {
            let g = (b * CHUNKS_PER_BLOCK + t) as i64;
            let hi = len - (n_chunks - g - 1) * chunk as i64;
            let lo = (hi - chunk as i64).max(0);
            *leaf = if hi > 0 {
                crc32fast::hash(&data[lo as usize..hi as usize])
            } else {
                0
            };
        }
        partials.push(tree(&mut sh, &shifts[..8]));
    }
    let n_pow2 = blocks.next_power_of_two();
    let mut sh = vec![0u32; n_pow2];
    sh[n_pow2 - blocks..].copy_from_slice(&partials);
    tree(&mut sh, &shifts[8..])
}

/// CRC-32 of bytes in GPU memory, of one buffer or of every frame of a batch in one pair
/// of launches. Holds the two compiled kernels, the shift table for the current chunk
/// length, the per-block partial CRCs, a geometry record and the result for single
/// buffers, all in device memory, allocated once (no allocation per frame while the
/// frame size and batch stay).
#[derive(Debug)]
pub struct GpuCrc32 {
    launcher: Launcher,
    geom: CudaSlice<u32>,
    out: CudaSlice<u32>,
    staging: Option<CudaSlice<u8>>,
}

/// The kernels and the buffers only they use.
#[derive(Debug)]
struct Launcher {
    kernels: GpuKernels,
    chunks_fn: CudaFunction,
    blocks_fn: CudaFunction,
    shifts: CudaSlice<u32>,
    shifts_for: usize,
    partials: CudaSlice<u32>,
}

impl GpuCrc32 {
    /// Compiles the kernels in the frame ring's context, on a new stream.
    ///
    /// Errors: [`GpuError::Unavailable`] without a CUDA driver or NVRTC library;
    /// [`GpuError::Cuda`].
    pub fn new() -> Result<Self, GpuError> {
        Self::with_kernels(GpuKernels::compile(KERNEL)?)
    }

    /// As [`Self::new`], with the kernels running on `stream`.
    pub fn on_stream(stream: &Arc<CudaStream>) -> Result<Self, GpuError> {
        Self::with_kernels(GpuKernels::compile_on(stream, KERNEL)?)
    }

    fn with_kernels(kernels: GpuKernels) -> Result<Self, GpuError> {
        let s = kernels.stream.clone();
        Ok(GpuCrc32 {
            launcher: Launcher {
                chunks_fn: kernels.function("fpgagdr_crc32_chunks")?,
                blocks_fn: kernels.function("fpgagdr_crc32_blocks")?,
                shifts: s.alloc_zeros::<u32>(18).map_err(cuda)?,
                shifts_for: 0,
                partials: s.alloc_zeros::<u32>(MAX_BLOCKS).map_err(cuda)?,
                kernels,
            },
            geom: s.alloc_zeros::<u32>(GEOM_WORDS).map_err(cuda)?,
            out: s.alloc_zeros::<u32>(1).map_err(cuda)?,
            staging: None,
        })
    }

    /// Queues the CRC of `len` bytes at device address `data` on the stream; read it
    /// with [`Self::result`].
    ///
    /// Errors: [`GpuError::Geometry`] when `len` is 0 or over 4 GiB − 1 (a frame
    /// payload's length is a u32); [`GpuError::Cuda`].
    ///
    /// # Safety
    /// `data .. data + len` must be device memory (or device-mapped host memory) of
    /// this context that stays allocated, and that nothing writes, until the stream has
    /// run the kernels.
    #[allow(unsafe_code)]
    pub unsafe fn launch(&mut self, data: u64, len: usize) -> Result<(), GpuError> {
        if len == 0 || len > u32::MAX as usize {
            return Err(GpuError::Geometry(format!(
                "a CRC over {len} bytes: the length must be 1 B ..= 4 GiB - 1"
            )));
        }
        let g: [u32; GEOM_WORDS] = [data as u32, (data >> 32) as u32, 0, 0, 0, 1, len as u32, 1];
        let stream = self.launcher.kernels.stream.clone();
        stream.memcpy_htod(&g, &mut self.geom).map_err(cuda)?;
        // SAFETY: the one record just written describes `data .. data + len`, which the
        // caller vouches for; `out` holds the one result.
        unsafe {
            self.launcher
                .launch(&self.geom, 1, len, &mut self.out, 0, 1)
        }
    }

    /// Queues the CRCs of the payloads of frames `0..n` that the geometry records in
    /// `geom` describe (`GEOM_WORDS` u32 each: pixel address, …, payload length; a
    /// record of length 0 gives CRC 0), each at most `max_payload` bytes; frame z's CRC
    /// goes to `out[out_offset + z × out_stride]`.
    ///
    /// Errors: [`GpuError::Geometry`] when `max_payload` is 0 or over 4 GiB − 1, or the
    /// buffers are too short for `n`; [`GpuError::Cuda`].
    ///
    /// # Safety
    /// Every record's `payload length` bytes from its address must be device memory (or
    /// device-mapped host memory) of this context that stays allocated and unwritten
    /// until the stream has run the kernels, and no record may claim more than
    /// `max_payload` bytes.
    #[allow(unsafe_code)]
    pub(crate) unsafe fn launch_batch(
        &mut self,
        geom: &CudaSlice<u32>,
        n: usize,
        max_payload: usize,
        out: &mut CudaSlice<u32>,
        out_offset: usize,
        out_stride: usize,
    ) -> Result<(), GpuError> {
        // SAFETY: the caller's contract, passed on.
        unsafe {
            self.launcher
                .launch(geom, n, max_payload, out, out_offset, out_stride)
        }
    }

    /// Waits for the stream and returns the CRC the last [`Self::launch`] computed.
    pub fn result(&self) -> Result<u32, GpuError> {
        let stream = &self.launcher.kernels.stream;
        let mut v = [0u32; 1];
        stream.memcpy_dtoh(&self.out, &mut v).map_err(cuda)?;
        stream.synchronize().map_err(cuda)?;
        Ok(v[0])
    }

    /// CRC-32 of host bytes, computed on the GPU after a copy to a device staging
    /// buffer (tests and benchmarks).
    #[allow(unsafe_code)]
    pub fn of_host(&mut self, bytes: &[u8]) -> Result<u32, GpuError> {
        let stream = self.launcher.kernels.stream.clone();
        if self.staging.as_ref().is_none_or(|s| s.len() < bytes.len()) {
            self.staging = Some(stream.alloc_zeros::<u8>(bytes.len().max(1)).map_err(cuda)?);
        }
        let staging = self.staging.as_mut().expect("allocated above");
        stream
            .memcpy_htod(bytes, &mut staging.slice_mut(..bytes.len()))
            .map_err(cuda)?;
        let ptr = {
            let (p, _sync) = staging.device_ptr(&stream);
            p
        };
        // SAFETY: `ptr .. ptr + len` is the staging buffer this struct owns, written
        // above on the same stream; `result` waits for the kernels before it returns.
        unsafe { self.launch(ptr, bytes.len()) }?;
        self.result()
    }
}

impl Launcher {
    /// See [`GpuCrc32::launch_batch`].
    ///
    /// # Safety
    /// As [`GpuCrc32::launch_batch`].
    #[allow(unsafe_code)]
    unsafe fn launch(
        &mut self,
        geom: &CudaSlice<u32>,
        n: usize,
        max_payload: usize,
        out: &mut CudaSlice<u32>,
        out_offset: usize,
        out_stride: usize,
    ) -> Result<(), GpuError> {
        if max_payload == 0 || max_payload > u32::MAX as usize {
            return Err(GpuError::Geometry(format!(
                "a CRC over up to {max_payload} bytes: the length must be 1 B ..= 4 GiB - 1"
            )));
        }
        if n == 0 || geom.len() < n * GEOM_WORDS || out.len() <= out_offset + (n - 1) * out_stride {
            return Err(GpuError::Geometry(format!(
                "a CRC batch of {n} frames does not fit its buffers"
            )));
        }
        let (chunk, blocks) = geometry(max_payload);
        let stream = self.kernels.stream.clone();
        if self.partials.len() < n * blocks {
            self.partials = stream.alloc_zeros::<u32>(n * blocks).map_err(cuda)?;
        }
        if self.shifts_for != chunk {
            stream
                .memcpy_htod(&shift_table(chunk as u64), &mut self.shifts)
                .map_err(cuda)?;
            self.shifts_for = chunk;
        }
        let chunk = chunk as i64;
        let cfg = LaunchConfig {
            grid_dim: (blocks as u32, n as u32, 1),
            block_dim: (CHUNKS_PER_BLOCK as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = stream.launch_builder(&self.chunks_fn);
        launch
            .arg(geom)
            .arg(&chunk)
            .arg(&self.shifts)
            .arg(&mut self.partials);
        // SAFETY: the arguments match the kernel's signature. Block (b, z) reads record
        // z < n (inside `geom`, checked above); thread g of N reads bytes
        // [max(0, len − (N−g)·chunk), len − (N−g−1)·chunk) ⊂ [0, len) of that record's
        // payload, len ≤ max_payload ≤ N·chunk, which the caller vouches for; it writes
        // partials[z·blocks + b] < n·blocks ≤ the length of `partials`; `shifts` holds the
        // 18 entries the kernels index.
        unsafe { launch.launch(cfg) }.map_err(cuda)?;
        let n_pow2 = blocks.next_power_of_two();
        let (n_blocks, n_pow2_i) = (blocks as i32, n_pow2 as i32);
        let (offset, stride) = (out_offset as i32, out_stride as i32);
        let cfg = LaunchConfig {
            grid_dim: (n as u32, 1, 1),
            block_dim: (n_pow2 as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = stream.launch_builder(&self.blocks_fn);
        launch
            .arg(&self.partials)
            .arg(&n_blocks)
            .arg(&n_pow2_i)
            .arg(&self.shifts)
            .arg(out)
            .arg(&offset)
            .arg(&stride);
        // SAFETY: the arguments match the kernel's signature; block z < n, thread t <
        // n_pow2 ≤ 1024 reads partials[z·blocks + t − (n_pow2 − blocks)] only when that
        // index is ≥ z·blocks (so < (z+1)·blocks ≤ its length), and thread 0 writes
        // out[out_offset + z·out_stride], inside `out` (checked above).
        unsafe { launch.launch(cfg) }.map_err(cuda)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(len: usize, seed: u32) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect()
    }

    #[test]
    fn combine_matches_the_crc_of_the_concatenation() {
        let data = noise(1000, 7);
        for split in [0, 1, 63, 64, 500, 999, 1000] {
            let (a, b) = data.split_at(split);
            assert_eq!(
                crc32_combine(crc32fast::hash(a), crc32fast::hash(b), b.len() as u64),
                crc32fast::hash(&data),
                "split at {split}"
            );
        }
    }

    #[test]
    fn the_gpu_algorithm_equals_the_plain_crc() {
        // Lengths around chunk, block and the 1024-block boundaries, and a 1 MiB frame.
        for len in [
            1,
            63,
            64,
            65,
            16_383,
            16_384,
            16_385,
            1 << 20,
            16 << 20,
            (16 << 20) + 7,
        ] {
            let data = noise(len, len as u32);
            assert_eq!(crc32_chunked(&data), crc32fast::hash(&data), "{len} bytes");
        }
    }

    #[test]
    fn geometry_keeps_within_the_final_block() {
        for len in [1usize, 1 << 20, 256 << 20, (1 << 30) + 3] {
            let (chunk, blocks) = geometry(len);
            assert!(chunk >= MIN_CHUNK && blocks <= MAX_BLOCKS, "{len}");
            assert!(chunk * blocks * CHUNKS_PER_BLOCK >= len, "{len} covered");
        }
    }
}

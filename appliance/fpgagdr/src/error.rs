//! Errors of the `fpgagdr` library.
//!
//! Owns: [`Error`] and the stable rule names ([`Error::rule`]) that callers, the REST
//! API and the C API show to users. Every variant carries the offending values, so the
//! message alone says what was asked for and what the rule allows.

use std::path::PathBuf;
use std::time::Duration;

use crate::dma::Direction;

/// Result alias used across the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong when talking to a card.
///
/// Messages start with the rule that was broken, in the form `rule <name>: ...`, so a
/// user who sees one in a log can find it in `docs/library.md`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A buffer's address or length is not a multiple of the platform's required
    /// alignment (4 KiB on Tegra, 64 KiB GPU pages on a discrete GPU).
    #[error(
        "rule alignment: {what} {value:#x} is not a multiple of {required} bytes \
         (the {platform} platform's pin alignment)"
    )]
    Alignment {
        /// Which quantity broke the rule: `"buffer address"` or `"buffer length"`.
        what: &'static str,
        /// The offending value.
        value: u64,
        /// The required alignment in bytes.
        required: u64,
        /// Platform name the alignment comes from.
        platform: &'static str,
    },
    /// `card_addr + len` reaches past the end of the card's memory.
    #[error(
        "rule card-bounds: card address {card_addr:#x} + length {len} ends past the card's \
         {card_memory} bytes of memory"
    )]
    CardBounds {
        /// First card address of the transfer.
        card_addr: u64,
        /// Transfer length in bytes.
        len: u64,
        /// Size of the card's memory in bytes.
        card_memory: u64,
    },
    /// `offset + len` reaches past the end of the pinned buffer.
    #[error(
        "rule buffer-bounds: offset {offset} + length {len} ends past the pinned buffer's \
         {buffer_len} bytes"
    )]
    BufferBounds {
        /// Offset into the pinned buffer, bytes.
        offset: u64,
        /// Transfer length in bytes.
        len: u64,
        /// Length of the pinned buffer in bytes.
        buffer_len: u64,
    },
    /// A transfer or pin of zero bytes.
    #[error("rule length-nonzero: {what} length must be greater than zero")]
    ZeroLength {
        /// What had the zero length (`"transfer"`, `"pin"`).
        what: &'static str,
    },
    /// The handle was never issued by this card (or the buffer was pinned by another
    /// card), or has been released (unpinned).
    #[error("rule handle-valid: handle {handle} is unknown to this card or already released")]
    UnknownHandle {
        /// The raw handle value.
        handle: u64,
    },
    /// The channel index is not below the card's channel count for that direction.
    #[error("rule channel-range: {dir} channel {channel} does not exist (the card has {count})")]
    ChannelRange {
        /// Transfer direction.
        dir: Direction,
        /// Requested channel.
        channel: u32,
        /// Channels the card has in that direction.
        count: u32,
    },
    /// The transfer did not complete within its timeout; the engine was stopped and
    /// the channel is usable again.
    #[error(
        "rule timeout: {dir} transfer of {len} bytes did not complete within {timeout:?}; \
         the engine was aborted and the channel is usable"
    )]
    Timeout {
        /// Transfer direction.
        dir: Direction,
        /// Transfer length in bytes.
        len: u64,
        /// The timeout that expired.
        timeout: Duration,
    },
    /// No frame arrived from the card's frame trigger within the timeout.
    #[error("rule timeout: no frame arrived within {timeout:?}")]
    NoFrame {
        /// The timeout that expired.
        timeout: Duration,
    },
    /// A zero timeout: every wait in fpgagdr is bounded, and zero would mean "never wait".
    #[error("rule timeout-nonzero: a transfer timeout must be greater than zero")]
    ZeroTimeout,
    /// A pinned region overlaps one that is already registered for address lookup.
    #[error(
        "rule no-overlap: buffer at {addr:#x} ({len} bytes) overlaps a registered buffer at \
         {other_addr:#x} ({other_len} bytes)"
    )]
    Overlap {
        /// Address of the new buffer.
        addr: u64,
        /// Length of the new buffer.
        len: u64,
        /// Address of the buffer already registered.
        other_addr: u64,
        /// Length of the buffer already registered.
        other_len: u64,
    },
    /// In GPU-pinned mode, the legacy call's address range is not inside any registered
    /// GPU buffer.
    #[error(
        "rule registered-buffer: address {addr:#x} + {len} bytes lies in no registered GPU \
         buffer (register it with Card::register_buffer, or switch to TransferMode::Cpu)"
    )]
    NotRegistered {
        /// Address the caller passed.
        addr: u64,
        /// Length the caller passed.
        len: u64,
    },
    /// The card does not offer this operation.
    #[error("rule capability: {what} is not supported by {card}")]
    Unsupported {
        /// The operation asked for.
        what: &'static str,
        /// The card that lacks it.
        card: String,
    },
    /// No card at this index or path.
    #[error("rule card-present: no fpgagdr card at {path}: {reason}")]
    NoCard {
        /// Path that was tried.
        path: PathBuf,
        /// Why it could not be opened.
        reason: String,
    },
    /// Memory for a DMA buffer could not be allocated.
    #[error("rule memory: could not allocate {len} bytes of {kind} memory: {reason}")]
    Alloc {
        /// Bytes asked for.
        len: u64,
        /// Kind of memory (`"host"`, `"cuda device"`).
        kind: &'static str,
        /// Reason from the allocator or CUDA driver.
        reason: String,
    },
    /// The CUDA driver reported an error while copying to or from GPU memory.
    #[error("rule cuda: {0}")]
    Cuda(String),
    /// A frame could not be read, decoded or validated.
    #[error(transparent)]
    Frame(#[from] crate::frame::FrameError),
    /// The kernel module refused a request for a reason none of the variants above
    /// describes (the other rules of its header's error table map to the variants above;
    /// see `kernel` module docs for the whole table).
    ///
    /// `rule` is one of: `"abi"` (ENOTTY: not an fpgagdr control node, or a request the
    /// module lacks), `"abi-version"` (EPROTO), `"user-memory"` (EFAULT),
    /// `"argument-valid"` (EINVAL), `"file-descriptor"` (EBADF), `"pin-size"` (E2BIG;
    /// EOVERFLOW on PIN), `"handle-valid"` (EALREADY), `"pin-limit"` (ENOSPC),
    /// `"handle-busy"` (EBUSY on TRANSFER), `"engine-busy"` (EBUSY on ABORT: another open
    /// file's transfer), `"gpu-memory-freed"` (ESTALE), `"interrupted"` (EINTR),
    /// `"aborted"` (ECANCELED), `"engine"` (EIO on TRANSFER or ABORT, or a short
    /// transfer), `"dma-mapping"` (EIO on PIN), `"card-gone"` (EIO on WAIT_FRAME: the card
    /// reads all ones), `"alignment"` and
    /// `"timeout-range"` (the module's transfer alignment and 60 s timeout limit, checked
    /// before the call with the errno the module would answer), or `"kernel"` (an errno
    /// outside the header's table).
    #[error("rule {rule}: {op} failed with {}: {detail}", errno_name(*errno))]
    Kernel {
        /// The rule's stable name (one of the list above).
        rule: &'static str,
        /// The request: `"open"`, `"GET_STATUS"`, `"PIN"`, `"UNPIN"`, `"TRANSFER"`,
        /// `"ABORT"`, or `"read"` / `"write"` on a channel node.
        op: &'static str,
        /// The errno the module answered (or would answer, for the checks made before
        /// the call), as a raw `errno` value.
        errno: i32,
        /// What went wrong for this request, with the offending values.
        detail: String,
    },
}

/// `EBUSY` for a known errno, `errno 1234` otherwise.
pub(crate) fn errno_name(errno: i32) -> String {
    match nix::errno::Errno::from_raw(errno) {
        nix::errno::Errno::UnknownErrno => format!("errno {errno}"),
        e => format!("{e:?}"),
    }
}

/// Every rule name [`Error::rule`] can return: the library's own rules, then the kernel
/// module's (`kernel` module docs and `docs/library.md` have the table). The C API
/// (`fpgagdr-capi`) gives each one errno and its tests trigger each one, so a rule added
/// here without an errno there fails its tests.
pub const RULES: &[&str] = &[
    "alignment",
    "card-bounds",
    "buffer-bounds",
    "length-nonzero",
    "handle-valid",
    "channel-range",
    "timeout",
    "timeout-nonzero",
    "no-overlap",
    "registered-buffer",
    "capability",
    "card-present",
    "memory",
    "cuda",
    "frame",
    "abi",
    "abi-version",
    "user-memory",
    "argument-valid",
    "file-descriptor",
    "pin-size",
    "pin-limit",
    "handle-busy",
    "engine-busy",
    "gpu-memory-freed",
    "interrupted",
    "aborted",
    "engine",
    "dma-mapping",
    "timeout-range",
    "card-protocol",
    "no-frame-queued",
    "frame-event",
    "frame-sequence",
    "frame-slot",
    "frame-length",
    "card-gone",
    "kernel",
];

impl Error {
    /// The stable name of the rule this error broke (`"alignment"`, `"card-bounds"`,
    /// `"buffer-bounds"`, `"length-nonzero"`, `"handle-valid"`, `"channel-range"`,
    /// `"timeout"`, `"timeout-nonzero"`, `"no-overlap"`, `"registered-buffer"`,
    /// `"capability"`, `"card-present"`, `"memory"`, `"cuda"`, `"frame"`, and for
    /// [`Error::Kernel`] the rule it carries).
    pub fn rule(&self) -> &'static str {
        match self {
            Error::Alignment { .. } => "alignment",
            Error::CardBounds { .. } => "card-bounds",
            Error::BufferBounds { .. } => "buffer-bounds",
            Error::ZeroLength { .. } => "length-nonzero",
            Error::UnknownHandle { .. } => "handle-valid",
            Error::ChannelRange { .. } => "channel-range",
            Error::Timeout { .. } | Error::NoFrame { .. } => "timeout",
            Error::ZeroTimeout => "timeout-nonzero",
            Error::Overlap { .. } => "no-overlap",
            Error::NotRegistered { .. } => "registered-buffer",
            Error::Unsupported { .. } => "capability",
            Error::NoCard { .. } => "card-present",
            Error::Alloc { .. } => "memory",
            Error::Cuda(_) => "cuda",
            Error::Frame(_) => "frame",
            Error::Kernel { rule, .. } => rule,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variant's rule is in [`RULES`] (one value per variant; `rule` matches them
    /// all, so a new variant shows up in its match and here).
    #[test]
    fn every_variant_rule_is_listed() {
        let d = Direction::C2H;
        let t = Duration::from_millis(1);
        let all = [
            Error::Alignment {
                what: "a",
                value: 1,
                required: 4096,
                platform: "tegra",
            },
            Error::CardBounds {
                card_addr: 0,
                len: 1,
                card_memory: 0,
            },
            Error::BufferBounds {
                offset: 0,
                len: 1,
                buffer_len: 0,
            },
            Error::ZeroLength { what: "transfer" },
            Error::UnknownHandle { handle: 1 },
            Error::ChannelRange {
                dir: d,
                channel: 9,
                count: 4,
            },
            Error::Timeout {
                dir: d,
                len: 1,
                timeout: t,
            },
            Error::NoFrame { timeout: t },
            Error::ZeroTimeout,
            Error::Overlap {
                addr: 0,
                len: 1,
                other_addr: 0,
                other_len: 1,
            },
            Error::NotRegistered { addr: 0, len: 1 },
            Error::Unsupported {
                what: "x",
                card: "c".into(),
            },
            Error::NoCard {
                path: "/dev/x".into(),
                reason: "r".into(),
            },
            Error::Alloc {
                len: 1,
                kind: "host",
                reason: "r".into(),
            },
            Error::Cuda("x".into()),
            Error::Frame(crate::frame::FrameError::Source("x".into())),
        ];
        for e in &all {
            assert!(RULES.contains(&e.rule()), "{} missing from RULES", e.rule());
            assert!(
                e.to_string().starts_with(&format!("rule {}: ", e.rule())) || e.rule() == "frame",
                "{e}"
            );
        }
    }
}

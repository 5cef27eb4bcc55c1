//! The kernel back-end's frame trigger: the card's frame-done events, as the module
//! queues them for an open file (`FPGAGDR_IOC_WAIT_FRAME`, `docs/card-protocol.md`).
//!
//! Owns: [`KernelTrigger`] (a [`FrameTrigger`]) and [`FrameInfo`] (the card's slot
//! geometry and the module's frame counters, `FPGAGDR_IOC_FRAME_INFO`).
//! Must not: move frame bytes (the capture loop's C2H does, through
//! [`crate::Card`]); it only says where a frame is and when it arrived.
//! Neighbours: `mod.rs` hands it out ([`crate::Backend::frame_trigger`]), `convert.rs`
//! maps the errnos.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use fpgagdr_uapi::{self as uapi, Errno};

use super::convert::{self, Call};
use crate::error::{Error, Result};
use crate::status::CardStatus;
use crate::trigger::{FrameSlot, FrameTrigger};

/// The card's frame protocol as the module found it when it bound the card
/// (`FPGAGDR_IOC_FRAME_INFO`), with the module's frame-event counters (all open files).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct FrameInfo {
    /// The card's protocol version register: major in bits 31:16, minor in 15:0.
    pub proto_version: u32,
    /// N: frame slots on the card; the frame of sequence s is in slot s mod N.
    pub slot_count: u32,
    /// Bytes per slot; every frame, header included, fits.
    pub slot_size: u32,
    /// The XDMA user interrupt (`usr_irq_req` bit) that signals frame-done.
    pub user_irq: u32,
    /// Card (AXI) address of slot 0; slot i is at `slot_base + i * slot_size`.
    pub slot_base: u64,
    /// Frame-done events the module took from the card.
    pub events: u64,
    /// Frames the card completed that no interrupt reported (sequence gaps).
    pub missed: u64,
    /// Events dropped because an open file's queue was full.
    pub queue_overflows: u64,
    /// Events refused for breaking the protocol.
    pub protocol_errors: u64,
}

/// `FPGAGDR_IOC_FRAME_INFO` on `ctl`: the protocol's state, or the error naming the rule
/// the card broke (`card-protocol`: no user register block, wrong magic or version, a
/// slot geometry the module refused).
pub(super) fn frame_info(
    ctl: &File,
    path: &std::path::Path,
    card: &CardStatus,
) -> Result<FrameInfo> {
    let mut req = uapi::fpgagdr_frame_info::new();
    #[allow(unsafe_code)]
    // SAFETY: `ctl` is an fpgagdr control node (GET_STATUS answered on it at open);
    // `req` is a live, exclusively borrowed request of the size the number encodes.
    let r = unsafe { uapi::ioctl::frame_info(ctl.as_fd(), &mut req) };
    r.map_err(|errno| convert::kernel_error(&Call::FrameInfo, errno, path, card))?;
    if req.state != uapi::FPGAGDR_FRAMES_OK {
        return Err(convert::frames_state_error(&req, path));
    }
    Ok(FrameInfo {
        proto_version: req.proto_version,
        slot_count: req.slot_count,
        slot_size: req.slot_size,
        user_irq: req.user_irq,
        slot_base: req.slot_base,
        events: req.events,
        missed: req.missed,
        queue_overflows: req.queue_overflows,
        protocol_errors: req.protocol_errors,
    })
}

/// The frame-done events of a card driven by the kernel module: each
/// [`FrameTrigger::wait_frame`] is one `FPGAGDR_IOC_WAIT_FRAME` (bounded, interruptible;
/// the module subscribes the open file on its first call and queues every later event
/// for it, at most 64). The frame's arrival is the interrupt handler's
/// `ktime_get_ns()`, carried onto this process's clock.
///
/// It waits on its own duplicate of the card's control node (the same open file, so
/// the same pins and event queue); `poll()` on [`AsFd::as_fd`] reports a queued event
/// for event loops. Dropping it (and the card) ends the subscription.
#[derive(Debug)]
pub struct KernelTrigger {
    ctl: File,
    path: PathBuf,
    card: CardStatus,
    info: FrameInfo,
    /// Sequence of the last event returned, to name a backwards sequence.
    last_seq: Option<u64>,
}

impl KernelTrigger {
    /// A trigger over `ctl` (a duplicate of the card's control node).
    ///
    /// Errors: [`Error::Kernel`] with rule `card-protocol` when the card does not speak
    /// the frame protocol (the message names which part: user register block, magic,
    /// version, slot geometry, interrupt number); the module's errors.
    pub(super) fn new(ctl: File, path: PathBuf, card: CardStatus) -> Result<KernelTrigger> {
        let info = frame_info(&ctl, &path, &card)?;
        Ok(KernelTrigger {
            ctl,
            path,
            card,
            info,
            last_seq: None,
        })
    }

    /// The card's frame protocol as the module found it at bind time, with the
    /// counters as they were when this trigger was made.
    pub fn info(&self) -> FrameInfo {
        self.info
    }

    /// The module's frame counters now (one `FRAME_INFO`).
    pub fn read_info(&self) -> Result<FrameInfo> {
        frame_info(&self.ctl, &self.path, &self.card)
    }

    /// Ends every [`FrameTrigger::wait_frame`] of this open file now (`ABORT` with
    /// `FPGAGDR_ABORT_WAITS`; they fail with rule `aborted`); queued events stay.
    pub fn wake(&self) -> Result<()> {
        let mut req = uapi::fpgagdr_abort {
            flags: uapi::FPGAGDR_ABORT_WAITS,
            ..uapi::fpgagdr_abort::new()
        };
        #[allow(unsafe_code)]
        // SAFETY: `ctl` is the card's control node; `req` a live, exclusively borrowed
        // request.
        let r = unsafe { uapi::ioctl::abort(self.ctl.as_fd(), &mut req) };
        r.map_err(|errno| convert::kernel_error(&Call::WakeWaits, errno, &self.path, &self.card))
    }

    /// The error of an event the module returned with EBADMSG, naming what the card
    /// broke.
    fn protocol_error(&self, ev: &uapi::fpgagdr_wait_frame) -> Error {
        let n = u64::from(self.info.slot_count.max(1));
        let (rule, what) = if self.last_seq.is_some_and(|p| ev.sequence <= p) {
            (
                "frame-sequence",
                format!(
                    "sequence {} does not follow the previous frame's {} (sequences only grow)",
                    ev.sequence,
                    self.last_seq.unwrap_or(0)
                ),
            )
        } else if u64::from(ev.slot) != ev.sequence % n {
            (
                "frame-slot",
                format!(
                    "frame {} is in slot {}, but slot = sequence mod {n} = {}",
                    ev.sequence,
                    ev.slot,
                    ev.sequence % n
                ),
            )
        } else {
            (
                "frame-length",
                format!(
                    "frame {} is {} bytes long: a frame is at least its {}-byte header and at \
                     most the slot's {} bytes",
                    ev.sequence,
                    ev.length,
                    uapi::FPGAGDR_FRAME_HEADER_LEN,
                    self.info.slot_size
                ),
            )
        };
        Error::Kernel {
            rule,
            op: "WAIT_FRAME",
            errno: Errno::EBADMSG as i32,
            detail: format!(
                "{}: the card broke the frame protocol (docs/card-protocol.md): {what}",
                self.path.display()
            ),
        }
    }
}

impl AsFd for KernelTrigger {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.ctl.as_fd()
    }
}

/// `CLOCK_MONOTONIC` now, ns: the clock of the module's `ktime_get_ns()`.
fn monotonic_ns() -> Option<u64> {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).ok()?;
    u64::try_from(t.tv_sec())
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(u64::try_from(t.tv_nsec()).ok()?)
}

/// The instant, on this process's clock, that was `arrival_ns` of `CLOCK_MONOTONIC`.
fn arrival(arrival_ns: u64) -> Instant {
    let now = Instant::now();
    let age = monotonic_ns().map_or(0, |m| m.saturating_sub(arrival_ns));
    now.checked_sub(Duration::from_nanos(age)).unwrap_or(now)
}

impl FrameTrigger for KernelTrigger {
    /// One `WAIT_FRAME`, bounded by `timeout` rounded up to whole ms (1..=60000).
    ///
    /// Errors: [`Error::NoFrame`] (rule `timeout`) when no frame came in time; rule
    /// `frame-sequence`, `frame-slot` or `frame-length` when the card broke the protocol
    /// (the event is skipped; the next call goes on); `card-protocol`, `interrupted`,
    /// `aborted`, `card-present` and the module's other errors.
    fn wait_frame(&mut self, timeout: Duration) -> Result<FrameSlot> {
        if timeout.is_zero() {
            return Err(Error::ZeroTimeout);
        }
        let ms = timeout.as_nanos().div_ceil(1_000_000);
        let ms = u32::try_from(ms)
            .ok()
            .filter(|&ms| ms <= uapi::FPGAGDR_TIMEOUT_MAX_MS)
            .ok_or_else(|| Error::Kernel {
                rule: "timeout-range",
                op: "WAIT_FRAME",
                errno: 0,
                detail: format!(
                    "a frame wait of {timeout:?} is over the module's {} ms limit",
                    uapi::FPGAGDR_TIMEOUT_MAX_MS
                ),
            })?;
        let mut ev = uapi::fpgagdr_wait_frame {
            timeout_ms: ms,
            ..uapi::fpgagdr_wait_frame::new()
        };
        #[allow(unsafe_code)]
        // SAFETY: `ctl` is the card's control node; `ev` a live, exclusively borrowed
        // request of the size the number encodes.
        let r = unsafe { uapi::ioctl::wait_frame(self.ctl.as_fd(), &mut ev) };
        match r {
            Ok(()) => {}
            Err(Errno::EBADMSG) => {
                let e = self.protocol_error(&ev);
                self.last_seq = Some(self.last_seq.map_or(ev.sequence, |p| p.max(ev.sequence)));
                return Err(e);
            }
            Err(errno) => {
                return Err(convert::kernel_error(
                    &Call::WaitFrame { timeout },
                    errno,
                    &self.path,
                    &self.card,
                ));
            }
        }
        self.last_seq = Some(ev.sequence);
        Ok(FrameSlot {
            card_addr: self.info.slot_base + u64::from(ev.slot) * u64::from(self.info.slot_size),
            len: u64::from(ev.length),
            seq: ev.sequence,
            epoch: ev.epoch,
            slot: ev.slot,
            missed: ev.missed,
            queue_overflow: ev.overflows.min(ev.missed),
            arrived: arrival(ev.arrival_ns),
        })
    }

    fn max_frame_len(&self) -> usize {
        self.info.slot_size as usize
    }

    fn slots(&self) -> u32 {
        self.info.slot_count
    }

    fn describe(&self) -> String {
        format!(
            "frame-done interrupts of {} (user IRQ {}): {} slots of {} bytes at card address {:#x}, protocol {}.{}",
            self.path.display(),
            self.info.user_irq,
            self.info.slot_count,
            self.info.slot_size,
            self.info.slot_base,
            self.info.proto_version >> 16,
            self.info.proto_version & 0xffff
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrival_is_carried_onto_this_process_clock() {
        let now = monotonic_ns().expect("CLOCK_MONOTONIC");
        let a = arrival(now - 5_000_000);
        let age = a.elapsed();
        assert!(age >= Duration::from_millis(5), "{age:?}");
        assert!(age < Duration::from_secs(5), "{age:?}");
        // An arrival in the future (clock read races) is now, never later.
        assert!(arrival(now + 1_000_000_000).elapsed() < Duration::from_secs(1));
    }
}

//! The handles a C program holds: open cards and their pinned buffers.
//!
//! Owns: the process-wide registry of open cards ([`open_card`], [`card`],
//! [`close_card`]) and each card's table of pinned buffers ([`CardEntry`]). A card
//! handle is a key into the registry disguised as a pointer; it is never dereferenced,
//! so a handle that was never issued or was closed is an error (`card-handle`), never
//! a crash. Calls in flight keep their card alive (an `Arc`), so `fpgagdr_close` on
//! another thread waits for nothing and breaks nothing: the card goes when the last
//! call using it returns.
//! Must not: know the C structs (`types.rs`) or errnos beyond [`Fail`] (`rules.rs`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use fpgagdr::{Card, FrameTrigger, PinnedBuffer};

use crate::rules::Fail;
use crate::types::{fpgagdr_buffer, fpgagdr_card};

/// One open card: the library's [`Card`], its pinned buffers, its frame trigger.
pub(crate) struct CardEntry {
    pub(crate) card: Card,
    buffers: Mutex<HashMap<u64, Arc<PinnedBuffer>>>,
    /// The card's frame trigger behind a mutex that serialises frame waits (a trigger is
    /// `&mut`), or why the card has none (taken at open: rule `card-protocol` for a
    /// card that does not speak `docs/card-protocol.md`).
    trigger: Result<Mutex<Box<dyn FrameTrigger>>, Fail>,
}

static CARDS: LazyLock<Mutex<HashMap<usize, Arc<CardEntry>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));
/// Card keys: multiples of 16 from 0x10, so a handle looks like (and is as unlikely to
/// collide with a stray integer as) an aligned pointer.
static NEXT_CARD: AtomicU64 = AtomicU64::new(1);
/// Buffer ids, process-wide: a handle of one card is unknown to every other card.
static NEXT_BUFFER: AtomicU64 = AtomicU64::new(1);

fn registry() -> MutexGuard<'static, HashMap<usize, Arc<CardEntry>>> {
    // A panic while holding the map cannot leave it half-changed (insert/remove only).
    CARDS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Registers `card` with its frame trigger (or the error the back-end gave for it,
/// which the frame calls answer) and returns the handle a C program holds.
pub(crate) fn open_card(
    card: Card,
    trigger: Result<Box<dyn FrameTrigger>, Fail>,
) -> *mut fpgagdr_card {
    let key = (NEXT_CARD.fetch_add(1, Ordering::Relaxed) as usize) << 4;
    let entry = CardEntry {
        card,
        buffers: Mutex::new(HashMap::new()),
        trigger: trigger.map(Mutex::new),
    };
    registry().insert(key, Arc::new(entry));
    std::ptr::without_provenance_mut(key)
}

fn key_of(handle: *const fpgagdr_card) -> Result<usize, Fail> {
    if handle.is_null() {
        return Err(Fail::null("card"));
    }
    Ok(handle.addr())
}

fn bad_card(handle: *const fpgagdr_card) -> Fail {
    Fail::rule(
        "card-handle",
        format_args!(
            "card {handle:p} was never returned by fpgagdr_open/fpgagdr_open_sim, or is closed"
        ),
    )
}

/// The open card behind `handle`. Errors: `null-pointer`, `card-handle`.
pub(crate) fn card(handle: *const fpgagdr_card) -> Result<Arc<CardEntry>, Fail> {
    let key = key_of(handle)?;
    registry()
        .get(&key)
        .cloned()
        .ok_or_else(|| bad_card(handle))
}

/// Forgets `handle`; the card (and every buffer still pinned or registered on it) is
/// released when the last call using it returns. Errors: `null-pointer`, `card-handle`.
pub(crate) fn close_card(handle: *mut fpgagdr_card) -> Result<(), Fail> {
    let key = key_of(handle)?;
    let entry = registry().remove(&key).ok_or_else(|| bad_card(handle))?;
    // Unpin outside the registry lock (a kernel unpin is a syscall).
    drop(entry);
    Ok(())
}

impl CardEntry {
    /// The card's frame trigger, locked: waits on one card are serialised. Errors: the
    /// back-end's error when the card has no trigger (rule `card-protocol` on a card
    /// without the frame protocol, `capability` on a back-end without triggers).
    pub(crate) fn trigger(&self) -> Result<MutexGuard<'_, Box<dyn FrameTrigger>>, Fail> {
        match &self.trigger {
            // A panic inside a wait leaves the trigger as usable as any failed wait.
            Ok(t) => Ok(t.lock().unwrap_or_else(|p| p.into_inner())),
            Err(fail) => Err(fail.clone()),
        }
    }

    /// Whether the card has a frame trigger (`FPGAGDR_CAP_FRAME_TRIGGER`).
    pub(crate) fn has_trigger(&self) -> bool {
        self.trigger.is_ok()
    }

    fn buffers(&self) -> MutexGuard<'_, HashMap<u64, Arc<PinnedBuffer>>> {
        self.buffers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps `buf` and returns its handle.
    pub(crate) fn add_buffer(&self, buf: PinnedBuffer) -> fpgagdr_buffer {
        let id = NEXT_BUFFER.fetch_add(1, Ordering::Relaxed);
        self.buffers().insert(id, Arc::new(buf));
        fpgagdr_buffer { id }
    }

    fn unknown(buf: fpgagdr_buffer) -> Fail {
        Fail::rule(
            "handle-valid",
            format_args!(
                "buffer handle {} is unknown to this card or already unpinned",
                buf.id
            ),
        )
    }

    /// The pinned buffer behind `buf`. Errors: `handle-valid`.
    pub(crate) fn buffer(&self, buf: fpgagdr_buffer) -> Result<Arc<PinnedBuffer>, Fail> {
        self.buffers()
            .get(&buf.id)
            .cloned()
            .ok_or_else(|| Self::unknown(buf))
    }

    /// Forgets `buf` and unpins it, reporting the back-end's error; if a transfer on it
    /// is still running on another thread, the unpin happens when that transfer
    /// returns. Errors: `handle-valid`, the back-end's unpin errors.
    pub(crate) fn remove_buffer(&self, buf: fpgagdr_buffer) -> Result<(), Fail> {
        let arc = self
            .buffers()
            .remove(&buf.id)
            .ok_or_else(|| Self::unknown(buf))?;
        match Arc::try_unwrap(arc) {
            Ok(pinned) => pinned.unpin().map(drop).map_err(Fail::from),
            Err(_in_use) => Ok(()),
        }
    }
}

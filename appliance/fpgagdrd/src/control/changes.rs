//! The one-at-a-time rule of changes (a config change, start, stop), with its bounded
//! waits.
//!
//! Owns: [`Changes`]. Must not: know what a change does (the control room's `mod.rs`
//! does).

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::time::Duration;

use super::error::ControlError;

/// The one-at-a-time rule of changes (config, start, stop): a change waits its turn at
/// most `wait`, and one whose pipeline took longer than that to build is left to finish
/// on its own while later changes are refused (`change-busy`) until it has.
#[derive(Debug, Clone)]
pub struct Changes {
    lock: Arc<tokio::sync::Mutex<()>>,
    /// Builds abandoned after their time ran out and still running.
    abandoned: Arc<AtomicUsize>,
    wait: Duration,
}

impl Changes {
    /// Changes that wait at most `wait` for their turn and for their pipeline.
    pub fn new(wait: Duration) -> Changes {
        Changes {
            lock: Arc::default(),
            abandoned: Arc::default(),
            wait,
        }
    }

    /// How long a change may wait for its turn, and for its pipeline to be built.
    pub fn wait(&self) -> Duration {
        self.wait
    }

    /// This change's turn, or [`ControlError::Busy`] when an abandoned build still runs
    /// or the turn did not come within [`Changes::wait`].
    pub async fn turn(&self) -> Result<tokio::sync::MutexGuard<'_, ()>, ControlError> {
        let busy = |message: String| ControlError::Busy {
            message,
            retry_after_s: 5,
        };
        let guard = tokio::time::timeout(self.wait, self.lock.lock())
            .await
            .map_err(|_| {
                busy(format!(
                    "rule change-busy: another change did not finish within {} s (--change-timeout-s); retry later",
                    self.wait.as_secs()
                ))
            })?;
        if self.abandoned.load(Ordering::Acquire) > 0 {
            return Err(busy(
                "rule change-busy: a pipeline whose build ran out of time (--change-timeout-s) is still being built; retry later"
                    .into(),
            ));
        }
        Ok(guard)
    }

    /// Runs `f` (a pipeline build) off the async workers within [`Changes::wait`];
    /// when it takes longer, the change is answered with `timed_out` and `f` finishes on
    /// its own, counted as abandoned until then (its result is dropped).
    pub async fn build<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
        timed_out: impl FnOnce() -> ControlError,
    ) -> Result<T, ControlError> {
        // 0: running; 1: its result was taken; 2: given up on (it drops the result).
        let fate = Arc::new(AtomicU8::new(0));
        let (mine, abandoned) = (fate.clone(), self.abandoned.clone());
        let mut task = tokio::task::spawn_blocking(move || {
            let out = f();
            if mine
                .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                Some(out)
            } else {
                drop(out);
                fpgagdr::heap::release_freed();
                abandoned.fetch_sub(1, Ordering::AcqRel);
                None
            }
        });
        let joined = match tokio::time::timeout(self.wait, &mut task).await {
            Ok(joined) => joined,
            Err(_) => {
                self.abandoned.fetch_add(1, Ordering::AcqRel);
                if fate
                    .compare_exchange(0, 2, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    return Err(timed_out());
                }
                // It finished just now: its result is ours after all.
                self.abandoned.fetch_sub(1, Ordering::AcqRel);
                task.await
            }
        };
        match joined {
            Ok(Some(out)) => Ok(out),
            Ok(None) => Err(timed_out()),
            Err(e) => Err(ControlError::Internal(e.to_string())),
        }
    }
}

/// Runs blocking work (joining pipeline threads, reading files) off the async workers; a
/// panic there becomes [`ControlError::Internal`].
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ControlError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ControlError::Internal(e.to_string()))
}

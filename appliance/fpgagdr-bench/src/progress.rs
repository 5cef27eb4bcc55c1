//! Progress on long runs and a clean Ctrl-C.
//!
//! Owns: [`Progress`] (an indicatif bar with an estimate of the time left, on stderr, hidden
//! when stderr is not a terminal or `--json` was given) and the Ctrl-C flag
//! ([`install_ctrl_c`], [`interrupted`]): the first Ctrl-C asks the running subcommand to
//! stop after the transfer in flight and write what it measured; a second one ends the
//! process at once (exit 130).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

static QUIET: AtomicBool = AtomicBool::new(false);
static CTRL_C: AtomicU8 = AtomicU8::new(0);

/// Hides every bar from now on (`--json`).
pub(crate) fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Installs the Ctrl-C handler; a failure (another handler already installed) is ignored:
/// Ctrl-C then ends the process as usual.
pub(crate) fn install_ctrl_c() {
    let _ = ctrlc::set_handler(|| {
        if CTRL_C.fetch_add(1, Ordering::SeqCst) >= 1 {
            std::process::exit(130);
        }
        eprintln!(
            "\nfpgagdr-bench: interrupted; finishing the transfer in flight and writing what was measured (Ctrl-C again to quit at once)"
        );
    });
}

/// Whether Ctrl-C was pressed: loops stop and report what they have.
pub(crate) fn interrupted() -> bool {
    CTRL_C.load(Ordering::Relaxed) > 0
}

/// A bar over `total` steps.
pub(crate) struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar titled `what`; hidden when quiet or stderr is not a terminal.
    pub(crate) fn new(what: &str, total: u64) -> Progress {
        let visible = !QUIET.load(Ordering::Relaxed) && std::io::stderr().is_terminal();
        let bar = if visible {
            ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
        } else {
            ProgressBar::hidden()
        };
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix} [{bar:30}] {pos}/{len} {msg} (about {eta} left)",
            )
            .expect("the template is valid")
            .progress_chars("=> "),
        );
        bar.set_prefix(what.to_string());
        Progress { bar }
    }

    /// Advances by `n` steps.
    pub(crate) fn inc(&mut self, n: u64) {
        self.bar.inc(n);
    }

    /// Sets the text after the counts (the cell being measured).
    pub(crate) fn message(&mut self, m: String) {
        self.bar.set_message(m);
    }

    /// Removes the bar.
    pub(crate) fn finish(&mut self) {
        self.bar.finish_and_clear();
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

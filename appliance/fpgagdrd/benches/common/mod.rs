//! What the service benchmarks (`api_load`, `config_rss`, `conn_load`) share: the real
//! `fpgagdrd` started on a free loopback port with a config of the benchmark's choosing,
//! and killed when dropped. Not every benchmark uses every item, hence the `dead_code`
//! allowance (as in `tests/common`).
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The API token the benchmarks' services accept (`FPGAGDR_TOKEN`).
pub(crate) const TOKEN: &str = "bench-token-0123456789abcdef";

/// A running `fpgagdrd`; dropping it kills the process.
pub(crate) struct Service {
    pub(crate) child: Child,
    /// `http://127.0.0.1:PORT`, as the service printed it.
    pub(crate) base: String,
    _dir: tempfile::TempDir,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `fpgagdrd` (`FPGAGDRD_BIN` when the benchmark runs away from its build tree,
/// else this build's) on `127.0.0.1:0` with `config` (JSON) written into `dir`, which
/// the service keeps; `extra` adds arguments or environment. Warnings only on stderr.
/// Panics when the service has not printed its dashboard address within 60 s.
pub(crate) fn start(
    dir: tempfile::TempDir,
    config: &str,
    extra: impl FnOnce(&mut Command),
) -> Service {
    let path = dir.path().join("config.json");
    std::fs::write(&path, config).expect("write config");
    let bin =
        std::env::var_os("FPGAGDRD_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_fpgagdrd").into());
    let mut cmd = Command::new(bin);
    cmd.args(["--listen", "127.0.0.1:0", "--config"])
        .arg(&path)
        .env("FPGAGDR_TOKEN", TOKEN)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    extra(&mut cmd);
    let mut child = cmd.spawn().expect("spawn fpgagdrd");
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("fpgagdrd: dashboard at ") {
                let _ = tx.send(url.trim_end_matches('/').to_string());
            }
        }
    });
    let base = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("fpgagdrd printed its address");
    Service {
        child,
        base,
        _dir: dir,
    }
}

//! What the service benchmarks (`api_load`, `config_rss`, `conn_load`, `mqtt_cost`) share: the real
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

/// A process's CPU time so far, user + system, all its threads, seconds
/// (`/proc/PID/stat` fields 14 and 15, in clock ticks of `USER_HZ`); 0 when the process
/// is gone.
pub(crate) fn cpu_s(pid: u32) -> f64 {
    stat_cpu_s(&format!("/proc/{pid}/stat"))
}

/// The CPU time so far, seconds, of the threads of process `pid` named `name`
/// (`/proc/PID/task/TID/comm`; a thread's name is cut at 15 bytes); 0 when none.
pub(crate) fn thread_cpu_s(pid: u32, name: &str) -> f64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0.0;
    };
    tasks
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim_end() == name)
        })
        .map(|t| stat_cpu_s(&t.path().join("stat").to_string_lossy()))
        .sum()
}

/// User + system time of a `/proc/.../stat` file, seconds.
fn stat_cpu_s(path: &str) -> f64 {
    let stat = std::fs::read_to_string(path).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    // `rest` starts at field 3 (state): utime is field 14, stime 15.
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    // USER_HZ, the unit of /proc's times: 100 on x86-64 and arm64 (proc(5)).
    ticks as f64 / 100.0
}

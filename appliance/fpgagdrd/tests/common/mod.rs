//! Helpers for the service tests: finding the run-time dependencies, starting the real
//! `fpgagdrd` binary on a free port with a config file of the test's choosing (killed
//! when the [`Service`] guard drops), a small HTTP client, and bounded polling.
//! Not every test uses every helper, hence the `dead_code` allowance.
#![allow(dead_code)]

pub(crate) mod rauc;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long any wait in these tests may take before it counts as a failure. Generous:
/// the tests run unoptimised, in parallel, on small CI machines.
pub(crate) const PATIENCE: Duration = Duration::from_secs(30);
/// How long a started service may take to print its dashboard address: it checks the
/// configured model first, and `slow.onnx` alone takes ~30 s to prepare on a loaded
/// 2-core machine. A bound against a service that never comes up, not a speed claim.
const STARTUP_PATIENCE: Duration = Duration::from_secs(120);
/// Pause between two polls.
const POLL: Duration = Duration::from_millis(50);

/// The multiplier for this module's bounded waits ([`PATIENCE`] in [`wait_for`],
/// [`run_to_exit`] and the HTTP client's timeout, and the startup bound), from
/// `$FPGAGDR_TEST_TIME_SCALE` (a number ≥ 1; default 1). Emulated runs set it: under
/// `qemu-user` one inferred frame takes seconds (appliance/scripts/arm64-tests.sh).
/// Panics, naming the variable, on a value that is not a finite number ≥ 1.
pub(crate) fn time_scale() -> f64 {
    match std::env::var("FPGAGDR_TEST_TIME_SCALE") {
        Err(_) => 1.0,
        Ok(v) => match v.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 1.0 => x,
            _ => panic!("FPGAGDR_TEST_TIME_SCALE={v:?}: must be a number ≥ 1"),
        },
    }
}

/// [`PATIENCE`] times [`time_scale`].
pub(crate) fn patience() -> Duration {
    PATIENCE.mul_f64(time_scale())
}

/// The program (and its arguments, split on whitespace) that runs the binaries these
/// tests spawn, from `$FPGAGDR_TEST_RUNNER`; empty when unset. Cargo's target runner
/// runs the test itself under emulation (e.g. `qemu-aarch64 -L /usr/aarch64-linux-gnu`)
/// but the kernel cannot exec a foreign `fpgagdrd` the test starts without `binfmt_misc`;
/// this runner goes in front of it instead (appliance/scripts/arm64-tests.sh).
fn runner() -> Vec<String> {
    std::env::var("FPGAGDR_TEST_RUNNER")
        .map(|v| v.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}
/// The API token every test service is started with (through `FPGAGDR_TOKEN`), unless
/// the test asks for none; [`Service::request`] sends it with every mutating request.
pub(crate) const TOKEN: &str = "test-token-0123456789abcdef";

/// Where `appliance/scripts/fetch-deps.sh` puts things, relative to this crate.
fn deps_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.deps")
}

fn existing(var: &str, default: PathBuf, what: &str) -> PathBuf {
    let path = std::env::var_os(var).map_or(default, PathBuf::from);
    assert!(
        path.exists(),
        "{what} not found at {} (from {var} or its default): run appliance/scripts/fetch-deps.sh",
        path.display()
    );
    path
}

/// The ONNX Runtime library: `$ORT_DYLIB_PATH`, else `.deps/onnxruntime/libonnxruntime.so`.
/// Panics, naming the fetch script, when it is missing.
pub(crate) fn ort_library() -> PathBuf {
    existing(
        "ORT_DYLIB_PATH",
        deps_dir().join("onnxruntime/libonnxruntime.so"),
        "ONNX Runtime",
    )
}

/// The data directory (model and frames): `$FPGAGDR_DATA_DIR`, else `.deps/share`.
/// Panics, naming the fetch script, when it or the default model is missing.
pub(crate) fn data_dir() -> PathBuf {
    let dir = existing(
        "FPGAGDR_DATA_DIR",
        deps_dir().join("share"),
        "data directory",
    );
    let model = dir.join("models/efficientnet-lite0.onnx");
    assert!(
        model.is_file(),
        "default model {} is missing: run appliance/scripts/fetch-deps.sh",
        model.display()
    );
    dir
}

/// Absolute path of one of the fetched frames (`chelsea.png`, `coffee.png`, ...).
pub(crate) fn frame(name: &str) -> PathBuf {
    let p = data_dir().join("frames").join(name);
    assert!(
        p.is_file(),
        "frame {} is missing: run appliance/scripts/fetch-deps.sh",
        p.display()
    );
    p
}

/// A config that replays one image at 50 frames/s on the simulated card with no link
/// model, the model on one thread (tests run side by side on small machines). Under a
/// [`time_scale`] above 1 the rate is divided by it: emulated, capturing 50 frames/s
/// takes the CPU the inference of the first frame needs.
pub(crate) fn replay(image: &str) -> Value {
    let scale = time_scale();
    let fps = if scale > 1.0 {
        json!(50.0 / scale)
    } else {
        json!(50)
    };
    json!({
        "source": {"kind": "replay", "path": frame(image), "fps": fps},
        "card": {"sim_link": "off"},
        "inference": {"threads": 1},
    })
}

/// Polls `probe` every 50 ms until it gives `Ok`, for at most [`patience`]; the panic
/// message carries `what` and the last `Err` (what was seen instead).
pub(crate) fn wait_for<T>(what: &str, mut probe: impl FnMut() -> Result<T, String>) -> T {
    let patience = patience();
    let deadline = Instant::now() + patience;
    loop {
        match probe() {
            Ok(v) => return v,
            Err(seen) if Instant::now() >= deadline => {
                panic!("waited {patience:?} for {what}; last seen: {seen}")
            }
            Err(_) => thread::sleep(POLL),
        }
    }
}

/// One HTTP reply, read whole.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: ureq::http::HeaderMap,
    pub(crate) body: String,
}

impl Reply {
    /// A header's value ("" when absent).
    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The body as JSON; panics with the body when it is not.
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.body))
    }

    /// Asserts an RFC 9457 problem of `status` and `rule`; returns the problem.
    #[track_caller]
    pub(crate) fn problem(&self, status: u16, rule: &str) -> Value {
        assert_eq!(self.status, status, "status of {}", self.body);
        assert_eq!(
            self.header("content-type"),
            "application/problem+json",
            "content type of {}",
            self.body
        );
        let p = self.json();
        assert_eq!(p["type"], format!("urn:fpgagdr:problem:{rule}"), "{p}");
        assert_eq!(p["status"], status, "{p}");
        assert!(p["title"].as_str().is_some_and(|t| !t.is_empty()), "{p}");
        assert!(p["detail"].as_str().is_some_and(|t| !t.is_empty()), "{p}");
        p
    }

    /// `(field, rule)` of every entry of the problem's `errors[]`.
    pub(crate) fn field_errors(&self) -> Vec<(String, String)> {
        self.json()["errors"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|e| {
                        (
                            e["field"].as_str().unwrap_or("?").to_string(),
                            e["rule"].as_str().unwrap_or("?").to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// A running `fpgagdrd` with its own config file in a temporary directory. Dropping it
/// kills the process (and, when the test is failing, prints the service's log).
pub(crate) struct Service {
    child: Child,
    /// `http://127.0.0.1:PORT` (no trailing slash).
    pub(crate) base: String,
    /// The config file the service was started with.
    pub(crate) config_path: PathBuf,
    /// The token sent with mutating requests: [`TOKEN`], or the one the service
    /// printed when it generated its own.
    pub(crate) token: String,
    /// Lines the service printed on stdout before its `dashboard at` line.
    pub(crate) stdout_head: Vec<String>,
    log_path: PathBuf,
    agent: ureq::Agent,
    _dir: tempfile::TempDir,
}

fn command(config: &Path, log: &Path, token: Option<&str>) -> Command {
    command_wrapped(&[], config, log, token)
}

/// As [`command`], run through `wrapper` (a program and its arguments, e.g. `prlimit
/// --nofile=256:256`) when it is not empty, then through [`runner`] when one is set.
fn command_wrapped(wrapper: &[&str], config: &Path, log: &Path, token: Option<&str>) -> Command {
    let runner = runner();
    let mut line: Vec<&std::ffi::OsStr> = wrapper.iter().map(std::ffi::OsStr::new).collect();
    line.extend(runner.iter().map(std::ffi::OsStr::new));
    line.push(std::ffi::OsStr::new(env!("CARGO_BIN_EXE_fpgagdrd")));
    let mut cmd = Command::new(line[0]);
    cmd.args(&line[1..]);
    match token {
        Some(t) => cmd.env("FPGAGDR_TOKEN", t),
        None => cmd.env_remove("FPGAGDR_TOKEN"),
    };
    // The test models (tests/data) and the frames tests write to temporary directories
    // lie outside the data directory: roots of their own (issue 18).
    cmd.arg("--model-root")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data"))
        .arg("--frames-root")
        .arg(std::env::temp_dir());
    cmd.args(["--listen", "127.0.0.1:0", "--config"])
        .arg(config)
        .env("ORT_DYLIB_PATH", ort_library())
        .env("FPGAGDR_DATA_DIR", data_dir())
        .env("RUST_LOG", "fpgagdrd=info,fpgagdr=info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        // A file, not a pipe: nobody has to drain it for the service to keep logging.
        .stderr(std::fs::File::create(log).expect("create log file"));
    cmd
}

/// Runs the binary with a config file holding `text` and waits (bounded) for it to
/// exit by itself; returns its exit status, stdout and stderr.
pub(crate) fn run_to_exit(text: &str) -> (ExitStatus, String, String) {
    run_to_exit_with(text, &[])
}

/// As [`run_to_exit`], with extra command-line arguments.
pub(crate) fn run_to_exit_with(text: &str, args: &[&str]) -> (ExitStatus, String, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (config, log) = (dir.path().join("config.json"), dir.path().join("log"));
    std::fs::write(&config, text).expect("write config");
    let mut child = command(&config, &log, Some(TOKEN))
        .args(args)
        .spawn()
        .expect("spawn fpgagdrd");
    let patience = patience();
    let deadline = Instant::now() + patience;
    let status = loop {
        match child.try_wait().expect("wait for fpgagdrd") {
            Some(status) => break status,
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "fpgagdrd with config {text:?} still ran after {patience:?}; its log:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            None => thread::sleep(POLL),
        }
    };
    let mut out = String::new();
    if let Some(mut s) = child.stdout.take() {
        let _ = std::io::Read::read_to_string(&mut s, &mut out);
    }
    let err = std::fs::read_to_string(&log).unwrap_or_default();
    (status, out, err)
}

impl Service {
    /// Starts the service with `config` written to its config file.
    pub(crate) fn start(config: &Value) -> Service {
        Self::start_with_file(Some(&serde_json::to_string_pretty(config).unwrap()))
    }

    /// Starts the service with a config file holding `text`, or with no file (defaults)
    /// when `None`. Waits (bounded) for the `dashboard at` line on stdout.
    pub(crate) fn start_with_file(text: Option<&str>) -> Service {
        Self::start_with_args(text, &[])
    }

    /// As [`Service::start_with_file`], with extra command-line arguments.
    pub(crate) fn start_with_args(text: Option<&str>, args: &[&str]) -> Service {
        Self::start_opts(text, args, Some(TOKEN))
    }

    /// As [`Service::start_with_args`], with `FPGAGDR_TOKEN` set to `token`, or unset
    /// when `None` (the service then uses or generates its token file; a printed token
    /// becomes [`Service::token`]).
    pub(crate) fn start_opts(text: Option<&str>, args: &[&str], token: Option<&str>) -> Service {
        Self::start_env(text, args, token, &[])
    }

    /// As [`Service::start_opts`], with extra environment variables.
    pub(crate) fn start_env(
        text: Option<&str>,
        args: &[&str],
        token: Option<&str>,
        env: &[(&str, &std::ffi::OsStr)],
    ) -> Service {
        Self::start_wrapped(&[], text, args, token, env)
    }

    /// As [`Service::start_env`], the binary run through `wrapper` (a program and its
    /// arguments, such as `prlimit --nofile=256:256`).
    pub(crate) fn start_wrapped(
        wrapper: &[&str],
        text: Option<&str>,
        args: &[&str],
        token: Option<&str>,
        env: &[(&str, &std::ffi::OsStr)],
    ) -> Service {
        Self::start_in(
            tempfile::tempdir().expect("temp dir"),
            wrapper,
            text,
            args,
            token,
            env,
        )
    }

    /// As [`Service::start_wrapped`], with its config file (`config.json`) and log in
    /// `dir`, which the test may have filled before.
    pub(crate) fn start_in(
        dir: tempfile::TempDir,
        wrapper: &[&str],
        text: Option<&str>,
        args: &[&str],
        token: Option<&str>,
        env: &[(&str, &std::ffi::OsStr)],
    ) -> Service {
        let (config_path, log_path) = (dir.path().join("config.json"), dir.path().join("log"));
        if let Some(text) = text {
            std::fs::write(&config_path, text).expect("write config");
        }
        let mut child = command_wrapped(wrapper, &config_path, &log_path, token)
            .args(args)
            .envs(env.iter().copied())
            .spawn()
            .expect("spawn fpgagdrd");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            // Forwards the address, then keeps draining stdout until the process ends.
            let mut head = Vec::new();
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix("fpgagdrd: dashboard at ") {
                    let _ = tx.send((rest.trim_end_matches('/').to_string(), head.clone()));
                } else {
                    head.push(line);
                }
            }
        });
        let (base, stdout_head) = match rx.recv_timeout(STARTUP_PATIENCE.mul_f64(time_scale())) {
            Ok(got) => got,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "fpgagdrd printed no dashboard address ({e}); its log:\n{}",
                    std::fs::read_to_string(&log_path).unwrap_or_default()
                );
            }
        };
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(patience()))
            .build()
            .into();
        let printed = stdout_head.iter().find_map(|l| {
            l.strip_prefix("fpgagdrd: API token (saved to ")
                .and_then(|r| r.split_once("): "))
                .map(|(_, t)| t.to_string())
        });
        let svc = Service {
            child,
            base,
            config_path,
            token: token.map(str::to_string).or(printed).unwrap_or_default(),
            stdout_head,
            log_path,
            agent,
            _dir: dir,
        };
        assert!(
            svc.base.starts_with("http://127.0.0.1:"),
            "address {}",
            svc.base
        );
        svc
    }

    /// The HTTP client (errors are not turned into `Err`; timeouts are bounded).
    /// Sends SIGTERM and waits (bounded by [`patience`]) for the process to exit.
    /// Returns its exit status, or `None` if it was still running at the deadline.
    pub(crate) fn terminate(&mut self) -> Option<ExitStatus> {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -TERM {pid} failed");
        let deadline = Instant::now() + patience();
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// The process id (for signals and `/proc`).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the service logged on stderr so far.
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// `127.0.0.1:PORT`.
    pub(crate) fn addr(&self) -> std::net::SocketAddr {
        self.base
            .trim_start_matches("http://")
            .parse()
            .expect("the service's address")
    }

    pub(crate) fn agent(&self) -> &ureq::Agent {
        &self.agent
    }

    /// `base` + `path`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Sends `method path` with an optional JSON body and extra headers; a request other
    /// than `GET` carries [`Service::token`] unless `headers` has an `authorization`.
    pub(crate) fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
        headers: &[(&str, &str)],
    ) -> Reply {
        let auth = format!("Bearer {}", self.token);
        let mut all: Vec<(&str, &str)> = headers.to_vec();
        if method != "GET"
            && !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        {
            all.push(("authorization", &auth));
        }
        self.request_as(method, path, body, &all)
    }

    /// Sends `method path` with exactly these headers (no token added).
    pub(crate) fn request_as(
        &self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
        headers: &[(&str, &str)],
    ) -> Reply {
        let url = self.url(path);
        let result = match (method, body) {
            ("GET", _) => {
                let mut r = self.agent.get(&url);
                for (k, v) in headers {
                    r = r.header(*k, *v);
                }
                r.call()
            }
            (m, body) => {
                let mut r = match m {
                    "POST" => self.agent.post(&url),
                    "PUT" => self.agent.put(&url),
                    "PATCH" => self.agent.patch(&url),
                    other => panic!("method {other} not supported by this helper"),
                };
                for (k, v) in headers {
                    r = r.header(*k, *v);
                }
                match body {
                    Some(b) => r.header("content-type", "application/json").send(b),
                    None => r.send_empty(),
                }
            }
        };
        let resp = result.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp
            .into_body()
            .read_to_string()
            .unwrap_or_else(|e| panic!("{method} {url}: reading the body: {e}"));
        Reply {
            status,
            headers,
            body,
        }
    }

    /// `GET path`.
    pub(crate) fn get(&self, path: &str) -> Reply {
        self.request("GET", path, None, &[])
    }

    /// `GET path`, asserting 200 and a JSON body.
    #[track_caller]
    pub(crate) fn get_json(&self, path: &str) -> Value {
        let r = self.get(path);
        assert_eq!(r.status, 200, "GET {path}: {}", r.body);
        r.json()
    }

    /// `/api/v1/status`.
    pub(crate) fn status(&self) -> Value {
        self.get_json("/api/v1/status")
    }

    /// `counters.frames_inferred` of `/api/v1/status`.
    pub(crate) fn frames_inferred(&self) -> u64 {
        self.status()["counters"]["frames_inferred"]
            .as_u64()
            .expect("counters.frames_inferred is a number")
    }

    /// Waits until more than `than` frames have been inferred; returns the count.
    pub(crate) fn wait_frames_above(&self, than: u64) -> u64 {
        wait_for(&format!("frames_inferred > {than}"), || {
            let s = self.status();
            match s["counters"]["frames_inferred"].as_u64() {
                Some(n) if n > than => Ok(n),
                _ => Err(format!("{s}")),
            }
        })
    }

    /// Waits for a result of `/api/v1/results/latest` for which `accept` is true.
    pub(crate) fn wait_result(&self, what: &str, accept: impl Fn(&Value) -> bool) -> Value {
        wait_for(what, || {
            let r = self.get("/api/v1/results/latest");
            if r.status != 200 {
                return Err(format!("{} {}", r.status, r.body));
            }
            let v = r.json();
            if accept(&v) {
                Ok(v)
            } else {
                Err(v.to_string())
            }
        })
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if thread::panicking() {
            eprintln!(
                "--- fpgagdrd log ({}) ---\n{}",
                self.base,
                std::fs::read_to_string(&self.log_path).unwrap_or_default()
            );
        }
    }
}

/// One sample line of the Prometheus text format.
#[derive(Debug)]
pub(crate) struct Sample {
    pub(crate) name: String,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) value: f64,
}

/// Parses the Prometheus text exposition format (0.0.4) strictly enough to catch a
/// malformed line; every sample's family must have a `# TYPE` line before it.
pub(crate) fn parse_prometheus(text: &str) -> Vec<Sample> {
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut samples = Vec::new();
    let is_name = |n: &str| {
        !n.is_empty()
            && !n.starts_with(|c: char| c.is_ascii_digit())
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    };
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Some(comment) = line.strip_prefix('#') {
            let mut parts = comment.split_whitespace();
            match parts.next() {
                Some("TYPE") => {
                    let name = parts.next().expect("TYPE names a metric");
                    let kind = parts.next().expect("TYPE names a kind");
                    assert!(is_name(name), "{line}");
                    assert!(
                        ["counter", "gauge", "summary", "histogram", "untyped"].contains(&kind),
                        "{line}"
                    );
                    assert!(
                        types.insert(name.into(), kind.into()).is_none(),
                        "twice: {line}"
                    );
                }
                Some("HELP") => assert!(parts.next().is_some_and(is_name), "{line}"),
                _ => {}
            }
            continue;
        }
        let name_end = line
            .find(['{', ' '])
            .unwrap_or_else(|| panic!("no value: {line}"));
        let name = &line[..name_end];
        assert!(is_name(name), "bad metric name in {line:?}");
        let mut rest = &line[name_end..];
        let mut labels = BTreeMap::new();
        if let Some(after) = rest.strip_prefix('{') {
            let close = after
                .find('}')
                .unwrap_or_else(|| panic!("unclosed labels: {line}"));
            for pair in after[..close].split(',').filter(|p| !p.is_empty()) {
                let (k, v) = pair
                    .split_once('=')
                    .unwrap_or_else(|| panic!("label: {line}"));
                assert!(is_name(k), "bad label name in {line:?}");
                let v = v
                    .strip_prefix('"')
                    .and_then(|v| v.strip_suffix('"'))
                    .unwrap_or_else(|| panic!("unquoted label value in {line:?}"));
                labels.insert(k.to_string(), v.to_string());
            }
            rest = &after[close + 1..];
        }
        let mut fields = rest.split_whitespace();
        let value: f64 = fields
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("value is not a float: {line:?}"));
        if let Some(ts) = fields.next() {
            assert!(ts.parse::<i64>().is_ok(), "bad timestamp in {line:?}");
        }
        assert!(fields.next().is_none(), "trailing text in {line:?}");
        let family = [
            name,
            name.trim_end_matches("_sum"),
            name.trim_end_matches("_count"),
            name.trim_end_matches("_bucket"),
        ]
        .into_iter()
        .find(|f| types.contains_key(*f))
        .unwrap_or_else(|| panic!("no # TYPE before {line:?}"));
        if family != name {
            // _sum and _count belong to a summary or a histogram; _bucket to a
            // histogram only (issue 20's stage histograms).
            let kind = types[family].as_str();
            if name.ends_with("_bucket") {
                assert_eq!(kind, "histogram", "{line}");
            } else {
                assert!(kind == "summary" || kind == "histogram", "{line}");
            }
        }
        samples.push(Sample {
            name: name.into(),
            labels,
            value,
        });
    }
    samples
}

/// A fake sysfs tree for `--sysfs-root`: a test double for the hardware this machine
/// lacks (an Orin NX's INA3221 with its input rail, and a thermal zone), whose readings
/// a test changes while the service samples them.
pub(crate) struct FakeSysfs {
    pub(crate) dir: tempfile::TempDir,
}

impl FakeSysfs {
    /// The INA3221's hwmon directory in the tree.
    const HWMON: &'static str = "sys/bus/i2c/drivers/ina3221/1-0040/hwmon/hwmon2";

    /// An Orin NX: rails VDD_IN (4992 mV × 1480 mA = 7.388 W, the board's total),
    /// VDD_CPU_GPU_CV and VDD_SOC; thermal zone `cpu-thermal` at 51.25 °C.
    pub(crate) fn orin_nx() -> FakeSysfs {
        let f = FakeSysfs {
            dir: tempfile::tempdir().unwrap(),
        };
        for (n, (label, mv, ma)) in [
            ("VDD_IN", 4992, 1480),
            ("VDD_CPU_GPU_CV", 4992, 384),
            ("VDD_SOC", 4992, 400),
        ]
        .into_iter()
        .enumerate()
        {
            let n = n + 1;
            f.put(&format!("{}/in{n}_label", Self::HWMON), label);
            f.put(&format!("{}/in{n}_input", Self::HWMON), &mv.to_string());
            f.put(&format!("{}/curr{n}_input", Self::HWMON), &ma.to_string());
        }
        f.put("sys/class/thermal/thermal_zone0/type", "cpu-thermal");
        f.set_celsius(51.25);
        f
    }

    /// Writes `value` to the file `rel` under the root (a reading the sampler sees).
    pub(crate) fn put(&self, rel: &str, value: &str) {
        let p = self.dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        // Written aside and renamed: the sampler never reads half a number.
        let tmp = p.with_extension("tmp");
        std::fs::write(&tmp, format!("{value}\n")).unwrap();
        std::fs::rename(tmp, p).unwrap();
    }

    /// `cpu-thermal`'s temperature.
    pub(crate) fn set_celsius(&self, c: f64) {
        self.put(
            "sys/class/thermal/thermal_zone0/temp",
            &((c * 1000.0).round() as i64).to_string(),
        );
    }

    /// VDD_IN's current, mA (at 4992 mV: W = 4.992 × A).
    pub(crate) fn set_vdd_in_ma(&self, ma: u32) {
        self.put(&format!("{}/curr1_input", Self::HWMON), &ma.to_string());
    }

    /// `--sysfs-root` for this tree.
    pub(crate) fn root(&self) -> &str {
        self.dir.path().to_str().unwrap()
    }
}

/// Every `alert` event of `GET /api/v1/results/stream` from now on, collected by a
/// thread as they come (the stream stays open while the returned list lives).
pub(crate) fn alert_events(svc: &Service) -> std::sync::Arc<std::sync::Mutex<Vec<Value>>> {
    let resp = svc
        .agent()
        .get(&svc.url("/api/v1/results/stream"))
        .call()
        .unwrap();
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let out = got.clone();
    thread::spawn(move || {
        let mut body = BufReader::new(resp.into_body().into_reader());
        let (mut event, mut line) = (String::new(), String::new());
        loop {
            line.clear();
            if body.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if let Some(e) = line.strip_prefix("event:") {
                event = e.trim().to_string();
            } else if let Some(data) = line.strip_prefix("data:")
                && event == "alert"
            {
                let v: Value = serde_json::from_str(data.trim()).unwrap();
                out.lock().unwrap().push(v);
                // The stream outlives the test otherwise: stop once nobody reads.
                if std::sync::Arc::strong_count(&out) == 1 {
                    return;
                }
            }
        }
    });
    got
}

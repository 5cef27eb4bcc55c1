//! `fpgagdrd`: the appliance service.
//!
//! Start order: parse the command line → logging → config file (a file that breaks a
//! rule of its document stops the service with the field and rule named) → results
//! room → telemetry thread → the control room applies the file's config (one that
//! breaks a rule of the system, or a pipeline that cannot start, is shown as failed;
//! the API still comes up so the user can fix the config) → the frame board's sampler →
//! HTTP → `READY=1` to systemd (when run by it) and the watchdog task. Stop order on
//! SIGINT/SIGTERM: `STOPPING=1`, HTTP, then the pipeline threads.
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;

use fpgagdrd::api;
use fpgagdrd::cards::{self, CardChoice};
use fpgagdrd::config::ConfigStore;
use fpgagdrd::control::{self, Control};
use fpgagdrd::pipeline::Shared;

/// Capture frames from an FPGA card into GPU memory, classify them, and serve a live
/// dashboard and REST API.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    /// Address to listen on, HOST:PORT (a name such as localhost is resolved; port 0
    /// picks a free port; the URL is printed on stdout).
    #[arg(long, default_value = "127.0.0.1:8080", value_parser = parse_listen)]
    listen: SocketAddr,
    /// `sim` for the simulated card, a control node such as /dev/fpgagdr0, or `auto`:
    /// /dev/fpgagdr0 when it exists, else the simulated card (status and log say which
    /// and why).
    #[arg(long, default_value = "sim")]
    card: String,
    /// Test fault of the simulated card (`--card sim` only): every N-th card-to-host DMA
    /// is torn, as on a card that rewrote the frame's slot while it was read; such frames
    /// count as overrun. 0 (the default): none.
    #[arg(long, default_value_t = 0)]
    sim_card_torn_every: u64,
    /// Config file (JSON). Default: $XDG_STATE_HOME/fpgagdr/config.json, else
    /// ~/.local/state/fpgagdr/config.json.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Root that sysfs telemetry paths, and the version files of /api/v1/system, are
    /// read under (`/`; a fixture tree in tests).
    #[arg(long, default_value = "/")]
    sysfs_root: PathBuf,
    /// File holding the API token that mutating requests must carry. Default: the
    /// environment variable FPGAGDR_TOKEN, else `token` beside the config file
    /// (generated on first start, mode 0600, and printed once on stdout).
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Telemetry sampling rate, Hz (0.5 to 50).
    #[arg(long, default_value_t = fpgagdr_telemetry::sampler::DEFAULT_HZ, value_parser = parse_hz,
          allow_hyphen_values = true)]
    telemetry_hz: f64,
    /// D-Bus bus where RAUC is: `system`, `session` or an address such as
    /// unix:path=/tmp/bus. Default: $FPGAGDR_RAUC_BUS, else system.
    #[arg(long)]
    rauc_bus: Option<fpgagdr_ota::rauc::Bus>,
    /// Directory for uploaded update bundles (RAUC, running as root, reads them from
    /// there). Default: $FPGAGDR_OTA_SPOOL, else $STATE_DIRECTORY/ota (systemd), else
    /// `ota` beside the config file.
    #[arg(long)]
    ota_spool: Option<PathBuf>,
    /// Largest update bundle accepted, bytes.
    #[arg(long, default_value_t = fpgagdr_ota::DEFAULT_MAX_BYTES)]
    ota_max_bytes: u64,
    /// Do not serve: judge this boot for fpgagdr-mark-good.service. Waits until the
    /// service listening at --listen is healthy, then marks the booted slot good through
    /// RAUC; an unhealthy slot installed by an update is marked bad (exit 1, and a
    /// reboot) only when the other slot is good. A factory boot, a device without rootfs
    /// A/B, or RAUC out of reach is left alone (exit 0). Once per installation.
    #[arg(long)]
    mark_good_after_health: bool,
    /// Do not serve: read the config file (--config) as the service does at start,
    /// judge it by every rule a PUT of it passes on this machine (the files it names,
    /// the MQTT CA file, the alert rules' sensors and classes; loading the model and
    /// pinning the frame ring only a start does), print the verdict and exit (0: it
    /// passes; 1: the field and the rule it breaks).
    #[arg(long)]
    check_config: bool,
    /// How long --mark-good-after-health waits for health, seconds.
    #[arg(long, default_value_t = 300)]
    health_timeout_s: u64,
    /// How long --mark-good-after-health keeps trying to reach RAUC, seconds.
    #[arg(long, default_value_t = fpgagdr_ota::mark_good::DEFAULT_RAUC_WAIT.as_secs())]
    rauc_wait_s: u64,
    /// How long a running pipeline's capture or inference thread may go without a turn
    /// of its loop before the service counts itself hung and stops sending WATCHDOG=1 to
    /// systemd, seconds (0.5 to 3600: an idle inference thread turns every 0.25 s;
    /// never less than twice card.timeout_ms). Raise it for a model whose single run
    /// takes longer.
    #[arg(long, default_value_t = fpgagdrd::notify::DEFAULT_STALL_LIMIT_S, value_parser = parse_stall_limit,
          allow_hyphen_values = true)]
    stall_limit_s: f64,
    /// RAUC's system.conf, for `rauc info` when RAUC's D-Bus answer gives no reason for
    /// refusing a bundle. Default: $FPGAGDR_RAUC_CONF, else RAUC's own default.
    #[arg(long)]
    rauc_conf: Option<PathBuf>,
    /// Free space kept in the spool's file system beside an uploaded bundle, bytes.
    #[arg(long, default_value_t = fpgagdr_ota::spool::RESERVE_BYTES)]
    ota_spool_reserve_bytes: u64,
    /// How long an upload may send no byte before it is cut off (408), seconds.
    #[arg(long, default_value_t = fpgagdr_ota::spool::DEFAULT_STALL.as_secs_f64(),
          value_parser = parse_timeout)]
    upload_stall_s: f64,
    /// Directory of the results log (default: `results` under `$STATE_DIRECTORY`, else
    /// beside the config file).
    #[arg(long)]
    results_dir: Option<PathBuf>,
    /// Directory of the frames kept for alerts (`outputs.alerts.keep_frames`; default:
    /// `alert-frames` under `$STATE_DIRECTORY`, else beside the config file).
    #[arg(long)]
    alert_frames_dir: Option<PathBuf>,
    /// Cap on the results log's files together, bytes (at least 65536).
    #[arg(long, default_value_t = fpgagdrd::results::sinks::log::DEFAULT_MAX_BYTES,
          value_parser = parse_log_cap)]
    results_log_max_bytes: u64,
    #[command(flatten)]
    limits: LimitArgs,
}

fn parse_log_cap(s: &str) -> Result<u64, String> {
    let min = fpgagdrd::results::sinks::log::MIN_MAX_BYTES;
    match s.trim().parse::<u64>() {
        Ok(v) if v >= min => Ok(v),
        _ => Err(format!(
            "rule results-log-cap: {s:?} is not a number of bytes of at least {min}"
        )),
    }
}

/// The HTTP limits (`docs/api.md`, "Limits"); defaults from [`fpgagdrd::http::Limits`].
#[derive(Debug, clap::Args)]
struct LimitArgs {
    /// Connections open at once, all clients together (fitted to RLIMIT_NOFILE). When
    /// all are taken the one idle longest is closed; when none is idle: 503.
    #[arg(long, default_value_t = fpgagdrd::http::limits::Limits::default().max_connections)]
    max_connections: usize,
    /// Connections open at once from one client (an IPv4 /24 or IPv6 /64 by default:
    /// --client-prefix-v4, --client-prefix-v6); over it: 503 with Retry-After.
    #[arg(long, default_value_t = fpgagdrd::http::limits::Limits::default().max_client_connections)]
    max_client_connections: usize,
    /// Live streams (SSE) open at once, all clients together; when all are taken a new
    /// one takes the place of the stream slowest to read (then of the client holding
    /// most, then the oldest).
    #[arg(long, default_value_t = fpgagdrd::http::limits::Limits::default().max_streams)]
    max_streams: usize,
    /// Live streams open at once from one client; over it: 503.
    #[arg(long, default_value_t = fpgagdrd::http::limits::Limits::default().max_client_streams)]
    max_client_streams: usize,
    /// Leading bits of an IPv4 address that make one client for the per-client limits
    /// (connections, streams, changes): 24 = a site's /24, 32 = one address.
    #[arg(long, default_value_t = fpgagdrd::http::limits::Limits::default().client_v4_prefix,
          value_parser = clap::value_parser!(u8).range(0..=32))]
    client_prefix_v4: u8,
    /// Leading bits of an IPv6 address that make one client (64: a host's /64).
    #[arg(long, default_value_t = fpgagdrd::http::limits::Limits::default().client_v6_prefix,
          value_parser = clap::value_parser!(u8).range(0..=128))]
    client_prefix_v6: u8,
    /// How long a connection may wait with no request, seconds.
    #[arg(long, default_value_t = fpgagdrd::http::limits::Limits::default().idle_timeout.as_secs_f64(),
          value_parser = parse_timeout)]
    idle_timeout_s: f64,
    /// How long a request head may take from its first byte to its end, seconds.
    #[arg(long, default_value_t = fpgagdrd::http::limits::Limits::default().header_timeout.as_secs_f64(),
          value_parser = parse_timeout)]
    header_timeout_s: f64,
    /// How long a JSON request body may take to arrive whole (408 after), seconds.
    #[arg(long, default_value_t = fpgagdrd::http::limits::Limits::default().body_timeout.as_secs_f64(),
          value_parser = parse_timeout)]
    body_timeout_s: f64,
    /// How long an answer may wait for the client to read it before the connection is
    /// closed, seconds.
    #[arg(long, default_value_t = fpgagdrd::http::limits::Limits::default().send_timeout.as_secs_f64(),
          value_parser = parse_timeout)]
    send_timeout_s: f64,
    /// Changes (requests other than GET/HEAD/OPTIONS) per second from one client,
    /// sustained; over it: 429 with Retry-After.
    #[arg(long, default_value_t = fpgagdrd::http::limits::Limits::default().change_rate)]
    change_rate: u32,
    /// Changes one client may send in a burst above --change-rate.
    #[arg(long, default_value_t = fpgagdrd::http::limits::Limits::default().change_burst)]
    change_burst: u32,
    /// How long a config change, start or stop may wait for its turn and for its
    /// pipeline to be built, seconds (503 change-busy / 422 change-timeout after).
    #[arg(long, default_value_t = DEFAULT_CHANGE_TIMEOUT_S, value_parser = parse_timeout)]
    change_timeout_s: f64,
    /// More names this service answers for in `Host` and `Origin` (besides IP
    /// addresses, localhost, the host name and <hostname>.local); repeatable; `*`
    /// allows any.
    #[arg(long = "allow-host", value_name = "NAME")]
    allow_host: Vec<String>,
    /// More directories models and labels may be read from (besides the data
    /// directory); repeatable.
    #[arg(long = "model-root", value_name = "DIR")]
    model_root: Vec<PathBuf>,
    /// More directories replay frames may be read from (besides the data directory);
    /// repeatable.
    #[arg(long = "frames-root", value_name = "DIR")]
    frames_root: Vec<PathBuf>,
    /// More directories the MQTT broker's CA file (`outputs.mqtt.ca_file`) may be read
    /// from (besides the data directory); repeatable.
    #[arg(long = "cert-root", value_name = "DIR")]
    cert_root: Vec<PathBuf>,
    /// Largest ONNX model read, bytes.
    #[arg(long, default_value_t = fpgagdrd::files::DEFAULT_MAX_MODEL_BYTES)]
    max_model_bytes: u64,
    /// How long reading a config's files (model, labels, frames) may take, seconds.
    #[arg(long, default_value_t = fpgagdrd::files::DEFAULT_FILE_TIMEOUT.as_secs_f64(),
          value_parser = parse_timeout)]
    file_timeout_s: f64,
}

/// Default of `--change-timeout-s`.
const DEFAULT_CHANGE_TIMEOUT_S: f64 = 60.0;

impl LimitArgs {
    fn limits(&self) -> fpgagdrd::http::limits::Limits {
        let d = std::time::Duration::from_secs_f64;
        fpgagdrd::http::limits::Limits {
            max_connections: self.max_connections,
            max_client_connections: self.max_client_connections,
            max_streams: self.max_streams,
            max_client_streams: self.max_client_streams,
            idle_timeout: d(self.idle_timeout_s),
            header_timeout: d(self.header_timeout_s),
            body_timeout: d(self.body_timeout_s),
            send_timeout: d(self.send_timeout_s),
            change_rate: self.change_rate,
            change_burst: self.change_burst,
            client_v4_prefix: self.client_prefix_v4,
            client_v6_prefix: self.client_prefix_v6,
            ..fpgagdrd::http::limits::Limits::default()
        }
    }

    fn files(&self) -> fpgagdrd::files::Policy {
        let mut p = fpgagdrd::files::Policy::new(
            fpgagdrd::files::Roots::new(
                &fpgagdrd::files::data_dir(),
                &self.model_root,
                &self.frames_root,
            )
            .with_cert_roots(&self.cert_root),
        );
        p.max_model_bytes = self.max_model_bytes;
        p.timeout = std::time::Duration::from_secs_f64(self.file_timeout_s);
        p
    }
}

fn parse_timeout(s: &str) -> Result<f64, String> {
    parse_in(s, "timeout", "s", 0.1..=86400.0)
}

/// A number in `range`, or the message of `rule` naming what was given and the range.
fn parse_in(
    s: &str,
    rule: &str,
    unit: &str,
    range: std::ops::RangeInclusive<f64>,
) -> Result<f64, String> {
    let within = format!("{}..={} {unit}", range.start(), range.end());
    match s.trim().parse::<f64>() {
        Ok(v) if range.contains(&v) => Ok(v),
        Ok(v) => Err(format!("rule {rule}: {v} {unit} is outside {within}")),
        Err(_) => Err(format!(
            "rule {rule}: {s:?} is not a number (expected {within})"
        )),
    }
}

fn parse_stall_limit(s: &str) -> Result<f64, String> {
    parse_in(s, "stall-limit", "s", 0.5..=3600.0)
}

/// OTA settings from the command line, the environment and the config location.
fn ota_settings(cli: &Cli, config_dir: &std::path::Path) -> Result<fpgagdr_ota::Settings, String> {
    let bus = match (&cli.rauc_bus, std::env::var("FPGAGDR_RAUC_BUS")) {
        (Some(b), _) => b.clone(),
        (None, Ok(v)) if !v.is_empty() => {
            v.parse().map_err(|e| format!("FPGAGDR_RAUC_BUS: {e}"))?
        }
        _ => fpgagdr_ota::rauc::Bus::System,
    };
    let spool = cli
        .ota_spool
        .clone()
        .or_else(|| std::env::var_os("FPGAGDR_OTA_SPOOL").map(PathBuf::from))
        .or_else(|| {
            // systemd's StateDirectory= may list several; the first is ours.
            std::env::var("STATE_DIRECTORY")
                .ok()
                .and_then(|v| v.split(':').next().map(|d| PathBuf::from(d).join("ota")))
        })
        .unwrap_or_else(|| config_dir.join("ota"));
    let mut settings = fpgagdr_ota::Settings::new(bus, spool);
    settings.max_bytes = cli.ota_max_bytes;
    settings.reserve_bytes = cli.ota_spool_reserve_bytes;
    settings.stall = std::time::Duration::from_secs_f64(cli.upload_stall_s);
    settings.rauc_conf = cli
        .rauc_conf
        .clone()
        .or_else(|| std::env::var_os("FPGAGDR_RAUC_CONF").map(PathBuf::from))
        .filter(|p| !p.as_os_str().is_empty());
    Ok(settings)
}

fn parse_hz(s: &str) -> Result<f64, String> {
    parse_in(
        s,
        "telemetry-rate",
        "Hz",
        fpgagdr_telemetry::sampler::HZ_RANGE,
    )
}

fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    s.to_socket_addrs()
        .map_err(|e| format!("{s}: {e} (expected HOST:PORT, e.g. 127.0.0.1:8080)"))?
        .next()
        .ok_or_else(|| format!("{s}: resolves to no address"))
}

fn default_config_path() -> PathBuf {
    // An empty or relative value is to be ignored (XDG Base Directory spec): it would
    // put the state in the working directory.
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    let state = std::env::var_os("XDG_STATE_HOME")
        .and_then(absolute)
        .or_else(|| {
            std::env::var_os("HOME")
                .and_then(absolute)
                .map(|h| h.join(".local/state"))
        })
        .unwrap_or_else(|| PathBuf::from("/var/lib"));
    state.join("fpgagdr/config.json")
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fpgagdrd: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let cli = Cli::parse();
    // Before anything large is allocated (fpgagdr::heap: RSS across config changes).
    fpgagdr::heap::tune();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "fpgagdrd=info,fpgagdr=info,fpgagdr_infer=info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let (card, card_why) = CardChoice::resolve(&cli.card, std::path::Path::new(cards::AUTO_CARD));
    let card = card.with_sim_torn_frames(cli.sim_card_torn_every)?;
    if cli.sim_card_torn_every > 0 {
        tracing::warn!(
            "simulated card: every {} C2H is torn (--sim-card-torn-every, a test fault)",
            cli.sim_card_torn_every
        );
    }
    tracing::info!("card: {} ({card_why})", card.name());
    let config_path = cli.config.clone().unwrap_or_else(default_config_path);
    if cli.mark_good_after_health {
        let dir = config_path
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default();
        let ota = ota_settings(&cli, &dir)?;
        return fpgagdr_ota::mark_good::run(
            cli.listen,
            &ota.bus,
            &ota.spool,
            std::time::Duration::from_secs(cli.health_timeout_s),
            std::time::Duration::from_secs(cli.rauc_wait_s),
        );
    }
    let telemetry = || {
        fpgagdr_telemetry::sampler::spawn(
            cli.sysfs_root.clone(),
            std::time::Duration::from_secs_f64(1.0 / cli.telemetry_hz),
        )
    };
    if cli.check_config {
        let telemetry = telemetry();
        let verdict =
            fpgagdrd::control::check_file(&config_path, &card, &cli.limits.files(), &telemetry);
        telemetry.stop();
        println!("fpgagdrd: {}", verdict?);
        return Ok(());
    }
    let store = ConfigStore::open(config_path).map_err(|e| e.to_string())?;
    // The notify socket first: it never needs a descriptor later.
    let notifier = fpgagdrd::notify::Notifier::from_env();
    let mut limits = cli.limits.limits();
    let nofile = fpgagdrd::http::server::fit_descriptors(&mut limits)?;
    tracing::info!(
        "RLIMIT_NOFILE {nofile}: up to {} connections ({} per client), {} live streams",
        limits.max_connections,
        limits.max_client_connections,
        limits.max_streams
    );
    let files = Arc::new(cli.limits.files());
    // Bound before the API token is generated and printed, so a start that cannot
    // listen (port taken) does not spend the token's one showing.
    let listener = std::net::TcpListener::bind(cli.listen)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|e| format!("listening on {}: {e}", cli.listen))?;
    tracing::info!(
        "config {} ; data directory {}",
        store.path().display(),
        fpgagdrd::files::data_dir().display()
    );
    let env_token = std::env::var(fpgagdrd::http::auth::TOKEN_ENV).ok();
    let config_dir = store
        .path()
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let (token, origin) = fpgagdrd::http::auth::Token::resolve(
        env_token.as_deref(),
        cli.token_file.as_deref(),
        &config_dir,
    )
    .map_err(|e| e.to_string())?;
    let ota = ota_settings(&cli, &config_dir)?;
    tracing::info!("OTA: RAUC on {}, spool {}", ota.bus, ota.spool.display());
    match &origin {
        fpgagdrd::http::auth::Origin::Generated(path) => {
            // The one time the token is shown: on first start, when none was configured.
            println!(
                "fpgagdrd: API token (saved to {}): {}",
                path.display(),
                token.expose()
            );
        }
        fpgagdrd::http::auth::Origin::File(path) => {
            tracing::info!("API token from {}", path.display())
        }
        fpgagdrd::http::auth::Origin::Env => {
            tracing::info!("API token from ${}", fpgagdrd::http::auth::TOKEN_ENV)
        }
    }
    let shared = Arc::new(Shared::default());
    // The results room first: the first run's results already go to it.
    // Under the state directory (systemd's), else beside the config.
    let state_sub = |name: &str| {
        std::env::var("STATE_DIRECTORY")
            .ok()
            .and_then(|v| v.split(':').next().map(|d| PathBuf::from(d).join(name)))
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| config_dir.join(name))
    };
    let results_dir = cli
        .results_dir
        .clone()
        .unwrap_or_else(|| state_sub("results"));
    let frames_dir = cli
        .alert_frames_dir
        .clone()
        .unwrap_or_else(|| state_sub("alert-frames"));
    let results = fpgagdrd::results::Results::start(
        shared.outlet.clone(),
        fpgagdrd::results::LogSettings {
            dir: results_dir.clone(),
            max_bytes: cli.results_log_max_bytes,
            frames_dir: frames_dir.clone(),
        },
        files.clone(),
    )
    .map_err(|e| {
        format!(
            "results log {} or alert frames {}: {e}",
            results_dir.display(),
            frames_dir.display()
        )
    })?;
    tracing::info!(
        "results log {} (at most {} bytes)",
        results_dir.display(),
        cli.results_log_max_bytes
    );
    // The telemetry first: the config's alert rules are judged against its sensors.
    let telemetry = telemetry();
    let control = Control::new(control::Parts {
        store,
        shared: shared.clone(),
        results: results.clone(),
        telemetry: telemetry.clone(),
        card,
        files,
        change_timeout: std::time::Duration::from_secs_f64(cli.limits.change_timeout_s),
    });
    // The file's config applied (outputs, and with autostart the pipeline started) or
    // refused with the rule in status, before the API comes up. A first TensorRT engine
    // build can outlast TimeoutStartSec: the start timeout is extended meanwhile.
    {
        let _extending = notifier.extend_start(fpgagdrd::notify::DEFAULT_ENGINE_BUILD_LIMIT);
        control.boot();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        // Bounded, so the unit's TasksMax holds (docs/api.md, Limits).
        .max_blocking_threads(64)
        .thread_name("fpgagdr-http")
        .enable_all()
        .build()
        .map_err(|e| format!("starting the HTTP runtime: {e}"))?;
    let result = runtime.block_on(serve(Parts {
        listener,
        card_why,
        control: control.clone(),
        shared,
        results,
        telemetry: telemetry.clone(),
        token,
        sysfs_root: cli.sysfs_root,
        ota,
        notifier,
        stall_limit: std::time::Duration::from_secs_f64(cli.stall_limit_s),
        limits,
        hosts: fpgagdrd::http::host::HostPolicy::new(&cli.limits.allow_host),
    }));
    telemetry.stop();
    control.shutdown();
    result
}

/// What [`serve`] wires together: everything `run` prepared before the runtime.
struct Parts {
    listener: std::net::TcpListener,
    card_why: String,
    control: Control,
    shared: Arc<Shared>,
    results: fpgagdrd::results::Results,
    telemetry: Arc<fpgagdr_telemetry::sampler::Telemetry>,
    token: fpgagdrd::http::auth::Token,
    sysfs_root: PathBuf,
    ota: fpgagdr_ota::Settings,
    notifier: fpgagdrd::notify::Notifier,
    stall_limit: std::time::Duration,
    limits: fpgagdrd::http::limits::Limits,
    hosts: fpgagdrd::http::host::HostPolicy,
}

async fn serve(parts: Parts) -> Result<(), String> {
    let Parts {
        listener,
        card_why,
        control,
        shared,
        results,
        telemetry,
        token,
        sysfs_root,
        ota,
        notifier,
        stall_limit,
        limits,
        hosts,
    } = parts;
    let board = fpgagdrd::board::Board::new(telemetry.period());
    // The condition alert rules watch the board, with the pipeline's end-to-end totals.
    let watch = {
        let (results, shared) = (results.clone(), shared.clone());
        Box::new(move |snapshot: &fpgagdrd::board::Snapshot| {
            let totals = shared.totals.lock().expect("totals poisoned");
            results.observe_board(snapshot, &totals);
        })
    };
    fpgagdrd::board::spawn(
        shared.clone(),
        Arc::new(results.clone()),
        telemetry.clone(),
        board.clone(),
        vec![watch],
    );
    let live = api::live::Live::new(board.clone());
    let events = live.clone();
    let ota = fpgagdr_ota::Ota::new(ota, Arc::new(move |json| events.publish_event("ota", json)));
    fpgagdr_ota::spawn_monitor(ota.clone());
    let pipeline_info = control.info_slot();
    let rate = fpgagdrd::http::limits::ChangeRate::new(&limits);
    {
        // The rate limiter forgets clients whose bucket is full again (bounded memory).
        let rate = rate.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(std::time::Duration::from_secs(60));
            loop {
                tick.tick().await;
                rate.forget_idle();
            }
        });
    }
    let state = api::AppState {
        control,
        pipeline_info,
        streams: fpgagdrd::http::limits::Streams::new(&limits),
        rate,
        hosts,
        limits: Arc::new(limits.clone()),
        shared: shared.clone(),
        results,
        card_why,
        live: live.clone(),
        board,
        started: Instant::now(),
        telemetry,
        token,
        sysfs_root,
        ota,
    };
    let listener =
        tokio::net::TcpListener::from_std(listener).map_err(|e| format!("listening: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    tracing::info!(
        "serving {} dashboard files and the API",
        api::assets::count()
    );
    println!("fpgagdrd: dashboard at http://{addr}/");
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let (_handle, server) =
        fpgagdrd::http::server::serve(listener, api::router(state), limits, stop_rx);
    let server = tokio::spawn(server);
    // The pipeline was started (or its failure recorded) before this point.
    notifier.ready(&format!(
        "serving http://{addr}/, pipeline {}",
        shared.state().as_str()
    ));
    let watchdog = notifier.spawn_watchdog(shared, stall_limit);
    shutdown().await;
    // No ping or "running" STATUS after STOPPING.
    if let Some(w) = watchdog {
        w.abort();
    }
    notifier.stopping();
    live.close();
    stop_tx.send_replace(true);
    // Open connections get a moment to finish; then the service exits regardless.
    match tokio::time::timeout(std::time::Duration::from_secs(3), server).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("HTTP server task: {e}")),
        Err(_) => {
            tracing::warn!("connections still open after 3 s; closing them");
            Ok(())
        }
    }
}

async fn shutdown() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    tracing::info!("stopping");
}

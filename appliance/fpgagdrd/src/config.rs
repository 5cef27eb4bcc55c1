//! The service's configuration: one JSON document with a schema.
//!
//! Owns: [`RawConfig`] (the document as written: serde, with defaults, and its JSON
//! Schema), [`Config`] (a document that passed every rule; only [`RawConfig::check`]
//! makes one), the rules' ranges ([`Range`], each written once and used by both the
//! schema and the check), parsing with errors that name the field and the rule
//! ([`ConfigError`]), merge-patch, ETags, and [`ConfigStore`] (atomic persistence).
//! Must not: build pipelines (`pipeline::prepare` checks what only loading can check:
//! files, the model).
//!
//! Relative paths are resolved against the data directory: `$FPGAGDR_DATA_DIR`, else
//! `/usr/share/fpgagdr` (where the image installs the default model and frames).

use std::io::Write;
use std::path::{Path, PathBuf};

use fpgagdr::{PinChoice, PixelFormat, WhenFull};
use fpgagdr_sim::LinkPreset;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use fpgagdr_infer::{Precision, Provider};

use crate::files::data_dir;

pub mod alerts;
mod range;
pub use alerts::{AlertRule, AlertsConfig, KeepFramesConfig};
pub use range::Range;

/// `source.fps`, frames/s: 0 (as fast as capture asks) or between [`MIN_FPS`] and 10 000
/// (above the reference report's card, docs/bench.md: 6661 frames/s of 1 MiB on PCIe Gen3 x8).
pub const FPS: Range<f64> = Range {
    field: "/source/fps",
    min: 0.0,
    max: 10_000.0,
    allowed: "0 (as fast as capture asks) or between 0.01 and 10000 frames/s",
};
/// The words of the range of the field at JSON pointer `field`, if it has one.
fn range_words(field: &str) -> Option<&'static str> {
    [
        (FPS.field, FPS.allowed),
        (WIDTH.field, WIDTH.allowed),
        (HEIGHT.field, HEIGHT.allowed),
        (CHANNEL.field, CHANNEL.allowed),
        (CHANNELS.field, CHANNELS.allowed),
        (TIMEOUT_MS.field, TIMEOUT_MS.allowed),
        (ENTRIES.field, ENTRIES.allowed),
        (THREADS.field, THREADS.allowed),
        (MAX_BATCH.field, MAX_BATCH.allowed),
        (BATCH_WAIT_US.field, BATCH_WAIT_US.allowed),
        (LATENCY_TARGET_US.field, LATENCY_TARGET_US.allowed),
        (DLA_CORE.field, DLA_CORE.allowed),
        (MQTT_PORT.field, MQTT_PORT.allowed),
        (MQTT_QOS.field, MQTT_QOS.allowed),
        (MQTT_QUEUE.field, MQTT_QUEUE.allowed),
        (MQTT_KEEP_ALIVE_S.field, MQTT_KEEP_ALIVE_S.allowed),
        (
            alerts::KEEP_MAX_FRAMES.field,
            alerts::KEEP_MAX_FRAMES.allowed,
        ),
        (alerts::KEEP_MAX_BYTES.field, alerts::KEEP_MAX_BYTES.allowed),
    ]
    .into_iter()
    .find_map(|(f, a)| (f == field).then_some(a))
}

/// Slowest sensor rate accepted above 0, frames/s (one frame per 100 s).
pub const MIN_FPS: f64 = 0.01;
/// `source.width`, pixels.
pub const WIDTH: Range<u32> = Range {
    field: "/source/width",
    min: 16,
    max: 8192,
    allowed: "between 16 and 8192 pixels",
};
/// `source.height`, pixels.
pub const HEIGHT: Range<u32> = Range {
    field: "/source/height",
    min: 16,
    max: 8192,
    allowed: "between 16 and 8192 pixels",
};
/// `card.channel` (XDMA has at most 4 C2H channels, PG195).
pub const CHANNEL: Range<u32> = Range {
    field: "/card/channel",
    min: 0,
    max: 3,
    allowed: "between 0 and 3 (the card's XDMA core has at most 4 card-to-host channels)",
};
/// `card.channels`: C2H channels used together (XDMA has at most 4, PG195).
pub const CHANNELS: Range<u32> = Range {
    field: "/card/channels",
    min: 1,
    max: 4,
    allowed: "between 1 and 4 (the card's XDMA core has at most 4 card-to-host channels)",
};
/// `card.timeout_ms`, ms.
pub const TIMEOUT_MS: Range<u64> = Range {
    field: "/card/timeout_ms",
    min: 1,
    max: 60_000,
    allowed: "between 1 and 60000 ms",
};
/// `ring.entries` (the ring's bytes are bounded too: `pipeline::MAX_RING_BYTES`).
pub const ENTRIES: Range<usize> = Range {
    field: "/ring/entries",
    min: 2,
    max: 1024,
    allowed: "between 2 and 1024",
};
/// `inference.threads` (0 = ONNX Runtime's default).
pub const THREADS: Range<usize> = Range {
    field: "/inference/threads",
    min: 0,
    max: 64,
    allowed: "between 0 and 64 (0 = ONNX Runtime's default)",
};

/// `inference.max_batch` (0 = chosen from the provider and the GPU).
pub const MAX_BATCH: Range<usize> = Range {
    field: "/inference/max_batch",
    min: 0,
    max: fpgagdr_infer::MAX_BATCH,
    allowed: "between 0 and 512 (0 = chosen from the provider and the GPU)",
};
/// `inference.batch_wait_us`, µs.
pub const BATCH_WAIT_US: Range<u64> = Range {
    field: "/inference/batch_wait_us",
    min: 0,
    max: 100_000,
    allowed: "between 0 and 100000 µs",
};
/// `inference.latency_target_us`, µs: from 100 µs (below any model run here) to 1 s.
pub const LATENCY_TARGET_US: Range<u64> = Range {
    field: "/inference/latency_target_us",
    min: 100,
    max: 1_000_000,
    allowed: "between 100 and 1000000 µs",
};
/// The default `inference.latency_target_us` (docs/decisions.md, "A latency target for
/// the chosen batches").
pub const DEFAULT_LATENCY_TARGET_US: u64 = 5_000;
/// `inference.tensorrt.dla_core` (an Orin has DLA cores 0 and 1).
pub const DLA_CORE: Range<u32> = Range {
    field: "/inference/tensorrt/dla_core",
    min: 0,
    max: 1,
    allowed: "0 or 1 (an Orin has two DLA cores), or null for the GPU",
};

/// `outputs.mqtt.port`.
pub const MQTT_PORT: Range<u16> = Range {
    field: "/outputs/mqtt/port",
    min: 1,
    max: 65535,
    allowed: "between 1 and 65535",
};
/// `outputs.mqtt.qos`: at most once (0) or at least once (1); exactly once (2) is not
/// offered (a result is keyed by (run, seq): a consumer drops duplicates itself).
pub const MQTT_QOS: Range<u8> = Range {
    field: "/outputs/mqtt/qos",
    min: 0,
    max: 1,
    allowed: "0 (at most once) or 1 (at least once)",
};
/// `outputs.mqtt.queue`, results.
pub const MQTT_QUEUE: Range<usize> = Range {
    field: "/outputs/mqtt/queue",
    min: 1,
    max: 100_000,
    allowed: "between 1 and 100000 results",
};
/// `outputs.mqtt.keep_alive_s`, s.
pub const MQTT_KEEP_ALIVE_S: Range<u64> = Range {
    field: "/outputs/mqtt/keep_alive_s",
    min: 5,
    max: 3600,
    allowed: "between 5 and 3600 s",
};
/// Longest MQTT topic accepted, bytes.
pub const MQTT_MAX_TOPIC: usize = 1024;

/// Where the frames come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// Real image files replayed as if the FPGA captured them (`source.path`).
    Replay,
    /// A synthetic pattern with sequence number and CRC (`source.width` ×
    /// `source.height`, `source.format`).
    TestPattern,
}

/// `source`: what the (simulated) sensor produces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
#[schemars(extend("x-order" = ["kind", "path", "fps", "width", "height", "format"]))]
pub struct SourceConfig {
    /// Frame source.
    #[schemars(title = "Kind of source")]
    pub kind: SourceKind,
    /// An image file, or a folder of images, replayed as if the card captured them;
    /// relative to the data directory (or in a folder given with --frames-root).
    #[schemars(title = "Images (file or folder)")]
    #[schemars(extend("x-applies-when" = {"/source/kind": ["replay"]}, "x-offer" = "frames"))]
    #[schemars(length(min = 1))]
    pub path: PathBuf,
    /// How many frames the (simulated) sensor makes each second; 0 makes them as fast
    /// as capture takes them.
    #[schemars(title = "Frame rate (frames/s)")]
    #[schemars(range(min = FPS.min, max = FPS.max))]
    #[schemars(extend("x-allowed" = FPS.allowed))]
    #[schemars(extend("not" = {"exclusiveMinimum": 0.0, "exclusiveMaximum": MIN_FPS}))]
    pub fps: f64,
    /// Width of the test pattern, pixels.
    #[schemars(title = "Width (pixels)")]
    #[schemars(extend("x-applies-when" = {"/source/kind": ["test_pattern"]}))]
    #[schemars(range(min = WIDTH.min, max = WIDTH.max))]
    #[schemars(extend("x-allowed" = WIDTH.allowed))]
    pub width: u32,
    /// Height of the test pattern, pixels.
    #[schemars(title = "Height (pixels)")]
    #[schemars(extend("x-applies-when" = {"/source/kind": ["test_pattern"]}))]
    #[schemars(range(min = HEIGHT.min, max = HEIGHT.max))]
    #[schemars(extend("x-allowed" = HEIGHT.allowed))]
    pub height: u32,
    /// Pixel format of the test pattern: grey (mono8) or colour (rgb8).
    #[schemars(title = "Pixel format")]
    #[schemars(extend("x-applies-when" = {"/source/kind": ["test_pattern"]}))]
    pub format: PixelFormat,
}

impl Default for SourceConfig {
    fn default() -> Self {
        SourceConfig {
            kind: SourceKind::Replay,
            path: PathBuf::from("frames"),
            fps: 30.0,
            width: 1024,
            height: 1024,
            format: PixelFormat::Mono8,
        }
    }
}

/// `card`: how frames come over PCIe from the card (its DMA).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
#[schemars(extend("x-order" = ["channel", "channels", "timeout_ms", "sim_link", "pin_method"]))]
pub struct CardConfig {
    /// The first card-to-host (C2H) DMA channel the frames arrive on. The card's Xilinx
    /// XDMA PCIe core has at most four (its product guide, PG195), and the card may have
    /// fewer: status shows how many.
    #[schemars(title = "Card-to-host DMA channel")]
    #[schemars(range(min = CHANNEL.min, max = CHANNEL.max))]
    #[schemars(extend("x-allowed" = CHANNEL.allowed))]
    pub channel: u32,
    /// How many card-to-host channels capture uses together, from `channel` up: one
    /// capture thread per channel takes the next frame in turn, so one frame's DMA
    /// overlaps the next one's set-up (the channels share the link). From 1 to 4;
    /// `channel` plus `channels` may not pass 4, nor the card's own channel count.
    #[schemars(title = "Card-to-host DMA channels used")]
    #[schemars(range(min = CHANNELS.min, max = CHANNELS.max))]
    #[schemars(extend("x-allowed" = CHANNELS.allowed))]
    pub channels: u32,
    /// The longest wait for a frame or for one transfer, in milliseconds; a wait that
    /// lasts it is counted as a frame-wait timeout.
    #[schemars(title = "Timeout (ms)")]
    #[schemars(range(min = TIMEOUT_MS.min, max = TIMEOUT_MS.max))]
    #[schemars(extend("x-allowed" = TIMEOUT_MS.allowed))]
    pub timeout_ms: u64,
    /// Simulated card only: which measured machine its transfer times follow (a Jetson
    /// Orin on PCIe Gen3 x4, an x86 host on Gen3 x8), or off for as fast as memory
    /// copies go.
    #[schemars(title = "Simulated link")]
    pub sim_link: LinkPreset,
    /// How the frame ring's memory is locked in place for the card's DMA (pinned): auto
    /// (host pages on a Jetson Orin or Thor, nvidia_p2p on a discrete GPU), nvidia_p2p
    /// (NVIDIA's peer-to-peer interface for GPU memory), dma_buf (a CUDA dma-buf where
    /// the driver offers one, otherwise the platform's default, with the reason in
    /// status) or host. nvidia_p2p and dma_buf pin GPU memory, so they need the ring's
    /// memory on auto or cuda_device; host pins host memory, so it needs auto, host or
    /// cuda_host.
    #[schemars(title = "Pin method")]
    pub pin_method: PinChoice,
}

impl Default for CardConfig {
    fn default() -> Self {
        CardConfig {
            channel: 0,
            channels: 1,
            timeout_ms: 1000,
            sim_link: LinkPreset::OrinGen3x4,
            pin_method: PinChoice::Auto,
        }
    }
}

/// `ring`: the frame ring: the pinned buffers the card's DMA writes frames into, in GPU
/// (or host) memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
#[schemars(extend("x-order" = ["entries", "when_full", "memory"]))]
pub struct RingConfig {
    /// How many frames the ring holds at least, each buffer pinned once. The ring the
    /// service builds is a whole number of rounds over the card's frame slots, at least
    /// two, so it may be larger: with the simulated card's 4 slots, 4 asked for become 8
    /// (status shows the size in use). Entries × the largest frame must fit in 1 GiB.
    #[schemars(title = "Entries (at least)")]
    #[schemars(range(min = ENTRIES.min, max = ENTRIES.max))]
    #[schemars(extend("x-allowed" = ENTRIES.allowed))]
    pub entries: usize,
    /// What happens when inference falls behind and every entry holds a frame:
    /// drop_oldest drops the oldest frame waiting (counted as dropped), wait makes the
    /// card wait (no frame is dropped, frames may pile up on the card).
    #[schemars(title = "When the ring is full")]
    pub when_full: WhenFull,
    /// Where the ring's buffers are allocated.
    #[schemars(title = "Memory")]
    pub memory: RingMemory,
}

impl Default for RingConfig {
    fn default() -> Self {
        RingConfig {
            entries: 4,
            when_full: WhenFull::DropOldest,
            memory: RingMemory::Auto,
        }
    }
}

/// `ring.memory`: where the frame ring is allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RingMemory {
    /// What the platform wants: cuda_host on a Jetson (its GPU shares the host's
    /// memory), cuda_device on a discrete GPU, host without CUDA.
    Auto,
    /// Page-aligned host memory (no GPU stages).
    Host,
    /// GPU memory (cuMemAlloc); refused without CUDA.
    CudaDevice,
    /// Host memory locked in place and mapped for the GPU (cuMemHostAlloc, what a
    /// Jetson's pinning uses); refused without CUDA.
    CudaHost,
}

/// `model`: the ONNX image classifier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
#[schemars(extend("x-order" = ["path", "labels"]))]
pub struct ModelConfig {
    /// The image classifier, an ONNX file; relative to the data directory (or in a
    /// folder given with --model-root). It takes a batch of colour images (float32,
    /// N × 3 × height × width) and gives one score per class for each.
    #[schemars(title = "Model file (ONNX)")]
    #[schemars(extend("x-offer" = "models"))]
    #[schemars(length(min = 1))]
    pub path: PathBuf,
    /// The classes' names, one per line, class 0 first; empty: the model's file name
    /// with .labels.txt in place of .onnx. Relative to the data directory (or in a folder
    /// given with --model-root).
    #[schemars(title = "Labels file")]
    #[schemars(length(min = 1))]
    pub labels: Option<PathBuf>,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            path: PathBuf::from("models/efficientnet-lite0.onnx"),
            labels: None,
        }
    }
}

/// `inference`: how frames are checked and run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
#[schemars(extend("x-order" = [
    "verify_checksum",
    "threads",
    "provider",
    "max_batch",
    "batch_wait_us",
    "latency_target_us",
    "precision",
    "cuda_graph",
    "tensorrt"
]))]
pub struct InferenceConfig {
    /// Check each frame's checksum (the CRC-32 the card put in its header) before
    /// inference; a frame that fails is dropped and counted.
    #[schemars(title = "Check each frame's CRC")]
    pub verify_checksum: bool,
    /// CPU threads ONNX Runtime may use for one model run; 0 leaves the choice to it.
    #[schemars(title = "Threads")]
    #[schemars(range(min = THREADS.min, max = THREADS.max))]
    #[schemars(extend("x-allowed" = THREADS.allowed))]
    pub threads: usize,
    /// What runs the model (ONNX Runtime's execution provider): auto (TensorRT, else
    /// CUDA, else the CPU: the first that loads; status says which ran and why the
    /// others did not), cpu, cuda or tensorrt (refused where it cannot run).
    #[schemars(title = "Execution provider")]
    pub provider: Provider,
    /// Frames per model run: every ready frame up to this many runs as one batch. 0
    /// chooses from what runs the model (1 on the CPU, 64 on a discrete GPU, 8 on a
    /// Jetson), within half the frame ring; more than half the ring's entries is refused
    /// (the ring holds twice the batch).
    #[schemars(title = "Frames per model run (0 = chosen)")]
    #[schemars(range(min = MAX_BATCH.min, max = MAX_BATCH.max))]
    #[schemars(extend("x-allowed" = MAX_BATCH.allowed))]
    pub max_batch: usize,
    /// The longest wait for a batch to fill once its first frame is taken, in
    /// microseconds. Empty (the default): chosen as frames arrive, from the model's time
    /// per batch size measured at warm-up (status says what it chose); 0 runs what is
    /// ready.
    #[schemars(title = "Batch wait (µs, empty = chosen)")]
    #[schemars(range(min = BATCH_WAIT_US.min, max = BATCH_WAIT_US.max))]
    #[schemars(extend("x-allowed" = BATCH_WAIT_US.allowed))]
    pub batch_wait_us: Option<u64>,
    /// The latency a chosen batch wait aims within, in microseconds: the batch's fill
    /// plus the model's measured time for it. The smallest batch that keeps up with the
    /// arrivals (by 25 %, else by 10 %) and is within it is aimed at, and no batch takes
    /// more frames than stay within it; when no batch that keeps up is within it,
    /// keeping up comes first and status says the target cannot be met and why. Unused
    /// with a fixed batch wait.
    #[schemars(title = "Latency target (µs)")]
    #[schemars(range(min = LATENCY_TARGET_US.min, max = LATENCY_TARGET_US.max))]
    #[schemars(extend("x-allowed" = LATENCY_TARGET_US.allowed))]
    pub latency_target_us: u64,
    /// fp32 (32-bit floats), or fp16 (16-bit) on the GPU: TensorRT builds a 16-bit
    /// engine, CUDA loads the model's 16-bit copy (the model's name with .fp16.onnx,
    /// refused when there is none); the CPU runs fp32 and status says so.
    #[schemars(title = "Precision")]
    pub precision: Precision,
    /// Record the model's GPU work once per batch size and replay it (a CUDA graph),
    /// when the model reads its input in GPU memory; status says when it cannot.
    #[schemars(title = "CUDA graphs")]
    pub cuda_graph: bool,
    /// TensorRT settings.
    #[schemars(title = "TensorRT")]
    pub tensorrt: TensorRtConfig,
}

impl Default for InferenceConfig {
    fn default() -> Self {
        InferenceConfig {
            verify_checksum: true,
            threads: 0,
            provider: Provider::Auto,
            max_batch: 0,
            batch_wait_us: None,
            latency_target_us: DEFAULT_LATENCY_TARGET_US,
            precision: Precision::Fp32,
            cuda_graph: true,
            tensorrt: TensorRtConfig::default(),
        }
    }
}

/// `inference.tensorrt`: TensorRT settings (written, not run: README, "What has run where").
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
#[schemars(extend("x-order" = ["cache_dir", "dla_core"]))]
pub struct TensorRtConfig {
    /// Where TensorRT keeps the engines it builds; relative to the data directory.
    /// Empty: /var/lib/fpgagdr/tensorrt on the appliance (the service's state
    /// directory), else tensorrt in the user's cache directory.
    #[schemars(title = "Engine cache directory")]
    pub cache_dir: Option<PathBuf>,
    /// Run the engine on one of a Jetson Orin's two deep-learning accelerators (DLA core
    /// 0 or 1); empty runs it on the GPU.
    #[schemars(title = "DLA core (empty = the GPU)")]
    #[schemars(range(min = DLA_CORE.min, max = DLA_CORE.max))]
    #[schemars(extend("x-allowed" = DLA_CORE.allowed))]
    pub dla_core: Option<u32>,
}

/// The whole configuration document. Every field has a default; unknown fields are
/// refused.
// (As written by the user: `RawConfig::check` turns it into a `Config`. The doc line
// above is the schema's description, shown to users.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
#[schemars(rename = "Config")]
#[schemars(extend("x-order" = ["autostart", "source", "card", "ring", "model", "inference", "outputs"]))]
pub struct RawConfig {
    /// Start the pipeline when the service starts.
    #[schemars(title = "Start with the service")]
    pub autostart: bool,
    /// What the (simulated) sensor produces.
    #[schemars(title = "Frame source")]
    pub source: SourceConfig,
    /// How frames come from the card (its DMA).
    #[schemars(title = "Card")]
    pub card: CardConfig,
    /// The buffers the card writes frames into, pinned in GPU (or host) memory.
    #[schemars(title = "Frame ring")]
    pub ring: RingConfig,
    /// The ONNX image classifier.
    #[schemars(title = "Model")]
    pub model: ModelConfig,
    /// How frames are checked and run.
    #[schemars(title = "Inference")]
    pub inference: InferenceConfig,
    /// Where every frame's result goes besides the results log (MQTT), and the alert
    /// rules.
    #[schemars(title = "Outputs")]
    pub outputs: OutputsConfig,
}

impl Default for RawConfig {
    fn default() -> Self {
        RawConfig {
            autostart: true,
            source: SourceConfig::default(),
            card: CardConfig::default(),
            ring: RingConfig::default(),
            model: ModelConfig::default(),
            inference: InferenceConfig::default(),
            outputs: OutputsConfig::default(),
        }
    }
}

/// `outputs`: where every frame's result goes besides the results log, and the alert
/// rules it is checked against.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
#[schemars(extend("x-order" = ["mqtt", "alerts"]))]
pub struct OutputsConfig {
    /// Publish every result to an MQTT broker.
    #[schemars(title = "MQTT")]
    pub mqtt: MqttConfig,
    /// Alert rules on every result, and keeping the frames that match.
    #[schemars(title = "Alerts")]
    pub alerts: AlertsConfig,
}

/// `outputs.mqtt`: every frame's result as JSON on an MQTT broker: where it connects, the
/// topics and how sure delivery is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
#[schemars(extend("x-order" = [
    "enabled", "host", "port", "tls", "ca_file", "username", "password", "client_id",
    "topic", "status_topic", "alert_topic", "qos", "queue", "keep_alive_s"
]))]
pub struct MqttConfig {
    /// Publish results to the broker.
    #[schemars(title = "Publish to MQTT")]
    pub enabled: bool,
    /// The broker's host name or address.
    #[schemars(title = "Broker host")]
    #[schemars(length(min = 1, max = 253))]
    pub host: String,
    /// The broker's TCP port (1883 without TLS, 8883 with it, by convention).
    #[schemars(title = "Broker port")]
    #[schemars(range(min = MQTT_PORT.min, max = MQTT_PORT.max))]
    #[schemars(extend("x-allowed" = MQTT_PORT.allowed))]
    pub port: u16,
    /// Connect over TLS (encrypted), checking the broker's certificate against the CA
    /// file, else against the system's certificate authorities.
    #[schemars(title = "TLS")]
    pub tls: bool,
    /// With TLS: a PEM file of the certificate authority (or authorities) that signed
    /// the broker's certificate; empty: the system's certificate authorities.
    #[schemars(title = "CA file (PEM)")]
    #[schemars(length(min = 1))]
    pub ca_file: Option<PathBuf>,
    /// The user name the broker knows this appliance by; empty: none.
    #[schemars(title = "User name")]
    #[schemars(length(min = 1, max = 256))]
    pub username: Option<String>,
    /// The password: never shown once saved; leave it empty to keep the saved one.
    /// (Over the API: a change that leaves it out or sends null keeps it; an empty
    /// string removes it.)
    #[schemars(title = "Password")]
    #[schemars(length(max = 256))]
    #[schemars(extend("writeOnly" = true))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// The name this client gives the broker; empty: fpgagdr- and the host name.
    #[schemars(title = "Client id (empty = fpgagdr-<host name>)")]
    #[schemars(length(max = 64))]
    pub client_id: String,
    /// The topic every result is published on (no + or #).
    #[schemars(title = "Results topic")]
    #[schemars(length(min = 1, max = 1024))]
    pub topic: String,
    /// A topic that says online while the appliance is connected and offline once it
    /// went away (the broker keeps the last message; no + or #).
    #[schemars(title = "Status topic")]
    #[schemars(length(min = 1, max = 1024))]
    pub status_topic: String,
    /// The topic every alert is published on, at the results' QoS (no + or #).
    #[schemars(title = "Alert topic")]
    #[schemars(length(min = 1, max = 1024))]
    pub alert_topic: String,
    /// Quality of service. 0, at most once: results made while the broker is away are
    /// dropped (counted). 1, at least once: they wait in the queue and are sent after
    /// the reconnect (a result may arrive twice).
    #[schemars(title = "QoS")]
    #[schemars(range(min = MQTT_QOS.min, max = MQTT_QOS.max))]
    #[schemars(extend("x-allowed" = MQTT_QOS.allowed))]
    pub qos: u8,
    /// How many results may wait for the broker before more are dropped (counted). The
    /// queue is kept through a change of these settings.
    #[schemars(title = "Queue (results)")]
    #[schemars(range(min = MQTT_QUEUE.min, max = MQTT_QUEUE.max))]
    #[schemars(extend("x-allowed" = MQTT_QUEUE.allowed))]
    pub queue: usize,
    /// How often the connection is checked while nothing is sent, in seconds (MQTT's
    /// keep-alive).
    #[schemars(title = "Keep-alive (s)")]
    #[schemars(range(min = MQTT_KEEP_ALIVE_S.min, max = MQTT_KEEP_ALIVE_S.max))]
    #[schemars(extend("x-allowed" = MQTT_KEEP_ALIVE_S.allowed))]
    pub keep_alive_s: u64,
}

impl Default for MqttConfig {
    fn default() -> Self {
        MqttConfig {
            enabled: false,
            host: "localhost".into(),
            port: 1883,
            tls: false,
            ca_file: None,
            username: None,
            password: None,
            client_id: String::new(),
            topic: "fpgagdr/results".into(),
            status_topic: "fpgagdr/status".into(),
            alert_topic: "fpgagdr/alerts".into(),
            qos: 0,
            queue: 1000,
            keep_alive_s: 30,
        }
    }
}

/// Why a config cannot be applied, though it passed every rule of the document: what
/// only the system can judge (a file it names, the model, the card, a sensor). `field`
/// is the JSON pointer of the config field at fault, where one is.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct Unusable {
    /// JSON pointer of the config field at fault (e.g. `/model/path`), if one is.
    pub field: Option<std::borrow::Cow<'static, str>>,
    /// The rule and what broke it.
    pub message: String,
}

impl Unusable {
    /// `e`, blamed on the config field `field`.
    pub fn at(
        field: impl Into<std::borrow::Cow<'static, str>>,
        e: impl std::fmt::Display,
    ) -> Unusable {
        Unusable {
            field: Some(field.into()),
            message: e.to_string(),
        }
    }

    /// `e`, blamed on no one field (the card, the system).
    pub fn unplaced(e: impl std::fmt::Display) -> Unusable {
        Unusable {
            field: None,
            message: e.to_string(),
        }
    }
}

/// One broken rule, located by a JSON pointer.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct FieldError {
    /// JSON pointer of the field, e.g. `/ring/entries` (`""` for the whole document).
    pub field: String,
    /// Rule name: `json-syntax`, `unknown-field`, `type`, `value`, `range`, `required`,
    /// `pin-method-memory`.
    pub rule: &'static str,
    /// What was wrong, with the offending value.
    pub message: String,
}

/// A configuration document that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Not JSON, or not the shape of a config document.
    #[error("{}", located(.0))]
    Parse(FieldError),
    /// Well-formed, but values break rules.
    #[error("{}", .0.iter().map(|e| format!("{}: {}", e.field, e.message)).collect::<Vec<_>>().join("; "))]
    Invalid(Vec<FieldError>),
}

/// `field: message`, or the message alone for the whole document (`field` empty).
fn located(e: &FieldError) -> String {
    if e.field.is_empty() {
        e.message.clone()
    } else {
        format!("{}: {}", e.field, e.message)
    }
}

impl ConfigError {
    /// The individual field errors.
    pub fn fields(&self) -> Vec<FieldError> {
        match self {
            ConfigError::Parse(e) => vec![e.clone()],
            ConfigError::Invalid(v) => v.clone(),
        }
    }
}

/// What the data directory offers for the config's file fields
/// (`GET /api/v1/config/files`), paths as the config takes them (relative to the data
/// directory).
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct OfferedFiles {
    /// For `source.path`: `frames`, its image files and folders (sorted).
    pub frames: Vec<String>,
    /// For `model.path`: the `.onnx` files in `models` (sorted).
    pub models: Vec<String>,
}

/// Most entries listed per field (a folder of a million images lists its first ones).
pub const MAX_OFFERED: usize = 500;

/// Lists `dir` (under the data directory) as `dir/name`: entries `keep` accepts, sorted,
/// at most [`MAX_OFFERED`]; nothing when it cannot be read.
fn listing(dir: &str, keep: impl Fn(&Path) -> bool) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(data_dir().join(dir))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| keep(&e.path()))
        .filter_map(|e| e.file_name().to_str().map(|n| format!("{dir}/{n}")))
        .collect();
    names.sort();
    names.truncate(MAX_OFFERED);
    names
}

/// The frames and models the data directory holds now.
pub fn offered_files() -> OfferedFiles {
    let ext_in = |p: &Path, exts: &[&str]| {
        p.extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| exts.contains(&e.to_ascii_lowercase().as_str()))
    };
    let mut frames = listing("frames", |p| {
        p.is_dir() || ext_in(p, fpgagdr_sim::IMAGE_EXTENSIONS)
    });
    if data_dir().join("frames").is_dir() {
        frames.insert(0, "frames".into());
    }
    OfferedFiles {
        frames,
        models: listing("models", |p| p.is_file() && ext_in(p, &["onnx"])),
    }
}

fn resolve(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        data_dir().join(p)
    }
}

/// The rules of `outputs.mqtt` beyond its ranges: names and topics MQTT accepts.
fn check_mqtt(m: &MqttConfig, errs: &mut Vec<FieldError>) {
    let mut bad = |field: &str, rule: &'static str, message: String| {
        errs.push(FieldError {
            field: format!("/outputs/mqtt/{field}"),
            rule,
            message,
        })
    };
    if !MQTT_KEEP_ALIVE_S.contains(m.keep_alive_s) {
        bad(
            "keep_alive_s",
            "range",
            format!(
                "{} is out of range: must be {}",
                m.keep_alive_s, MQTT_KEEP_ALIVE_S.allowed
            ),
        );
    }
    if !MQTT_PORT.contains(m.port) {
        bad(
            "port",
            "range",
            format!("{} is out of range: must be {}", m.port, MQTT_PORT.allowed),
        );
    }
    if !MQTT_QOS.contains(m.qos) {
        bad(
            "qos",
            "range",
            format!("{} is out of range: must be {}", m.qos, MQTT_QOS.allowed),
        );
    }
    if !MQTT_QUEUE.contains(m.queue) {
        bad(
            "queue",
            "range",
            format!(
                "{} is out of range: must be {}",
                m.queue, MQTT_QUEUE.allowed
            ),
        );
    }
    if m.host.is_empty()
        || m.host.len() > 253
        || m.host
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '/')
    {
        bad(
            "host",
            "mqtt-host",
            format!(
                "{:?} is not a host name or address (1 to 253 characters, no spaces or slashes)",
                m.host
            ),
        );
    }
    for (field, topic) in [
        ("topic", &m.topic),
        ("status_topic", &m.status_topic),
        ("alert_topic", &m.alert_topic),
    ] {
        if topic.is_empty() || topic.len() > MQTT_MAX_TOPIC || topic.contains(['+', '#', '\0']) {
            bad(
                field,
                "mqtt-topic",
                format!(
                    "{topic:?} is not a topic to publish on: 1 to {MQTT_MAX_TOPIC} bytes, no wildcards (+, #) and no NUL"
                ),
            );
        }
    }
    if m.topic == m.status_topic {
        bad(
            "status_topic",
            "mqtt-topic",
            "must differ from outputs.mqtt.topic".into(),
        );
    }
    if m.alert_topic == m.topic || m.alert_topic == m.status_topic {
        bad(
            "alert_topic",
            "mqtt-topic",
            "must differ from outputs.mqtt.topic and outputs.mqtt.status_topic".into(),
        );
    }
    if m.client_id.len() > 64 || m.client_id.chars().any(|c| c.is_control()) {
        bad(
            "client_id",
            "mqtt-client-id",
            "at most 64 bytes, no control characters".into(),
        );
    }
    if let Some(u) = &m.username
        && (u.is_empty() || u.len() > 256 || u.contains('\0'))
    {
        bad(
            "username",
            "mqtt-credentials",
            "1 to 256 bytes, no NUL (or null for none)".into(),
        );
    }
    if let Some(p) = &m.password
        && (p.len() > 256 || p.contains('\0'))
    {
        bad(
            "password",
            "mqtt-credentials",
            "at most 256 bytes, no NUL".into(),
        );
    }
    if m.password.as_ref().is_some_and(|p| !p.is_empty()) && m.username.is_none() {
        bad(
            "password",
            "mqtt-credentials",
            "a password needs a user name (MQTT 3.1.1); to remove a saved password, send \"password\": \"\""
                .into(),
        );
    }
    if let Some(ca) = &m.ca_file
        && ca.as_os_str().is_empty()
    {
        bad(
            "ca_file",
            "mqtt-tls",
            "an empty path (null = the system's CA store)".into(),
        );
    }
}

/// Rule `pin-method-memory`: `card.pin_method` `nvidia_p2p` and `dma_buf` pin CUDA
/// device memory, `host` pins host pages; `ring.memory` must not ask for the other
/// (`auto` always fits). The message when it does.
fn pin_method_memory(method: PinChoice, memory: RingMemory) -> Option<String> {
    let needs = match (method, memory) {
        (PinChoice::Auto, _) | (_, RingMemory::Auto) => return None,
        (PinChoice::NvidiaP2p | PinChoice::DmaBuf, RingMemory::CudaDevice) => return None,
        (PinChoice::Host, RingMemory::Host | RingMemory::CudaHost) => return None,
        (PinChoice::NvidiaP2p | PinChoice::DmaBuf, _) => {
            "CUDA device memory (ring.memory auto or cuda_device)"
        }
        (PinChoice::Host, _) => "host pages (ring.memory auto, host or cuda_host)",
    };
    let memory = serde_json::to_value(memory)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    Some(format!(
        "card.pin_method {method} pins {needs}, but ring.memory is {memory}"
    ))
}

impl RawConfig {
    /// Checks every rule; returns all broken rules, not just the first, or the checked
    /// [`Config`]. `-0.0` frames/s is kept as `0.0`.
    pub fn check(mut self) -> Result<Config, ConfigError> {
        let mut errs = Vec::new();
        let mut rule = |field: &str, ok: bool, value: String, allowed: &str| {
            if !ok {
                errs.push(FieldError {
                    field: field.into(),
                    rule: "range",
                    message: format!("{value} is out of range: must be {allowed}"),
                });
            }
        };
        fn range<T: PartialOrd + Copy + std::fmt::Display>(
            rule: &mut impl FnMut(&str, bool, String, &str),
            r: &Range<T>,
            v: T,
        ) {
            rule(r.field, r.contains(v), v.to_string(), r.allowed);
        }
        let s = &self.source;
        rule(
            FPS.field,
            s.fps == 0.0 || (FPS.contains(s.fps) && s.fps >= MIN_FPS),
            s.fps.to_string(),
            FPS.allowed,
        );
        range(&mut rule, &WIDTH, s.width);
        range(&mut rule, &HEIGHT, s.height);
        rule(
            "/source/path",
            !s.path.as_os_str().is_empty(),
            "an empty path".into(),
            "a file or directory of images",
        );
        range(&mut rule, &CHANNEL, self.card.channel);
        range(&mut rule, &CHANNELS, self.card.channels);
        if CHANNEL.contains(self.card.channel)
            && CHANNELS.contains(self.card.channels)
            && self.card.channel + self.card.channels > CHANNELS.max
        {
            rule(
                CHANNELS.field,
                false,
                self.card.channels.to_string(),
                &format!(
                    "at most {} from card.channel {} (C2H channels {}..={} exist at most)",
                    CHANNELS.max - self.card.channel,
                    self.card.channel,
                    CHANNEL.min,
                    CHANNEL.max
                ),
            );
        }
        range(&mut rule, &TIMEOUT_MS, self.card.timeout_ms);
        range(&mut rule, &ENTRIES, self.ring.entries);
        rule(
            "/model/path",
            !self.model.path.as_os_str().is_empty(),
            "an empty path".into(),
            "an ONNX file",
        );
        range(&mut rule, &THREADS, self.inference.threads);
        let inf = &self.inference;
        range(&mut rule, &MAX_BATCH, inf.max_batch);
        if let Some(wait) = inf.batch_wait_us {
            range(&mut rule, &BATCH_WAIT_US, wait);
        }
        range(&mut rule, &LATENCY_TARGET_US, inf.latency_target_us);
        if let Some(core) = inf.tensorrt.dla_core {
            range(&mut rule, &DLA_CORE, core);
        }
        if ENTRIES.contains(self.ring.entries) && inf.max_batch > self.ring.entries / 2 {
            rule(
                MAX_BATCH.field,
                false,
                inf.max_batch.to_string(),
                &format!(
                    "at most ring.entries / 2 = {} (the frame ring holds twice the batch: \
                     raise ring.entries)",
                    self.ring.entries / 2
                ),
            );
        }
        if let Some(labels) = &self.model.labels {
            rule(
                "/model/labels",
                !labels.as_os_str().is_empty(),
                "an empty path".into(),
                "a labels file (or null: the model's name with .labels.txt)",
            );
        }
        if let Some(why) = pin_method_memory(self.card.pin_method, self.ring.memory) {
            errs.push(FieldError {
                field: "/card/pin_method".into(),
                rule: "pin-method-memory",
                message: why,
            });
        }
        check_mqtt(&self.outputs.mqtt, &mut errs);
        let mut alert_errs = Vec::new();
        alerts::check(&self.outputs.alerts, &mut alert_errs);
        errs.extend(alert_errs.into_iter().map(|e| FieldError {
            field: e.field,
            rule: e.rule,
            message: e.message,
        }));
        if !errs.is_empty() {
            return Err(ConfigError::Invalid(errs));
        }
        self.source.fps += 0.0; // -0.0 is saved as 0.0
        // A path inside the data directory is kept relative to it: the document (which
        // anyone may read) then does not show where the data directory is.
        let dir = data_dir();
        for p in [&mut self.source.path, &mut self.model.path]
            .into_iter()
            .chain(self.model.labels.as_mut())
        {
            if let Ok(rel) = p.strip_prefix(&dir) {
                *p = if rel.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    rel.to_path_buf()
                };
            }
        }
        Ok(Config { raw: self })
    }

    /// The JSON Schema of the document.
    pub fn schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(RawConfig)).expect("schema serialises")
    }
}

/// A configuration document that passed every rule of [`RawConfig::check`]; read its
/// fields through [`Config::raw`] (or `Deref`). Serialises as the document.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Config {
    raw: RawConfig,
}

impl Default for Config {
    fn default() -> Self {
        RawConfig::default()
            .check()
            .expect("the default config passes every rule")
    }
}

impl std::ops::Deref for Config {
    type Target = RawConfig;
    fn deref(&self) -> &RawConfig {
        &self.raw
    }
}

impl Config {
    /// The document as written.
    pub fn raw(&self) -> &RawConfig {
        &self.raw
    }

    /// The document, to change and [`RawConfig::check`] again.
    pub fn into_raw(self) -> RawConfig {
        self.raw
    }

    /// The JSON Schema of the document (that of [`RawConfig`]).
    pub fn schema() -> serde_json::Value {
        RawConfig::schema()
    }

    /// Parses a document, then validates it.
    pub fn from_json(bytes: &[u8]) -> Result<Config, ConfigError> {
        let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
            ConfigError::Parse(FieldError {
                field: String::new(),
                rule: "json-syntax",
                message: format!("malformed JSON: {e}"),
            })
        })?;
        Self::from_value(value)
    }

    /// Builds from a JSON value, then checks it. A number written with a zero fraction
    /// (`136.0`) is the whole number it is, for a whole-number field too (JSON Schema
    /// counts it as an integer: JSON Schema Core 2020-12, section 4.2.2).
    pub fn from_value(mut value: serde_json::Value) -> Result<Config, ConfigError> {
        integral_numbers(&mut value);
        // serde accepts a JSON array for a struct (fields by position); the document and
        // every section are objects, and nothing in it is an array.
        if let Some(field) = first_array_or_non_object(&value) {
            return Err(ConfigError::Parse(FieldError {
                message: format!(
                    "{}: must be a JSON object",
                    if field.is_empty() {
                        "the config document"
                    } else {
                        &field
                    }
                ),
                field,
                rule: "type",
            }));
        }
        let raw: RawConfig = serde_path_to_error::deserialize(value.clone()).map_err(|e| {
            let field = pointer(&e.path().to_string());
            let message = e.inner().to_string();
            // A whole number too large (or negative) for the field's type is outside its
            // range too: told in the range's words, as the form states them.
            if let (true, Some(allowed), Some(v)) = (
                message.starts_with("invalid value: integer"),
                range_words(&field),
                value.pointer(&field).filter(|v| v.is_number()),
            ) {
                return ConfigError::Invalid(vec![FieldError {
                    message: format!("{v} is out of range: must be {allowed}"),
                    field,
                    rule: "range",
                }]);
            }
            let rule = if message.starts_with("unknown field") {
                "unknown-field"
            } else if message.starts_with("invalid type") {
                "type"
            } else if message.starts_with("missing field") {
                "required"
            } else {
                "value"
            };
            ConfigError::Parse(FieldError {
                field,
                rule,
                message: plain_words(&message),
            })
        })?;
        raw.check()
    }

    /// Applies an RFC 7396 JSON merge patch and validates the result.
    pub fn merge_patch(&self, patch: &serde_json::Value) -> Result<Config, ConfigError> {
        if !patch.is_object() {
            return Err(ConfigError::Parse(FieldError {
                field: String::new(),
                rule: "type",
                message: "a merge patch must be a JSON object".into(),
            }));
        }
        let mut doc = serde_json::to_value(self).expect("config serialises");
        json_patch::merge(&mut doc, patch);
        Self::from_value(doc)
    }

    /// This document with the write-only secrets of `saved` kept where it has none
    /// (`outputs.mqtt.password` absent or null keeps the saved one; `""` removes it),
    /// checked again by every rule of the document: a kept password needs a user name
    /// too.
    ///
    /// Errors: [`ConfigError::Invalid`] (`mqtt-credentials`: the saved password is kept
    /// while the document removes the user name).
    pub fn keep_secrets(mut self, saved: &Config) -> Result<Config, ConfigError> {
        let p = &mut self.raw.outputs.mqtt.password;
        match p.as_deref() {
            None => p.clone_from(&saved.outputs.mqtt.password),
            Some("") => *p = None,
            Some(_) => return Ok(self),
        }
        self.raw.check()
    }

    /// The document as `GET /api/v1/config` shows it: without its write-only secrets.
    pub fn shown(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("config serialises");
        if let Some(m) = v
            .pointer_mut("/outputs/mqtt")
            .and_then(|m| m.as_object_mut())
        {
            m.remove("password");
        }
        v
    }

    /// Strong ETag of this document (CRC-32 of its canonical JSON), quoted.
    pub fn etag(&self) -> String {
        let bytes = serde_json::to_vec(self).expect("config serialises");
        format!("\"{:08x}\"", crc32fast::hash(&bytes))
    }

    /// Model file, resolved.
    pub fn model_path(&self) -> PathBuf {
        resolve(&self.model.path)
    }

    /// Labels file, resolved (default next to the model).
    pub fn labels_path(&self) -> PathBuf {
        match &self.model.labels {
            Some(p) => resolve(p),
            None => self.model_path().with_extension("labels.txt"),
        }
    }

    /// TensorRT's engine cache directory, resolved (see [`TensorRtConfig::cache_dir`]).
    pub fn tensorrt_cache_dir(&self) -> PathBuf {
        if let Some(p) = &self.inference.tensorrt.cache_dir {
            return resolve(p);
        }
        if let Some(state) = std::env::var("STATE_DIRECTORY")
            .ok()
            .and_then(|v| v.split(':').next().map(PathBuf::from))
            .filter(|p| !p.as_os_str().is_empty())
        {
            return state.join("tensorrt");
        }
        std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .unwrap_or_else(|| PathBuf::from("/var/cache"))
            .join("fpgagdr/tensorrt")
    }

    /// Replay source path, resolved.
    pub fn source_path(&self) -> PathBuf {
        resolve(&self.source.path)
    }
}

/// The JSON pointer of the document if it is not an object, or of the first section
/// that is an array (the config document has no array but a class rule's `classes`).
fn first_array_or_non_object(v: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    fn first_array(map: &serde_json::Map<String, Value>, at: &str) -> Option<String> {
        map.iter().find_map(|(k, v)| match v {
            Value::Array(_) if alerts::array_allowed(&format!("{at}/{k}")) => None,
            Value::Array(_) => Some(format!("{at}/{k}")),
            Value::Object(section) => first_array(section, &format!("{at}/{k}")),
            _ => None,
        })
    }
    let Value::Object(top) = v else {
        return Some(String::new());
    };
    first_array(top, "")
}

/// Every number in `v` that is a whole number written with a fraction of zero (`136.0`,
/// `-0.0`) becomes that whole number, within the range a double holds exactly (±2^53).
fn integral_numbers(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            if f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0 {
                *v = if f >= 0.0 {
                    Value::from(f as u64)
                } else {
                    Value::from(f as i64)
                };
            }
        }
        Value::Array(a) => a.iter_mut().for_each(integral_numbers),
        Value::Object(o) => o.values_mut().for_each(integral_numbers),
        _ => {}
    }
}

/// What a JSON parser's message says, in the words of the page: `invalid type: string
/// "x", expected f64` → `must be a number, not the text "x"` (no Rust type names, no
/// backticks).
pub fn plain_words(message: &str) -> String {
    let unquote = |s: &str| s.replace('`', "");
    let expected = |e: &str| -> String {
        let e = e.trim();
        match e {
            "f64" | "f32" => "a number".into(),
            "u8" => "a whole number from 0 to 255".into(),
            "u16" => "a whole number from 0 to 65535".into(),
            "u32" => "a whole number from 0 to 4294967295".into(),
            "u64" | "usize" => "a whole number, 0 or more".into(),
            "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number".into(),
            "a boolean" => "true or false".into(),
            "a string" => "text".into(),
            "a sequence" => "a list".into(),
            e if e.starts_with("struct ") || e == "a map" => "an object".into(),
            e if e.starts_with("one of ") => format!("one of: {}", unquote(&e[7..])),
            e => unquote(e),
        }
    };
    let got = |g: &str| -> String {
        let g = g.trim();
        if let Some(t) = g.strip_prefix("string ") {
            format!("the text {t}")
        } else if let Some(n) = g
            .strip_prefix("floating point ")
            .or_else(|| g.strip_prefix("integer "))
        {
            unquote(n)
        } else if let Some(b) = g.strip_prefix("boolean ") {
            unquote(b)
        } else if g == "map" {
            "an object".into()
        } else if g == "sequence" {
            "a list".into()
        } else {
            unquote(g)
        }
    };
    if let Some(rest) = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
        && let Some((g, e)) = rest.split_once(", expected ")
    {
        return format!("must be {}, not {}", expected(e), got(g));
    }
    if let Some(rest) = message.strip_prefix("unknown variant ")
        && let Some((v, e)) = rest.split_once(", expected ")
    {
        return format!(
            "{} is not a value this field takes ({})",
            unquote(v).replace('"', ""),
            expected(e)
        );
    }
    if let Some(rest) = message.strip_prefix("unknown field ") {
        let (f, e) = rest.split_once(", expected ").unwrap_or((rest, ""));
        let f = unquote(f);
        return if e.is_empty() {
            format!("unknown field {f}: there is no such setting here")
        } else {
            format!(
                "unknown field {f}: there is no such setting here (the settings here: {})",
                expected(e).trim_start_matches("one of: ")
            )
        };
    }
    if let Some(f) = message.strip_prefix("missing field ") {
        return format!("the setting {} is missing", unquote(f));
    }
    unquote(message)
}

/// `a.b[0].c` (serde_path_to_error) → `/a/b/0/c` (JSON pointer).
fn pointer(path: &str) -> String {
    if path == "." {
        return String::new();
    }
    let mut out = String::new();
    for part in path.split('.') {
        for seg in part.split('[') {
            let seg = seg.trim_end_matches(']');
            if !seg.is_empty() {
                out.push('/');
                out.push_str(seg);
            }
        }
    }
    out
}

/// A config file the service cannot start with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigFileError {
    /// The file exists but cannot be read.
    #[error("config file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The read's error.
        source: std::io::Error,
    },
    /// The file breaks a rule of the document.
    #[error("config file {}: {source}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Which field and rule.
        source: ConfigError,
    },
}

/// Prefix and suffix of the temporary file a save writes before it renames it over the
/// config file; one left by a crash mid-save is removed at the next start.
const TEMP_PREFIX: &str = ".fpgagdr-config-";
const TEMP_SUFFIX: &str = ".tmp";

/// The config document on disk and in force. Reading the config in force never waits
/// for a change being made (the caller serialises changes; see `control::Changes`).
#[derive(Debug)]
pub struct ConfigStore {
    path: PathBuf,
    current: std::sync::RwLock<std::sync::Arc<Config>>,
}

impl ConfigStore {
    /// Loads `path`, or the defaults when it does not exist (nothing is written until
    /// the config changes). A temporary file an earlier save left beside it (a crash
    /// between writing and renaming) is removed.
    ///
    /// Errors: [`ConfigFileError`]: the file exists but cannot be read or breaks a rule
    /// (the message names the file, the field and the rule).
    pub fn open(path: PathBuf) -> Result<Self, ConfigFileError> {
        remove_leftovers(&path);
        Self::read(path)
    }

    /// Loads `path` as [`ConfigStore::open`] does, touching nothing beside it (for a
    /// check of the file).
    pub fn read(path: PathBuf) -> Result<Self, ConfigFileError> {
        let current = match read_config_file(&path) {
            Ok(bytes) => match Config::from_json(&bytes) {
                Ok(c) => c,
                Err(source) => return Err(ConfigFileError::Invalid { path, source }),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Config::default(),
            Err(source) => return Err(ConfigFileError::Read { path, source }),
        };
        Ok(ConfigStore {
            path,
            current: std::sync::RwLock::new(std::sync::Arc::new(current)),
        })
    }

    /// The config in force.
    pub fn current(&self) -> std::sync::Arc<Config> {
        self.current.read().expect("config poisoned").clone()
    }

    /// Where it is persisted.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Persists `config` atomically (temp file in the same directory, fsync, rename,
    /// fsync of the directory), then makes it current. On error nothing changed.
    ///
    /// A symlinked config file is written through the link (the link stays), and an
    /// existing file keeps its permissions (a new one gets 0644).
    pub fn save(&self, config: Config) -> std::io::Result<()> {
        self.write(&config)?;
        self.set_current(config);
        Ok(())
    }

    /// Makes `config` the config in force (readers see it from now on), without
    /// writing it: for a caller that [`ConfigStore::write`] it first and had more to do
    /// (start its pipeline) before it counts as changed.
    pub fn set_current(&self, config: Config) {
        *self.current.write().expect("config poisoned") = std::sync::Arc::new(config);
    }

    /// Writes `config` to the file atomically, as [`ConfigStore::save`] does, leaving
    /// the config in force as it is.
    pub fn write(&self, config: &Config) -> std::io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let target = std::fs::canonicalize(&self.path).unwrap_or_else(|_| self.path.clone());
        let mut mode = std::fs::metadata(&target)
            .map(|m| m.permissions().mode() & 0o7777)
            .unwrap_or(0o644);
        if config.outputs.mqtt.password.is_some() {
            // A write-only secret: the owner (the service) alone reads the file.
            mode &= 0o700;
        }
        let dir = target
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .suffix(TEMP_SUFFIX)
            .tempfile_in(dir)?;
        serde_json::to_writer_pretty(&mut tmp, config)?;
        tmp.write_all(b"\n")?;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))?;
        tmp.as_file().sync_all()?;
        tmp.persist(&target).map_err(|e| e.error)?;
        std::fs::File::open(dir)?.sync_all()?;
        Ok(())
    }
}

/// Largest config file read at start, bytes (a config is a few hundred bytes).
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The config file's bytes: a regular file of at most [`MAX_FILE_BYTES`].
fn read_config_file(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not a regular file of at most {MAX_FILE_BYTES} bytes"),
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(MAX_FILE_BYTES).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Removes the temporary files a save left beside `path` (a crash mid-save).
fn remove_leftovers(path: &Path) {
    let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(TEMP_PREFIX) && name.ends_with(TEMP_SUFFIX) {
            match std::fs::remove_file(e.path()) {
                Ok(()) => tracing::warn!(
                    "removed {}, left by an interrupted save of the config",
                    e.path().display()
                ),
                Err(err) => tracing::warn!("cannot remove {}: {err}", e.path().display()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_whole_number_written_with_a_zero_fraction_is_taken_for_a_whole_number_field() {
        let c = Config::from_value(json!({"ring": {"entries": 136.0},
            "card": {"timeout_ms": 1000.0}, "source": {"fps": 30.0}}))
        .unwrap();
        assert_eq!((c.ring.entries, c.card.timeout_ms), (136, 1000));
        assert_eq!(c.source.fps, 30.0);
        // A fraction is not a whole number: refused, in words.
        let Err(ConfigError::Parse(e)) = Config::from_value(json!({"ring": {"entries": 13.5}}))
        else {
            panic!("13.5 entries accepted");
        };
        assert_eq!((e.field.as_str(), e.rule), ("/ring/entries", "type"));
        assert_eq!(e.message, "must be a whole number, 0 or more, not 13.5");
    }

    #[test]
    fn a_whole_number_too_large_for_its_field_is_refused_in_the_range_s_words() {
        // 70000 does not fit a u16 port: the words are the range check's, as the form
        // states them (`x-allowed`), not the integer type's 0 to 65535.
        for (doc, field, want) in [
            (
                json!({"outputs": {"mqtt": {"port": 70000}}}),
                MQTT_PORT.field,
                format!("70000 is out of range: must be {}", MQTT_PORT.allowed),
            ),
            (
                json!({"outputs": {"mqtt": {"qos": 300}}}),
                MQTT_QOS.field,
                format!("300 is out of range: must be {}", MQTT_QOS.allowed),
            ),
            (
                json!({"inference": {"tensorrt": {"dla_core": -1}}}),
                DLA_CORE.field,
                format!("-1 is out of range: must be {}", DLA_CORE.allowed),
            ),
        ] {
            let Err(ConfigError::Invalid(e)) = Config::from_value(doc.clone()) else {
                panic!("{doc} not refused as out of range");
            };
            assert_eq!(
                (e[0].field.as_str(), e[0].rule, e[0].message.as_str()),
                (field, "range", want.as_str()),
                "{doc}"
            );
        }
    }

    #[test]
    fn schema_states_each_range_in_the_check_s_words() {
        let schema = Config::schema();
        let mut ranged = 0;
        for def in schema["$defs"].as_object().unwrap().values() {
            for (name, p) in def["properties"].as_object().into_iter().flatten() {
                if p.get("maximum").is_some() {
                    ranged += 1;
                    assert!(p["x-allowed"].is_string(), "{name}: no x-allowed in {p}");
                }
            }
        }
        assert!(ranged >= 15, "{ranged} ranged fields");
        let entries = &schema["$defs"]["RingConfig"]["properties"]["entries"];
        assert_eq!(entries["x-allowed"], ENTRIES.allowed);
    }

    #[test]
    fn a_parser_error_is_told_in_plain_words() {
        for (doc, want) in [
            (
                json!({"source": {"fps": "fast"}}),
                "must be a number, not the text \"fast\"",
            ),
            (
                json!({"outputs": {"mqtt": {"enabled": 1}}}),
                "must be true or false, not 1",
            ),
            (
                json!({"ring": {"when_full": "block"}}),
                "block is not a value this field takes (drop_oldest or wait)",
            ),
        ] {
            let Err(ConfigError::Parse(e)) = Config::from_value(doc.clone()) else {
                panic!("{doc} accepted");
            };
            assert_eq!(e.message, want, "{doc}");
            assert!(!e.message.contains('`'), "{}", e.message);
        }
        let Err(ConfigError::Parse(e)) = Config::from_value(json!({"ring": {"size": 3}})) else {
            panic!("an unknown field accepted");
        };
        assert_eq!(e.rule, "unknown-field");
        assert!(
            e.message
                .starts_with("unknown field size: there is no such setting here"),
            "{}",
            e.message
        );
    }

    #[test]
    fn the_mqtt_password_is_write_only_and_kept() {
        let saved = Config::from_value(json!({"outputs": {"mqtt": {
            "enabled": true, "username": "u", "password": "s3cret"}}}))
        .unwrap();
        let shown = saved.shown();
        assert!(shown.pointer("/outputs/mqtt/password").is_none(), "{shown}");
        assert!(!shown.to_string().contains("s3cret"));
        // GET then PUT: the shown document keeps the saved secret.
        let put = Config::from_value(shown)
            .unwrap()
            .keep_secrets(&saved)
            .unwrap();
        assert_eq!(put.outputs.mqtt.password.as_deref(), Some("s3cret"));
        assert_eq!(put, saved);
        // A merge patch that leaves it out, or sends null, keeps it; "" removes it.
        let other = json!({"outputs": {"mqtt": {"topic": "x/y"}}});
        let patched = saved
            .merge_patch(&other)
            .unwrap()
            .keep_secrets(&saved)
            .unwrap();
        assert_eq!(patched.outputs.mqtt.password.as_deref(), Some("s3cret"));
        let null = json!({"outputs": {"mqtt": {"password": null}}});
        let patched = saved
            .merge_patch(&null)
            .unwrap()
            .keep_secrets(&saved)
            .unwrap();
        assert_eq!(patched.outputs.mqtt.password.as_deref(), Some("s3cret"));
        let clear = json!({"outputs": {"mqtt": {"password": ""}}});
        let patched = saved
            .merge_patch(&clear)
            .unwrap()
            .keep_secrets(&saved)
            .unwrap();
        assert_eq!(patched.outputs.mqtt.password, None);
        // Removing the user while the password is kept breaks the credentials rule, as
        // the same document would at start; removing both is how.
        let no_user = json!({"outputs": {"mqtt": {"username": null, "password": null}}});
        let e = saved
            .merge_patch(&no_user)
            .unwrap()
            .keep_secrets(&saved)
            .unwrap_err();
        assert_eq!(e.fields()[0].field, "/outputs/mqtt/password");
        assert_eq!(e.fields()[0].rule, "mqtt-credentials");
        let neither = json!({"outputs": {"mqtt": {"username": null, "password": ""}}});
        let c = saved
            .merge_patch(&neither)
            .unwrap()
            .keep_secrets(&saved)
            .unwrap();
        assert_eq!(c.outputs.mqtt.password, None);
        Config::from_json(&serde_json::to_vec(&c).unwrap()).unwrap();
    }

    #[test]
    fn mqtt_settings_name_their_rules() {
        let err = Config::from_value(json!({"outputs": {"mqtt": {
            "host": "a b", "port": 0, "qos": 2, "queue": 0, "keep_alive_s": 1,
            "topic": "a/#", "status_topic": "", "password": "p"}}}))
        .unwrap_err();
        let fields: Vec<String> = err.fields().into_iter().map(|f| f.field).collect();
        for f in [
            "host",
            "port",
            "qos",
            "queue",
            "keep_alive_s",
            "topic",
            "status_topic",
            "password",
        ] {
            assert!(
                fields.contains(&format!("/outputs/mqtt/{f}")),
                "{f}: {fields:?}"
            );
        }
        // A section written as an array is refused at any depth.
        let err = Config::from_value(json!({"outputs": {"mqtt": [true]}})).unwrap_err();
        assert_eq!(err.fields()[0].field, "/outputs/mqtt");
    }

    #[test]
    fn defaults_are_valid_and_round_trip() {
        let c = Config::default();
        RawConfig::default().check().unwrap();
        let text = serde_json::to_vec(&c).unwrap();
        assert_eq!(Config::from_json(&text).unwrap(), c);
        assert_eq!(Config::from_json(b"{}").unwrap(), c);
    }

    #[test]
    fn unknown_field_is_named() {
        let e = Config::from_json(br#"{"ring": {"entries": 4, "size": 9}}"#).unwrap_err();
        let f = &e.fields()[0];
        assert_eq!((f.field.as_str(), f.rule), ("/ring/size", "unknown-field"));
    }

    #[test]
    fn wrong_type_and_bad_enum_are_named() {
        let f = &Config::from_json(br#"{"ring": {"entries": "four"}}"#)
            .unwrap_err()
            .fields()[0];
        assert_eq!((f.field.as_str(), f.rule), ("/ring/entries", "type"));
        let f = &Config::from_json(br#"{"ring": {"when_full": "explode"}}"#)
            .unwrap_err()
            .fields()[0];
        assert_eq!((f.field.as_str(), f.rule), ("/ring/when_full", "value"));
        assert!(f.message.contains("drop_oldest"), "{}", f.message);
    }

    #[test]
    fn pin_method_is_read_named_when_wrong_and_checked_against_the_ring_memory() {
        assert_eq!(Config::default().card.pin_method, fpgagdr::PinChoice::Auto);
        for (text, want) in [
            ("auto", fpgagdr::PinChoice::Auto),
            ("nvidia_p2p", fpgagdr::PinChoice::NvidiaP2p),
            ("dma_buf", fpgagdr::PinChoice::DmaBuf),
            ("host", fpgagdr::PinChoice::Host),
        ] {
            let c =
                Config::from_json(format!(r#"{{"card": {{"pin_method": "{text}"}}}}"#).as_bytes())
                    .unwrap();
            assert_eq!(c.card.pin_method, want);
        }
        let f = &Config::from_json(br#"{"card": {"pin_method": "p2p"}}"#)
            .unwrap_err()
            .fields()[0];
        assert_eq!((f.field.as_str(), f.rule), ("/card/pin_method", "value"));
        assert!(f.message.contains("dma_buf"), "{}", f.message);
        // A GPU pin method needs device memory, host pages need host memory.
        for (method, memory) in [
            ("nvidia_p2p", "host"),
            ("nvidia_p2p", "cuda_host"),
            ("dma_buf", "host"),
            ("dma_buf", "cuda_host"),
            ("host", "cuda_device"),
        ] {
            let doc = format!(
                r#"{{"card": {{"pin_method": "{method}"}}, "ring": {{"memory": "{memory}"}}}}"#
            );
            let e = Config::from_json(doc.as_bytes()).unwrap_err();
            let f = &e.fields()[0];
            assert_eq!(
                (f.field.as_str(), f.rule),
                ("/card/pin_method", "pin-method-memory"),
                "{method} with {memory}"
            );
            assert!(
                f.message.contains(method) && f.message.contains(memory),
                "{}",
                f.message
            );
        }
        for (method, memory) in [
            ("nvidia_p2p", "cuda_device"),
            ("dma_buf", "cuda_device"),
            ("host", "host"),
            ("host", "cuda_host"),
            ("dma_buf", "auto"),
            ("auto", "cuda_device"),
        ] {
            let doc = format!(
                r#"{{"card": {{"pin_method": "{method}"}}, "ring": {{"memory": "{memory}"}}}}"#
            );
            Config::from_json(doc.as_bytes()).unwrap();
        }
    }

    #[test]
    fn every_range_error_is_reported() {
        let e = Config::from_json(
            br#"{"ring": {"entries": 1}, "card": {"timeout_ms": 0}, "source": {"fps": 50000}}"#,
        )
        .unwrap_err();
        let fields: Vec<String> = e.fields().into_iter().map(|f| f.field).collect();
        assert_eq!(fields, ["/source/fps", "/card/timeout_ms", "/ring/entries"]);
        assert!(e.fields().iter().all(|f| f.rule == "range"));
    }

    #[test]
    fn fps_is_zero_or_a_usable_rate() {
        for ok in ["0", "-0.0", "0.01", "1000", "2000", "10000"] {
            let c =
                Config::from_json(format!(r#"{{"source": {{"fps": {ok}}}}}"#).as_bytes()).unwrap();
            assert!(
                c.source.fps.is_sign_positive(),
                "{ok} saved as {}",
                c.source.fps
            );
        }
        for bad in ["1e-30", "0.009", "10000.0001", "-1"] {
            let e = Config::from_json(format!(r#"{{"source": {{"fps": {bad}}}}}"#).as_bytes())
                .unwrap_err();
            assert_eq!(e.fields()[0].field, "/source/fps", "{bad}");
        }
    }

    #[test]
    fn arrays_are_not_objects() {
        let f = &Config::from_json(b"[true]").unwrap_err().fields()[0];
        assert_eq!((f.field.as_str(), f.rule), ("", "type"));
        let f = &Config::from_json(br#"{"ring": [4, "wait"]}"#)
            .unwrap_err()
            .fields()[0];
        assert_eq!((f.field.as_str(), f.rule), ("/ring", "type"));
        let f = &Config::from_json(br#"{"model": {"labels": ["a"]}}"#)
            .unwrap_err()
            .fields()[0];
        assert_eq!((f.field.as_str(), f.rule), ("/model/labels", "type"));
    }

    #[test]
    fn malformed_json_is_a_syntax_error() {
        let f = &Config::from_json(b"{\"ring\": ").unwrap_err().fields()[0];
        assert_eq!(f.rule, "json-syntax");
    }

    #[test]
    fn merge_patch_changes_only_what_it_names() {
        let c = Config::default();
        let p = c
            .merge_patch(&json!({"ring": {"entries": 8}, "model": {"labels": "x.txt"}}))
            .unwrap();
        assert_eq!(p.ring.entries, 8);
        assert_eq!(p.ring.when_full, c.ring.when_full);
        assert_eq!(p.model.labels, Some(PathBuf::from("x.txt")));
        let back = p.merge_patch(&json!({"model": {"labels": null}})).unwrap();
        assert_eq!(back.model.labels, None);
        assert!(c.merge_patch(&json!([1])).is_err());
        assert_ne!(c.etag(), p.etag());
    }

    #[test]
    fn store_saves_atomically_and_reloads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/config.json");
        let s = ConfigStore::open(path.clone()).unwrap();
        assert_eq!(*s.current(), Config::default());
        let mut raw = RawConfig::default();
        raw.ring.entries = 6;
        let c = raw.check().unwrap();
        s.save(c.clone()).unwrap();
        assert_eq!(*ConfigStore::open(path.clone()).unwrap().current(), c);
        std::fs::write(&path, br#"{"ring": {"entries": 2000}}"#).unwrap();
        let e = ConfigStore::open(path).unwrap_err().to_string();
        assert!(
            e.contains("/ring/entries") && e.contains("out of range"),
            "{e}"
        );
    }

    #[test]
    fn schema_orders_every_object_as_the_document_does() {
        // `x-order` (the form's field order) lists each object's properties in the order
        // the document is written in: the struct's, which serde writes.
        fn keys_in_order(json: &str, keys: &[String]) -> Vec<String> {
            let mut found: Vec<(usize, String)> = keys
                .iter()
                .map(|k| {
                    (
                        json.find(&format!("\"{k}\":")).expect("key written"),
                        k.clone(),
                    )
                })
                .collect();
            found.sort();
            found.into_iter().map(|(_, k)| k).collect()
        }
        let schema = Config::schema();
        let check = |node: &serde_json::Value, written: String| {
            let order: Vec<String> = serde_json::from_value(node["x-order"].clone())
                .unwrap_or_else(|_| panic!("no x-order in {node}"));
            let mut props: Vec<String> = node["properties"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect();
            props.sort();
            let mut listed = order.clone();
            listed.sort();
            assert_eq!(listed, props, "x-order lists every property once");
            assert_eq!(keys_in_order(&written, &order), order);
        };
        let top = serde_json::to_string(&RawConfig::default()).unwrap();
        check(&schema, top);
        let defs = &schema["$defs"];
        check(
            &defs["SourceConfig"],
            serde_json::to_string(&SourceConfig::default()).unwrap(),
        );
        check(
            &defs["CardConfig"],
            serde_json::to_string(&CardConfig::default()).unwrap(),
        );
        check(
            &defs["RingConfig"],
            serde_json::to_string(&RingConfig::default()).unwrap(),
        );
        check(
            &defs["ModelConfig"],
            serde_json::to_string(&ModelConfig::default()).unwrap(),
        );
        check(
            &defs["InferenceConfig"],
            serde_json::to_string(&InferenceConfig::default()).unwrap(),
        );
        check(
            &defs["TensorRtConfig"],
            serde_json::to_string(&TensorRtConfig::default()).unwrap(),
        );
    }

    #[test]
    fn c2h_channels_are_counted_from_card_channel_within_the_xdma_four() {
        let ok = Config::from_json(br#"{"card": {"channel": 2, "channels": 2}}"#).unwrap();
        assert_eq!((ok.card.channel, ok.card.channels), (2, 2));
        assert_eq!(Config::from_json(b"{}").unwrap().card.channels, 1);
        for (doc, needle) in [
            (
                r#"{"card": {"channel": 3, "channels": 2}}"#,
                "at most 1 from",
            ),
            (r#"{"card": {"channels": 0}}"#, "between 1 and 4"),
            (r#"{"card": {"channels": 5}}"#, "between 1 and 4"),
        ] {
            let e = Config::from_json(doc.as_bytes()).unwrap_err();
            let f = &e.fields()[0];
            assert_eq!(
                (f.field.as_str(), f.rule),
                ("/card/channels", "range"),
                "{doc}"
            );
            assert!(f.message.contains(needle), "{doc}: {}", f.message);
        }
    }

    #[test]
    fn the_batch_wait_is_chosen_unless_set() {
        assert_eq!(
            Config::from_json(b"{}").unwrap().inference.batch_wait_us,
            None
        );
        let c = Config::from_json(br#"{"inference": {"batch_wait_us": 0}}"#).unwrap();
        assert_eq!(c.inference.batch_wait_us, Some(0));
        let c = Config::from_json(br#"{"inference": {"batch_wait_us": null}}"#).unwrap();
        assert_eq!(c.inference.batch_wait_us, None);
    }

    #[test]
    fn the_latency_target_is_5_ms_unless_set_and_refused_outside_its_range() {
        let c = Config::from_json(b"{}").unwrap();
        assert_eq!(c.inference.latency_target_us, 5_000);
        let c = Config::from_json(br#"{"inference": {"latency_target_us": 100}}"#).unwrap();
        assert_eq!(c.inference.latency_target_us, 100);
        for doc in [
            &br#"{"inference": {"latency_target_us": 99}}"#[..],
            br#"{"inference": {"latency_target_us": 1000001}}"#,
        ] {
            let e = Config::from_json(doc).unwrap_err();
            let f = &e.fields()[0];
            assert_eq!(
                (f.field.as_str(), f.rule),
                ("/inference/latency_target_us", "range")
            );
            assert!(
                f.message.contains("between 100 and 1000000 µs"),
                "{}",
                f.message
            );
        }
    }

    #[test]
    fn the_ring_holds_twice_the_batch() {
        let ok = Config::from_json(br#"{"ring": {"entries": 16}, "inference": {"max_batch": 8}}"#)
            .unwrap();
        assert_eq!(ok.inference.max_batch, 8);
        let e = Config::from_json(br#"{"ring": {"entries": 4}, "inference": {"max_batch": 8}}"#)
            .unwrap_err();
        let f = &e.fields()[0];
        assert_eq!(
            (f.field.as_str(), f.rule),
            ("/inference/max_batch", "range")
        );
        assert!(f.message.contains("ring.entries / 2 = 2"), "{}", f.message);
        // Auto (0) always fits; so does a batch of 1 in the smallest ring.
        Config::from_json(br#"{"ring": {"entries": 2}, "inference": {"max_batch": 1}}"#).unwrap();
        let e = Config::from_json(
            br#"{"inference": {"tensorrt": {"dla_core": 2}, "batch_wait_us": 100001}}"#,
        )
        .unwrap_err();
        let fields: Vec<String> = e.fields().into_iter().map(|f| f.field).collect();
        assert_eq!(
            fields,
            ["/inference/batch_wait_us", "/inference/tensorrt/dla_core"]
        );
        let f = &Config::from_json(br#"{"inference": {"precision": "fp8"}}"#)
            .unwrap_err()
            .fields()[0];
        assert_eq!(
            (f.field.as_str(), f.rule),
            ("/inference/precision", "value")
        );
    }

    #[test]
    fn schema_names_the_ranges() {
        let s = Config::schema().to_string();
        assert!(s.contains("when_full") && s.contains("drop_oldest") && s.contains("orin-gen3x4"));
    }

    #[test]
    fn schema_and_check_read_the_same_ranges() {
        let schema = Config::schema();
        let prop = |section: &str, field: &str| {
            let defs = &schema["$defs"];
            let name = schema["properties"][section]["$ref"]
                .as_str()
                .and_then(|r| r.rsplit('/').next())
                .unwrap_or_default()
                .to_string();
            defs[name.as_str()]["properties"][field].clone()
        };
        for (section, field, min, max) in [
            ("source", "width", WIDTH.min as f64, WIDTH.max as f64),
            ("source", "fps", FPS.min, FPS.max),
            ("card", "channel", CHANNEL.min as f64, CHANNEL.max as f64),
            (
                "card",
                "timeout_ms",
                TIMEOUT_MS.min as f64,
                TIMEOUT_MS.max as f64,
            ),
            ("ring", "entries", ENTRIES.min as f64, ENTRIES.max as f64),
            (
                "inference",
                "threads",
                THREADS.min as f64,
                THREADS.max as f64,
            ),
            (
                "inference",
                "max_batch",
                MAX_BATCH.min as f64,
                MAX_BATCH.max as f64,
            ),
            (
                "inference",
                "batch_wait_us",
                BATCH_WAIT_US.min as f64,
                BATCH_WAIT_US.max as f64,
            ),
            (
                "inference",
                "latency_target_us",
                LATENCY_TARGET_US.min as f64,
                LATENCY_TARGET_US.max as f64,
            ),
        ] {
            let p = prop(section, field);
            assert_eq!(p["minimum"].as_f64(), Some(min), "{section}.{field}: {p}");
            assert_eq!(p["maximum"].as_f64(), Some(max), "{section}.{field}: {p}");
        }
        // Just past each end is refused by the check.
        let mut raw = RawConfig::default();
        raw.ring.entries = ENTRIES.max + 1;
        raw.source.width = WIDTH.min - 1;
        let fields: Vec<String> = raw
            .check()
            .unwrap_err()
            .fields()
            .into_iter()
            .map(|f| f.field)
            .collect();
        assert_eq!(fields, [WIDTH.field, ENTRIES.field]);
    }
}

//! The card back-ends the service drives, registered in one table: how `--card` names
//! each, what status and `/metrics` say of it before it is opened, and how it is opened
//! with its frame trigger.
//!
//! Owns: [`BACKENDS`] (the table), [`CardBackend`] (one entry), [`CardChoice`] (the
//! back-end `--card` chose, with its argument), [`Opened`] and [`Frames`]. Must not:
//! allocate the frame ring or load the model (`pipeline` does, with what this returns).
//!
//! A new back-end is one entry of [`BACKENDS`] and its `open` function; `--card`,
//! `GET /api/v1/status` (`card.kind`, `card.name`, `card.simulated`) and `/metrics`
//! (`fpgagdr_card_simulated`) read it from here.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use fpgagdr::{Backend, Card, FrameTrigger};
use fpgagdr_sim::{FrameSource, Replay, SimCard, SimConfig, SimSensor, TestPattern};

use crate::config::{Config, SourceKind, Unusable};
use crate::files::Named;

/// The control node `--card auto` looks for.
pub const AUTO_CARD: &str = "/dev/fpgagdr0";

/// The replay frames a config names, confined and opened (`files`), for a back-end that
/// makes its own frames.
pub type Frames = Option<(Named, Vec<(String, std::fs::File)>)>;

/// The frame memory rule, as the pipeline applies it: `(frame slots, largest frame,
/// pin alignment, bytes of decoded frames)` → whether the ring and the frames fit.
pub type MemoryRule<'a> = &'a dyn Fn(usize, usize, usize, u64) -> Result<(), Unusable>;

/// A card opened for a pipeline.
pub struct Opened {
    /// The card.
    pub card: Card,
    /// Its frame trigger (the frame-done interrupt, or the simulated sensor).
    pub trigger: Box<dyn FrameTrigger>,
    /// Bytes of frames decoded on the host for it (the simulated card's replay).
    pub decoded: u64,
}

/// One card back-end.
#[derive(Debug)]
pub struct CardBackend {
    /// `card.kind` in `GET /api/v1/status`.
    pub kind: &'static str,
    /// Whether its frames are simulated (what status and `/metrics` say before the card
    /// was opened; once opened, the card's own status says).
    pub simulated: bool,
    /// The card's name before it was opened.
    name: fn(&CardChoice) -> String,
    /// Opens the card and its trigger for `config`.
    open: fn(&CardChoice, &Config, Frames, MemoryRule) -> Result<Opened, Unusable>,
}

/// Every back-end the service drives: the simulated card and a control node of the
/// kernel module.
pub static BACKENDS: [CardBackend; 2] = [
    CardBackend {
        kind: "sim",
        simulated: true,
        name: |_| "SimCard (simulated XDMA card)".into(),
        open: open_sim,
    },
    CardBackend {
        kind: "device",
        simulated: false,
        name: |c| {
            c.node()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default()
        },
        open: open_device,
    },
];

const SIM: &CardBackend = &BACKENDS[0];
const DEVICE: &CardBackend = &BACKENDS[1];

/// The card the service drives (from the command line, not the config document): a
/// back-end of [`BACKENDS`] and, for a device, its control node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardChoice {
    backend: &'static str,
    node: Option<PathBuf>,
    /// The simulated card's torn-frame fault: every this many C2Hs one is torn
    /// (`fpgagdr_sim::SimCard::simulate_torn_frames`); 0 = none.
    sim_torn_every: u64,
}

impl CardChoice {
    /// The simulated card.
    pub fn sim() -> CardChoice {
        CardChoice {
            backend: SIM.kind,
            node: None,
            sim_torn_every: 0,
        }
    }

    /// A control node of the kernel module, such as `/dev/fpgagdr0`.
    pub fn device(node: impl Into<PathBuf>) -> CardChoice {
        CardChoice {
            backend: DEVICE.kind,
            node: Some(node.into()),
            sim_torn_every: 0,
        }
    }

    /// Resolves the `--card` argument: `sim`, `auto`, or a control node's path. Returns
    /// the choice and why it was made, in words for the status page and the log.
    ///
    /// `auto` (the image's default) takes the card when `auto_node` (normally
    /// [`AUTO_CARD`]) exists, the simulated card otherwise; nothing else is probed, so a
    /// card whose module refuses it still shows up as that card's error, never as a
    /// silent fall-back to the simulation.
    pub fn resolve(arg: &str, auto_node: &Path) -> (CardChoice, String) {
        match arg {
            "sim" => (CardChoice::sim(), "--card sim".into()),
            "auto" if auto_node.exists() => (
                CardChoice::device(auto_node),
                format!("--card auto: {} exists", auto_node.display()),
            ),
            "auto" => (
                CardChoice::sim(),
                format!(
                    "--card auto: {} does not exist (no card, or the fpgagdr module is not loaded), so the simulated card",
                    auto_node.display()
                ),
            ),
            path => (CardChoice::device(path), format!("--card {path}")),
        }
    }

    /// This choice with the simulated card's torn-frame fault: every `every`-th C2H is
    /// torn (`fpgagdr_sim::SimCard::simulate_torn_frames`; 0 = none), for tests of how
    /// torn frames are counted. Errors (in words): a device was chosen, which has no such
    /// knob.
    pub fn with_sim_torn_frames(self, every: u64) -> Result<CardChoice, String> {
        if every > 0 && self.backend != SIM.kind {
            return Err(format!(
                "--sim-card-torn-every is a fault of the simulated card, and the card is {}",
                self.name()
            ));
        }
        Ok(CardChoice {
            sim_torn_every: every,
            ..self
        })
    }

    /// Its back-end's entry in [`BACKENDS`].
    pub fn backend(&self) -> &'static CardBackend {
        BACKENDS
            .iter()
            .find(|b| b.kind == self.backend)
            .expect("a choice names a registered back-end")
    }

    /// The control node, for a device.
    pub fn node(&self) -> Option<&Path> {
        self.node.as_deref()
    }

    /// The card's name before it was opened.
    pub fn name(&self) -> String {
        (self.backend().name)(self)
    }

    /// Opens the card and its frame trigger for `config`, with the replay `frames` the
    /// config names (read by the caller, within its time limit) and the frame memory
    /// rule the pipeline holds the card's frames to. Errors name the config field at
    /// fault where one is.
    pub fn open(
        &self,
        config: &Config,
        frames: Frames,
        memory: MemoryRule,
    ) -> Result<Opened, Unusable> {
        (self.backend().open)(self, config, frames, memory)
    }
}

fn open_sim(
    choice: &CardChoice,
    config: &Config,
    frames: Frames,
    memory: MemoryRule,
) -> Result<Opened, Unusable> {
    let sim = Arc::new(SimCard::new(SimConfig {
        preset: config.card.sim_link,
        ..SimConfig::default()
    }));
    sim.simulate_torn_frames(choice.sim_torn_every);
    let align = sim.status().alignment as usize;
    let (source, decoded): (Box<dyn FrameSource>, u64) = match (config.source.kind, frames) {
        (SourceKind::Replay, Some((named, files))) => {
            let plan = Replay::plan(named.shown.clone(), files)
                .map_err(|e| Unusable::at("/source/path", e))?;
            // The memory rule before anything is decoded (the ring as it will be: k x the
            // sensor's frame slots).
            memory(
                config.card.sim_link.sensor_slots() as usize,
                plan.max_frame_len(),
                align,
                plan.decoded_bytes(),
            )?;
            let replay = plan.decode().map_err(|e| Unusable::at("/source/path", e))?;
            let decoded = replay.decoded_bytes();
            (Box::new(replay), decoded)
        }
        _ => (
            Box::new(
                TestPattern::new(
                    config.source.format,
                    config.source.width,
                    config.source.height,
                )
                .map_err(|e| Unusable::at("/source/width", e))?
                .with_step(pattern_step(config.source.fps)),
            ),
            0,
        ),
    };
    let sensor = SimSensor::new(sim.clone(), source, config.source.fps, 0)
        .map_err(|e| Unusable::at("/source", e))?;
    Ok(Opened {
        card: Card::from_backend(sim),
        trigger: Box::new(sensor),
        decoded,
    })
}

/// Frames per one-pixel move of the test pattern at `fps` frames/s: the picture moves
/// about 30 times a second, as a camera's view would, so at thousands of frames a second
/// the simulated sensor rewrites a slot's header and identity bytes instead of rendering
/// every frame (`fpgagdr_sim::SimSensor`); every 256 frames when frames come as fast as
/// capture asks (`source.fps` 0).
pub fn pattern_step(fps: f64) -> u64 {
    if fps > 0.0 {
        ((fps / 30.0).floor() as u64).max(1)
    } else {
        256
    }
}

fn open_device(
    choice: &CardChoice,
    _: &Config,
    _: Frames,
    _: MemoryRule,
) -> Result<Opened, Unusable> {
    let path = choice.node().unwrap_or(Path::new(AUTO_CARD));
    let card = Card::open_path(path).map_err(Unusable::unplaced)?;
    let trigger = card.frame_trigger().map_err(|e| {
        Unusable::unplaced(format!(
            "rule frame-trigger: {} opened, but its frame trigger is not available: {e}",
            card.status().name
        ))
    })?;
    // The card's own frames: nothing is decoded on the host.
    Ok(Opened {
        card,
        trigger,
        decoded: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn card_auto_takes_the_node_when_it_exists_else_the_simulated_card() {
        let dir = tempfile::tempdir().unwrap();
        let node = dir.path().join("fpgagdr0");
        let (c, why) = CardChoice::resolve("auto", &node);
        assert_eq!(c, CardChoice::sim());
        assert!(why.contains("does not exist"), "{why}");
        std::fs::write(&node, b"").unwrap();
        let (c, why) = CardChoice::resolve("auto", &node);
        assert_eq!(c, CardChoice::device(&node));
        assert!(why.contains("exists"), "{why}");
        assert_eq!(CardChoice::resolve("sim", &node).0, CardChoice::sim());
        assert_eq!(
            CardChoice::resolve("/dev/fpgagdr3", &node).0,
            CardChoice::device("/dev/fpgagdr3")
        );
    }

    #[test]
    fn the_test_pattern_moves_about_thirty_times_a_second() {
        assert_eq!(pattern_step(30.0), 1);
        assert_eq!(pattern_step(10.0), 1);
        assert_eq!(pattern_step(6661.0), 222);
        assert_eq!(pattern_step(0.0), 256);
    }

    #[test]
    fn every_choice_names_a_registered_back_end() {
        let sim = CardChoice::sim();
        assert_eq!((sim.backend().kind, sim.backend().simulated), ("sim", true));
        assert_eq!(sim.name(), "SimCard (simulated XDMA card)");
        let dev = CardChoice::device("/dev/fpgagdr1");
        assert_eq!(
            (dev.backend().kind, dev.backend().simulated),
            ("device", false)
        );
        assert_eq!(dev.name(), "/dev/fpgagdr1");
        let kinds: Vec<_> = BACKENDS.iter().map(|b| b.kind).collect();
        assert_eq!(kinds, ["sim", "device"]);
    }
}

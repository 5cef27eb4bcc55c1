//! # fpgagdr-infer — inference where the frame lies
//!
//! Owns: [`Model`] (an ONNX Runtime session on the TensorRT, CUDA or CPU execution
//! provider, its labels, batches, top-5; TensorRT's engines kept per model digest,
//! [`EngineCache`], and the build in progress, [`engine_build`]), [`Preprocessor`] (frame → model input tensor on
//! the CPU, Pillow's antialiased resize), the CUDA kernels of [`gpu`] (header check,
//! payload CRC and preprocessing of a batch of frames in GPU memory), and [`FramePrep`],
//! the step between filled ring entries and the model's results: check and preprocess a
//! batch on the GPU when the entries are CUDA memory and the kernels compile (the model
//! then runs on the same stream, reading the tensors where they lie), on the CPU
//! otherwise; [`RingPrep`], the same step fed with `fpgagdr::FrameRing` entries by their
//! consumer tokens, whose life keeps the promise [`FramePrep::push`] asks for. Must not:
//! know about the frame ring's states or threads; the service's inference thread
//! (`fpgagdrd` `pipeline/infer.rs`) drives these.
//!
//! All of the appliance's CUDA and ONNX Runtime `unsafe` is here: kernel launches and
//! device copies (`gpu/`, `prep.rs`, `held.rs`), and the device tensors handed to ONNX
//! Runtime (`model/`); each block states what it relies on. Modules, one way down:
//! `held` → `prep` (with `prep/ahead.rs`, batches queued ahead on a second stream) →
//! `model`, `gpu`, `preprocess`; `model` → `gpu` (the top-5 kernel) → `preprocess`.
#![deny(missing_docs)]

pub mod gpu;
mod held;
mod model;
mod prep;
mod preprocess;

pub use held::RingPrep;
pub use model::{
    BatchCosts, Classification, EngineBuild, EngineCache, MAX_BATCH, MAX_CLASSES, MAX_INPUT_SIDE,
    Model, ModelError, ModelOptions, Precision, Provider, Ran, TOP_K, TensorRtOptions, Top,
    display_labels, engine_build,
};
pub use prep::{BatchTimes, FrameOutcome, FramePrep, PrepError, Pushed};
pub use preprocess::{
    CROP_FRACTION, Coefficients, FrameView, MEAN, PRECISION_BITS, Preprocessor, SCALE, centre_crop,
    coefficients,
};

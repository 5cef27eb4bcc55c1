//! # fpgagdr-infer — inference where the frame lies
//!
//! Owns: [`Model`] (an ONNX Runtime session on the CPU or CUDA execution provider, its
//! labels, top-5), [`Preprocessor`] (frame → model input tensor on the CPU), the CUDA
//! kernels of [`gpu`] (payload CRC and preprocessing reading a ring entry in GPU memory),
//! and [`FramePrep`], the step between a filled ring entry and the model: check and
//! preprocess on the GPU when the entry is CUDA memory and the kernels compile, on the
//! CPU otherwise. Must not: know about the frame ring's states or threads; the
//! service's inference thread (`fpgagdrd` `pipeline/infer.rs`) drives these and keeps
//! the promise [`FramePrep::run`] asks for.
//!
//! All of the appliance's CUDA and ONNX Runtime `unsafe` is here: kernel launches and
//! device copies (`gpu/`, `prep.rs`), and the device tensor handed to ONNX Runtime
//! (`model.rs`); each block states what it relies on. Modules, one way down: `prep` →
//! `model`, `gpu`, `preprocess`; `gpu` → `preprocess`.
#![deny(missing_docs)]

pub mod gpu;
mod model;
mod prep;
mod preprocess;

pub use model::{Classification, MAX_CLASSES, MAX_INPUT_SIDE, Model, ModelError, Provider, TOP_K};
pub use prep::{DeviceTensor, FramePrep, GpuPrep, PrepError, Prepped, Tensor};
pub use preprocess::{CROP_FRACTION, FrameView, MEAN, Preprocessor, SCALE};

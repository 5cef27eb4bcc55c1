//! Inference: the ONNX model and the preprocessing that feeds it.
//!
//! Owns: [`Model`] (ONNX Runtime session, labels, top-5) and [`Preprocessor`]
//! (frame → model input tensor). Must not: know about the frame ring or threads; the
//! inference thread (`pipeline/infer.rs`) drives both.

pub mod gpu;
mod model;
mod prep;
mod preprocess;

pub use model::{Classification, Model, ModelError, Provider, TOP_K};
pub use preprocess::{CROP_FRACTION, FrameView, MEAN, Preprocessor, SCALE};

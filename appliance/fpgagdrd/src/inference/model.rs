//! The ONNX model: loading through ONNX Runtime (loaded at run time), running it on
//! one input tensor, and turning logits into a top-5 with labels.
//!
//! The ONNX Runtime library is found at `ORT_DYLIB_PATH` (the `ort` crate's own
//! variable), else `libonnxruntime.so` through the system loader. CPU execution here;
//! the seam for the CUDA/TensorRT execution providers is [`Model::load`]'s session
//! builder (see `docs/decisions.md`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ort::environment::Environment;
use ort::session::Session;
use ort::value::{TensorRef, ValueType};

/// Results kept per frame.
pub const TOP_K: usize = 5;

/// Why a model cannot be used. Messages name the file and the rule.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// ONNX Runtime could not be loaded.
    #[error(
        "rule onnx-runtime: cannot load ONNX Runtime from {path}: {reason} (set ORT_DYLIB_PATH)"
    )]
    Runtime {
        /// Library path tried.
        path: String,
        /// Loader's reason.
        reason: String,
    },
    /// The model file is missing or ONNX Runtime rejected it.
    #[error("rule model-file: cannot load model {path}: {reason}")]
    File {
        /// Model path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The model's inputs or outputs are not an image classifier's.
    #[error("rule model-shape: model {path}: {reason}")]
    Shape {
        /// Model path.
        path: PathBuf,
        /// Which expectation failed.
        reason: String,
    },
    /// The labels file is missing or does not match the model's classes.
    #[error("rule model-labels: labels {path}: {reason}")]
    Labels {
        /// Labels path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// ONNX Runtime failed while running the model.
    #[error("rule inference: {0}")]
    Run(String),
}

/// The ONNX Runtime library path the service will load.
fn runtime_path() -> String {
    std::env::var("ORT_DYLIB_PATH").unwrap_or_else(|_| "libonnxruntime.so".into())
}

fn environment() -> Result<Environment, ModelError> {
    static ENV: OnceLock<Result<Environment, String>> = OnceLock::new();
    let path = runtime_path();
    ENV.get_or_init(|| {
        ort::init_from(&path)
            .map_err(|e| e.to_string())?
            .with_name("fpgagdrd")
            .build()
            .map_err(|e| e.to_string())
    })
    .clone()
    .map_err(|reason| ModelError::Runtime { path, reason })
}

/// One classification: class index, display label, probability (softmax of logits).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Classification {
    /// Class index in the model's output.
    pub index: u32,
    /// Display label (the labels file's line up to its first comma).
    pub label: String,
    /// Probability, 0..=1.
    pub score: f32,
}

/// An image classifier: NCHW float32 input `[1, 3, H, W]`, output `[1, classes]`.
pub struct Model {
    session: Session,
    input: String,
    width: usize,
    height: usize,
    labels: Vec<String>,
    path: PathBuf,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("path", &self.path)
            .field("input", &(self.width, self.height))
            .finish()
    }
}

impl Model {
    /// Loads `path` with its labels file (one label per line, class 0 first).
    ///
    /// `threads` bounds ONNX Runtime's intra-op threads (0 = its default).
    pub fn load(path: &Path, labels: &Path, threads: usize) -> Result<Model, ModelError> {
        let env = environment()?;
        let file_err = |reason: String| ModelError::File {
            path: path.to_path_buf(),
            reason,
        };
        if !path.is_file() {
            let why = if path.exists() {
                "not a regular file"
            } else {
                "no such file"
            };
            return Err(file_err(why.into()));
        }
        // ONNX Runtime's worker threads spin between runs by default; at a camera's
        // frame rate that burns the idle cores (and an Orin's power budget) for nothing.
        let mut builder = Session::builder(&env)
            .map_err(|e| file_err(e.to_string()))?
            .with_intra_op_spinning(false)
            .map_err(|e| file_err(e.to_string()))?
            .with_inter_op_spinning(false)
            .map_err(|e| file_err(e.to_string()))?;
        if threads > 0 {
            builder = builder
                .with_intra_threads(threads)
                .map_err(|e| file_err(e.to_string()))?;
        }
        let session = builder
            .commit_from_file(path)
            .map_err(|e| file_err(e.to_string()))?;
        let shape_err = |reason: String| ModelError::Shape {
            path: path.to_path_buf(),
            reason,
        };
        let [input] = session.inputs() else {
            return Err(shape_err(format!(
                "has {} inputs, expected 1",
                session.inputs().len()
            )));
        };
        let (width, height) = match input.dtype() {
            ValueType::Tensor { ty, shape, .. }
                if *ty == ort::value::TensorElementType::Float32
                    && shape.len() == 4
                    && shape[1] == 3
                    && shape[2] > 0
                    && shape[3] > 0 =>
            {
                (shape[3] as usize, shape[2] as usize)
            }
            other => {
                return Err(shape_err(format!(
                    "input {} is {other:?}, expected float32 [N,3,H,W]",
                    input.name()
                )));
            }
        };
        let classes = match session.outputs() {
            [out] => match out.dtype() {
                ValueType::Tensor { ty, shape, .. }
                    if ty == &ort::value::TensorElementType::Float32
                        && shape.len() == 2
                        && shape[1] > 0 =>
                {
                    shape[1] as usize
                }
                other => {
                    return Err(shape_err(format!(
                        "output is {other:?}, expected float32 [N, classes]"
                    )));
                }
            },
            outs => return Err(shape_err(format!("has {} outputs, expected 1", outs.len()))),
        };
        let labels = read_labels(labels, classes)?;
        let mut model = Model {
            input: input.name().to_string(),
            session,
            width,
            height,
            labels,
            path: path.to_path_buf(),
        };
        // A model can load and still fail when run (a bad Reshape, an output that is not
        // what its declaration says): one trial run on a grey frame finds out now, before
        // the model replaces a working one. It also warms ONNX Runtime up.
        let grey = vec![0f32; 3 * width * height];
        let mut top = [(0u32, 0f32); TOP_K];
        model
            .classify(&grey, &mut top)
            .map_err(|e| ModelError::Shape {
                path: path.to_path_buf(),
                reason: format!("failed a trial run on a grey frame: {e}"),
            })?;
        Ok(model)
    }

    /// Model input width and height in pixels.
    pub fn input_size(&self) -> (usize, usize) {
        (self.width, self.height)
    }

    /// File name of the model, for status pages.
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// Runs the model on one NCHW tensor (length 3 × H × W) and writes the top
    /// [`TOP_K`] (index, probability) pairs, best first, into `top`.
    pub fn classify(
        &mut self,
        input: &[f32],
        top: &mut [(u32, f32); TOP_K],
    ) -> Result<(), ModelError> {
        let shape = [1usize, 3, self.height, self.width];
        let tensor = TensorRef::from_array_view((shape, input))
            .map_err(|e| ModelError::Run(e.to_string()))?;
        let outputs = self
            .session
            .run(ort::inputs![self.input.as_str() => tensor])
            .map_err(|e| ModelError::Run(e.to_string()))?;
        let (_, logits) = outputs[0]
            .try_extract_tensor::<f32>()
            .map_err(|e| ModelError::Run(e.to_string()))?;
        top_k(logits, top);
        Ok(())
    }

    /// The display label of class `index`.
    pub fn label(&self, index: u32) -> &str {
        self.labels
            .get(index as usize)
            .map(String::as_str)
            .unwrap_or("?")
    }
}

/// Softmax over `logits`, keeping the best [`TOP_K`] without allocating.
fn top_k(logits: &[f32], top: &mut [(u32, f32); TOP_K]) {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f32 = logits.iter().map(|&l| (l - max).exp()).sum();
    *top = [(0, f32::NEG_INFINITY); TOP_K];
    for (i, &l) in logits.iter().enumerate() {
        let p = (l - max).exp() / sum;
        if p > top[TOP_K - 1].1 {
            let mut at = TOP_K - 1;
            while at > 0 && top[at - 1].1 < p {
                top[at] = top[at - 1];
                at -= 1;
            }
            top[at] = (i as u32, p);
        }
    }
}

fn read_labels(path: &Path, classes: usize) -> Result<Vec<String>, ModelError> {
    let err = |reason: String| ModelError::Labels {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    let labels: Vec<String> = text
        .lines()
        .map(|l| l.split(',').next().unwrap_or("").trim().to_string())
        .collect();
    if labels.len() != classes {
        return Err(err(format!(
            "has {} lines, the model has {classes} classes",
            labels.len()
        )));
    }
    Ok(labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_orders_by_probability() {
        let logits = [0.0, 5.0, 1.0, 4.0, 3.0, 2.0, -1.0];
        let mut top = [(0, 0.0); TOP_K];
        top_k(&logits, &mut top);
        let idx: Vec<u32> = top.iter().map(|t| t.0).collect();
        assert_eq!(idx, [1, 3, 4, 5, 2]);
        assert!(top.windows(2).all(|w| w[0].1 >= w[1].1));
        let total: f32 = logits.iter().map(|l| (l - 5.0f32).exp()).sum();
        assert!((top[0].1 - 1.0 / total).abs() < 1e-6);
    }

    #[test]
    fn labels_must_match_the_class_count() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l.txt");
        std::fs::write(&p, "tench, Tinca tinca\ngoldfish\n").unwrap();
        assert_eq!(read_labels(&p, 2).unwrap(), ["tench", "goldfish"]);
        let e = read_labels(&p, 3).unwrap_err().to_string();
        assert!(
            e.starts_with("rule model-labels") && e.contains("2 lines"),
            "{e}"
        );
    }
}

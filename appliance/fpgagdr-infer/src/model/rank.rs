//! A frame's best classes from the model's logits on the host: softmax and the top
//! [`TOP_K`], without allocating. (On the GPU path the same ranking runs where the logits
//! lie: `crate::gpu::GpuTopK`.)
//!
//! Owns: [`Top`], [`TOP_K`], `top_k_rows`. Must not: run the model (`mod.rs`,
//! `device.rs`).

/// Results kept per frame.
pub const TOP_K: usize = 5;

/// A frame's best [`TOP_K`] classes: (class index, probability), best first.
pub type Top = [(u32, f32); TOP_K];

/// Frame i's top-k from row i of `logits` (`n` rows).
pub(crate) fn top_k_rows(logits: &[f32], n: usize, tops: &mut [Top]) -> Result<(), String> {
    if n == 0 || !logits.len().is_multiple_of(n) {
        return Err(format!("{} logits for {n} frames", logits.len()));
    }
    let classes = logits.len() / n;
    for (row, top) in logits.chunks_exact(classes).zip(tops.iter_mut()) {
        top_k(row, top);
    }
    Ok(())
}

/// Softmax over `logits`, keeping the best [`TOP_K`] without allocating.
fn top_k(logits: &[f32], top: &mut Top) {
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
    fn top_k_rows_keeps_each_frame_apart() {
        let logits = [0.0, 9.0, 1.0, 7.0, 0.0, 2.0];
        let mut tops = [[(0, 0.0); TOP_K]; 2];
        top_k_rows(&logits, 2, &mut tops).unwrap();
        assert_eq!((tops[0][0].0, tops[1][0].0), (1, 0));
    }
}

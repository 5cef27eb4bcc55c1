//! [`Range`]: the inclusive bound of a numeric config field, in one place for the
//! config's own fields and its alert rules' (`alerts.rs`), so neither needs the other.

/// An inclusive range a numeric field must lie in: the one place each bound is written.
/// The JSON Schema's `minimum`/`maximum` and `x-allowed` (these words, which the
/// dashboard's form shows under the field) and the config's checks all read it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range<T> {
    /// JSON pointer of the field (`*` for an alert rule's name).
    pub field: &'static str,
    /// Smallest value allowed.
    pub min: T,
    /// Largest value allowed.
    pub max: T,
    /// The rule in words, with the unit, for the error message.
    pub allowed: &'static str,
}

impl<T: PartialOrd + Copy> Range<T> {
    /// Whether `v` lies in the range.
    pub fn contains(&self, v: T) -> bool {
        self.min <= v && v <= self.max
    }
}

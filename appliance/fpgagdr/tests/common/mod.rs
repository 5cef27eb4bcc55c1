//! Helpers shared by the kernel back-end's tests.

use fpgagdr::Error;

/// Asserts that `e` broke `rule` and that its message names every one of `values`.
#[track_caller]
pub(crate) fn assert_rule(e: &Error, rule: &str, values: &[&str]) {
    assert_eq!(e.rule(), rule, "wrong rule for: {e}");
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!("rule {rule}: ")),
        "message does not start with its rule: {msg}"
    );
    for v in values {
        assert!(msg.contains(v), "message does not name {v:?}: {msg}");
    }
}

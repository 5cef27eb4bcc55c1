//! The kernel back-end without the kernel module: what opening a path that is not a
//! card says. (The conversions, requests and errno table are unit tests in
//! `src/kernel/convert.rs`; transfers against the real module run under QEMU.)

mod common;

use common::assert_rule;
use fpgagdr::{Card, KernelCard};

#[test]
fn a_missing_node_says_no_such_device_node() {
    let e = Card::open_path("/dev/fpgagdr-no-such-node-77").unwrap_err();
    assert_rule(
        &e,
        "card-present",
        &[
            "/dev/fpgagdr-no-such-node-77",
            "no such device node",
            "modprobe fpgagdr",
        ],
    );
    let e = KernelCard::open("/dev/fpgagdr-no-such-node-77").unwrap_err();
    assert_rule(&e, "card-present", &["no such device node"]);
}

#[test]
fn a_file_that_is_not_a_control_node_is_refused_by_its_ioctl() {
    // A regular file opens, but answers GET_STATUS with ENOTTY.
    let file = tempfile::NamedTempFile::new().unwrap();
    let path = file.path().to_path_buf();
    let e = Card::open_path(&path).unwrap_err();
    assert_rule(
        &e,
        "card-present",
        &[
            &path.display().to_string(),
            "not an fpgagdr control node",
            "ENOTTY",
        ],
    );
    // So does a character device of another driver.
    if std::path::Path::new("/dev/null").exists() {
        let e = Card::open_path("/dev/null").unwrap_err();
        assert_rule(&e, "card-present", &["/dev/null", "ENOTTY"]);
    }
}

#[test]
fn a_directory_names_the_open_error() {
    let dir = tempfile::tempdir().unwrap();
    let e = Card::open_path(dir.path()).unwrap_err();
    assert_rule(&e, "card-present", &["cannot open it"]);
}

#[test]
fn sim_is_not_a_device_node() {
    // The simulated card is its own crate (fpgagdr-sim); "sim" here is a relative path.
    let e = Card::open_path("sim").unwrap_err();
    assert_rule(&e, "card-present", &["sim"]);
}

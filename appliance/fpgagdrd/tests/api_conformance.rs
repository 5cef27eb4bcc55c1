//! The REST API against its generated OpenAPI document: the real binary, on the
//! simulated card with a real frame and the real model, driving a real RAUC on a private
//! D-Bus bus (so the OTA operations answer as on a device, not 503), checked by
//! schemathesis through `appliance/scripts/api-conformance.sh`: the served document is
//! valid OpenAPI 3.1, and no generated request gets a server error or a response the
//! document does not describe.
//!
//! It takes a minute or two and installs schemathesis from PyPI on first use, so it runs
//! when `FPGAGDR_API_CONFORMANCE=1` (./test.sh sets it, with `FPGAGDR_REQUIRE_RAUC=1`);
//! otherwise it prints why it is skipped and passes.

mod common;

use std::path::Path;
use std::process::Command;

use common::rauc::{Rauc, rauc_ready};
use common::{Service, TOKEN, replay};

#[test]
fn every_operation_answers_as_the_document_says() {
    if std::env::var_os("FPGAGDR_API_CONFORMANCE").is_none_or(|v| v != "1") {
        eprintln!("skipped: api conformance: set FPGAGDR_API_CONFORMANCE=1 (./test.sh does)");
        return;
    }
    if !rauc_ready("api conformance") {
        return;
    }
    let env = Rauc::start(true);
    let spool = env.path("spool");
    let sysfs = tempfile::tempdir().expect("temp dir");
    let mut config = replay("chelsea.png");
    config["source"]["fps"] = 20.into();
    let svc = Service::start_with_args(
        Some(&config.to_string()),
        &[
            "--rauc-bus",
            &env.bus,
            "--ota-spool",
            spool.to_str().unwrap(),
            "--sysfs-root",
            sysfs.path().to_str().unwrap(),
        ],
    );
    common::wait_for("OTA to reach RAUC", || {
        let v = svc.get_json("/api/v1/ota");
        if v["available"] == true {
            Ok(())
        } else {
            Err(v.to_string())
        }
    });
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/api-conformance.sh");
    let out = Command::new(&script)
        .args([&svc.base, TOKEN])
        .output()
        .expect("run api-conformance.sh");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    assert!(out.status.success(), "api-conformance.sh failed:\n{text}");
}

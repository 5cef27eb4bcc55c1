//! The control room through the real binary: boot, REST and the command line make and
//! apply a config through one path, so no change can save a config the service would
//! refuse at start, and a file that a `PUT` would refuse does not boot silently
//! (`docs/decisions.md`, "One apply path").
//!
//! Each test names the defect it guards against; each failed on the code before the
//! control room.

mod common;

use common::{Service, run_to_exit_with, wait_for};
use serde_json::{Value, json};

/// A config with an MQTT user and password (MQTT off: no broker is needed to save it).
fn with_credentials() -> Value {
    json!({
        "autostart": false,
        "outputs": {"mqtt": {"username": "appliance", "password": "s3cret"}},
    })
}

/// Defect: `PATCH {"outputs":{"mqtt":{"username":null,"password":null}}}` was answered
/// 200 and saved `username: null` with the old password kept ("null keeps the saved
/// password"); every later PATCH, even `{}`, was refused (`mqtt-credentials`), and the
/// service refused to start on that file ("a password needs a user name").
#[test]
fn removing_the_mqtt_user_but_keeping_its_password_is_refused_and_nothing_is_saved() {
    let svc = Service::start(&with_credentials());
    let before = std::fs::read_to_string(&svc.config_path).unwrap();
    let r = svc.request(
        "PATCH",
        "/api/v1/config",
        Some(br#"{"outputs":{"mqtt":{"username":null,"password":null}}}"#),
        &[],
    );
    let p = r.problem(422, "config-range");
    assert!(
        r.field_errors()
            .contains(&("/outputs/mqtt/password".into(), "mqtt-credentials".into())),
        "{p}"
    );
    assert!(
        p["detail"].as_str().unwrap().contains("\"password\": \"\""),
        "the refusal says how to remove the saved password: {p}"
    );
    assert_eq!(
        std::fs::read_to_string(&svc.config_path).unwrap(),
        before,
        "nothing saved"
    );
    // Later changes go through as before.
    let r = svc.request("PATCH", "/api/v1/config", Some(b"{}"), &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    // Removing both is how it is done; the file it saves starts the service.
    let r = svc.request(
        "PATCH",
        "/api/v1/config",
        Some(br#"{"outputs":{"mqtt":{"username":null,"password":""}}}"#),
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let saved = std::fs::read_to_string(&svc.config_path).unwrap();
    assert!(!saved.contains("s3cret"), "{saved}");
    let again = Service::start_with_file(Some(&saved));
    assert_eq!(again.status()["pipeline"]["state"], "stopped");
}

/// Defect: a GET → PUT round trip with `"username": null` did the same (the shown
/// document has no password, so the saved one was kept beside no user name).
#[test]
fn a_put_without_the_user_while_a_password_is_saved_is_refused() {
    let svc = Service::start(&with_credentials());
    let mut doc = svc.get_json("/api/v1/config");
    assert!(
        doc.pointer("/outputs/mqtt/password").is_none(),
        "write-only"
    );
    doc["outputs"]["mqtt"]["username"] = Value::Null;
    let before = std::fs::read_to_string(&svc.config_path).unwrap();
    let r = svc.request(
        "PUT",
        "/api/v1/config",
        Some(doc.to_string().as_bytes()),
        &[],
    );
    r.problem(422, "config-range");
    assert!(
        r.field_errors()
            .contains(&("/outputs/mqtt/password".into(), "mqtt-credentials".into())),
        "{}",
        r.body
    );
    assert_eq!(std::fs::read_to_string(&svc.config_path).unwrap(), before);
}

/// An alert rule naming a class the default model does not have: a `PUT` refuses it
/// (`alert-classes`).
fn unknown_class() -> Value {
    let mut doc = common::replay("chelsea.png");
    doc["outputs"] = json!({"alerts": {"rules": {"unicorns": {
        "kind": "class", "classes": ["unicorn"], "min_score": 0.5}}}});
    doc
}

/// Defect: a hand-edited file that a `PUT` refuses (here an alert rule naming a class
/// the model does not have) booted silently: the pipeline ran, the rule never matched,
/// and only the log said so. Now the service comes up with the rule named in the
/// pipeline's status and nothing of that config applied; the same document sent again
/// is refused as a `PUT` of it is, and a fixed one applies.
#[test]
fn a_file_that_a_put_refuses_boots_with_the_rule_named_and_nothing_applied() {
    let doc = unknown_class();
    let svc = Service::start(&doc);
    let st = svc.status();
    assert_eq!(st["pipeline"]["state"], "failed", "{st}");
    let error = st["pipeline"]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("rule alert-classes") && error.contains("unicorn"),
        "{error}"
    );
    assert_eq!(
        st["counters"]["frames_captured"], 0,
        "no frame flowed: {st}"
    );
    // The document in force is the file's: a client sees what to fix.
    let shown = svc.get_json("/api/v1/config");
    assert_eq!(
        shown["outputs"]["alerts"]["rules"]["unicorns"]["classes"],
        json!(["unicorn"])
    );
    // The same document, sent again, is refused with the same rule...
    let r = svc.request(
        "PUT",
        "/api/v1/config",
        Some(doc.to_string().as_bytes()),
        &[],
    );
    r.problem(422, "config-apply");
    assert!(
        r.field_errors()
            .iter()
            .any(|(f, _)| f == "/outputs/alerts/rules/unicorns/classes/0"),
        "{}",
        r.body
    );
    // ...and a fixed one applies: the pipeline runs.
    let r = svc.request(
        "PATCH",
        "/api/v1/config",
        Some(br#"{"outputs":{"alerts":{"rules":{"unicorns":{"classes":["tabby"]}}}}}"#),
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    wait_for("the fixed config's pipeline to run", || {
        let st = svc.status();
        (st["pipeline"]["state"] == "running")
            .then_some(())
            .ok_or(st.to_string())
    });
}

/// Defect: the MQTT broker's CA file was checked only on the REST path; a file naming
/// one outside the allowed directories booted, and MQTT sat in an error state.
#[test]
fn a_ca_file_outside_the_roots_at_start_is_named_in_status() {
    let svc = Service::start(&json!({
        "autostart": false,
        "outputs": {"mqtt": {"enabled": true, "tls": true, "ca_file": "/etc/hostname"}},
    }));
    let st = svc.status();
    assert_eq!(st["pipeline"]["state"], "failed", "{st}");
    let error = st["pipeline"]["error"].as_str().unwrap_or_default();
    assert!(error.contains("rule path-confined"), "{error}");
    assert_eq!(
        st["outputs"]["mqtt"]["enabled"], false,
        "MQTT is not started on a config that was not applied: {st}"
    );
}

/// Defect: the command line had no way to check a config file by the rules the service
/// applies (`--check-config`): it exits 0 for a file every rule accepts, 1 with the rule
/// named for one a `PUT` would refuse, whatever the kind of rule.
#[test]
fn check_config_on_the_command_line_applies_every_rule() {
    let (status, out, err) = run_to_exit_with(
        &common::replay("chelsea.png").to_string(),
        &["--check-config"],
    );
    assert!(status.success(), "{out}\n{err}");
    assert!(out.contains("passes every rule"), "{out}");
    let (status, _, err) = run_to_exit_with(&unknown_class().to_string(), &["--check-config"]);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("rule alert-classes"), "{err}");
    let (status, _, err) = run_to_exit_with(r#"{"ring": {"entries": 1}}"#, &["--check-config"]);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("/ring/entries"), "{err}");
}

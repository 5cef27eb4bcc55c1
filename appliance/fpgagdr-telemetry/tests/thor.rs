//! The power monitors of a Jetson AGX Thor developer kit, read through the public API from
//! the fixture tree `tests/fixtures/jetson-agx-thor` (written, not run on a Thor: its
//! README says what is known and what is assumed). The carrier board's TI INA238
//! measures the kit's input, VIN; the module's INA3221 rails are parts of it, so the
//! total is VIN alone, never VIN plus the rails.

use std::fs;
use std::path::{Path, PathBuf};

use fpgagdr_telemetry::{Driver, SourceState, Sysfs, TotalRule};

fn thor() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/jetson-agx-thor")
}

fn put(root: &Path, rel: &str, value: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, format!("{value}\n")).unwrap();
}

fn state<'a>(s: &'a fpgagdr_telemetry::SysfsSample, name: &str) -> &'a SourceState {
    &s.sources
        .iter()
        .find(|x| x.name == name)
        .unwrap_or_else(|| panic!("no source {name} in {:?}", s.sources))
        .state
}

#[test]
fn thor_vin_from_the_ina238_is_the_total_and_the_ina3221_rails_are_its_parts() {
    let s = Sysfs::new(thor()).sample();
    let names: Vec<&str> = s.rails.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        ["VIN", "VDD_GPU", "VDD_CPU_SOC_MSS", "VIN_SYS_5V0"],
        "the input first, then its parts"
    );
    let vin = &s.rails[0];
    assert_eq!(
        (vin.chip.as_str(), vin.channel, vin.driver),
        ("2-0044", 1, Driver::Ina238)
    );
    // in1_input mV, curr1_input mA, power1_input µW (Linux Documentation/hwmon/ina238.rst)
    assert_eq!(
        (vin.voltage_mv, vin.current_ma, vin.power_mw),
        (20000.0, 1150.0, 23000.0)
    );
    assert_eq!(
        (vin.shunt_uohm, vin.warn_ma, vin.crit_ma),
        (Some(2000), None, None)
    );
    let gpu = &s.rails[1];
    assert_eq!(
        (gpu.chip.as_str(), gpu.channel, gpu.driver),
        ("2-0040", 1, Driver::Hwmon)
    );
    let total = s.board_total.as_ref().expect("a total");
    assert_eq!(total.rule, TotalRule::BoardInput);
    assert_eq!(total.power_mw, 23000.0, "VIN alone, not VIN + its parts");
    assert_eq!(total.rails, ["VIN"]);
    assert!(
        total.covers.contains("INA238") && total.covers.contains("carrier board included"),
        "{}",
        total.covers
    );
    assert_eq!(state(&s, "ina238"), &SourceState::Ok);
    assert_eq!(state(&s, "ina3221"), &SourceState::Ok);
    assert!(
        s.fans.is_empty(),
        "power monitors are not fans: {:?}",
        s.fans
    );
}

#[test]
fn a_lone_ina238_without_a_label_is_vin_and_an_unreadable_one_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let node = "sys/class/hwmon/hwmon0";
    put(dir.path(), &format!("{node}/name"), "ina238");
    put(dir.path(), &format!("{node}/in1_input"), "12000");
    put(dir.path(), &format!("{node}/curr1_input"), "500");
    put(dir.path(), &format!("{node}/power1_input"), "6000000");
    // Another hwmon node (a fan) is not a power monitor.
    put(dir.path(), "sys/class/hwmon/hwmon1/name", "pwmfan");
    let mut sys = Sysfs::new(dir.path());
    let s = sys.sample();
    assert_eq!(s.rails.len(), 1);
    let r = &s.rails[0];
    assert_eq!(
        (r.name.as_str(), r.chip.as_str(), r.power_mw),
        ("VIN", "hwmon0", 6000.0)
    );
    assert_eq!(s.board_total.as_ref().unwrap().power_mw, 6000.0);
    fs::remove_file(dir.path().join(node).join("power1_input")).unwrap();
    let s = sys.sample();
    assert!(s.rails.is_empty() && s.board_total.is_none());
    match state(&s, "ina238") {
        SourceState::Error(m) => assert!(m.contains("power1_input"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_board_without_an_ina238_reports_it_absent() {
    let dir = tempfile::tempdir().unwrap();
    let s = Sysfs::new(dir.path()).sample();
    assert!(matches!(state(&s, "ina238"), SourceState::Absent(_)));
}

//! Fixture sysfs trees that reproduce real boards, read through the public API, with
//! expected rails, units and totals checked exactly.
//!
//! Values sit on the INA3221's real steps: bus voltage 8 mV per LSB, shunt voltage
//! 40 µV per LSB, i.e. 8 mA per LSB through the 5 mΩ shunts Jetson modules use
//! (TI INA3221 datasheet, SBOS576, registers 0x01–0x06).

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use fpgagdr_telemetry::{Driver, RaplMeter, SourceState, Sysfs, TotalRule};

fn put(root: &Path, rel: &str, value: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, format!("{value}\n")).unwrap();
}

/// One hwmon INA3221 chip: `(label, mV, mA)` per channel 1..3.
fn hwmon_chip(root: &Path, chip: &str, hwmon: &str, channels: [(&str, i64, i64); 3]) {
    let dir = format!("sys/bus/i2c/drivers/ina3221/{chip}/hwmon/{hwmon}");
    put(root, &format!("{dir}/name"), "ina3221");
    for (i, (label, mv, ma)) in channels.into_iter().enumerate() {
        let n = i + 1;
        put(root, &format!("{dir}/in{n}_label"), label);
        put(root, &format!("{dir}/in{n}_enable"), "1");
        put(root, &format!("{dir}/in{n}_input"), &mv.to_string());
        put(root, &format!("{dir}/curr{n}_input"), &ma.to_string());
        put(root, &format!("{dir}/shunt{n}_resistor"), "5000");
        put(root, &format!("{dir}/curr{n}_max"), "8184");
        put(root, &format!("{dir}/curr{n}_crit"), "16368");
        // Shunt voltages and their sum: not rails.
        put(
            root,
            &format!("{dir}/in{}_input", n + 3),
            &(ma * 5).to_string(),
        );
    }
    put(root, &format!("{dir}/in7_label"), "sum of shunt voltages");
    put(root, &format!("{dir}/in7_input"), "0");
    put(root, &format!("{dir}/curr4_input"), "0");
}

fn agx_orin(root: &Path) {
    hwmon_chip(
        root,
        "1-0040",
        "hwmon3",
        [
            ("VDD_GPU_SOC", 4984, 1520),
            ("VDD_CPU_CV", 4984, 616),
            ("VIN_SYS_5V0", 4992, 896),
        ],
    );
    hwmon_chip(
        root,
        "1-0041",
        "hwmon4",
        [("NC", 0, 0), ("VDDQ_VDD2_1V8AO", 4992, 232), ("NC", 0, 0)],
    );
}

fn mw(mv: i64, ma: i64) -> f64 {
    mv as f64 * ma as f64 / 1000.0
}

#[test]
fn agx_orin_two_chips_nc_channels_skipped_module_rails_summed() {
    let dir = tempfile::tempdir().unwrap();
    agx_orin(dir.path());
    let s = Sysfs::new(dir.path()).sample();
    let names: Vec<&str> = s.rails.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "VDD_GPU_SOC",
            "VDD_CPU_CV",
            "VIN_SYS_5V0",
            "VDDQ_VDD2_1V8AO"
        ]
    );
    let gpu = &s.rails[0];
    assert_eq!(
        (gpu.chip.as_str(), gpu.channel, gpu.driver),
        ("1-0040", 1, Driver::Hwmon)
    );
    assert_eq!((gpu.voltage_mv, gpu.current_ma), (4984.0, 1520.0));
    assert_eq!(gpu.power_mw, mw(4984, 1520));
    assert_eq!(
        (gpu.shunt_uohm, gpu.warn_ma, gpu.crit_ma),
        (Some(5000), Some(8184), Some(16368))
    );
    let ddr = &s.rails[3];
    assert_eq!((ddr.chip.as_str(), ddr.channel), ("1-0041", 2));
    let total = s.board_total.expect("a total");
    assert_eq!(total.rule, TotalRule::KnownSum);
    assert_eq!(
        total.power_mw,
        mw(4984, 1520) + mw(4984, 616) + mw(4992, 896) + mw(4992, 232)
    );
    assert!(
        total.covers.starts_with("Jetson AGX Orin"),
        "{}",
        total.covers
    );
    assert_eq!(s.sources[0].state, SourceState::Ok);
}

#[test]
fn orin_nx_vdd_in_is_the_total_not_the_sum() {
    let dir = tempfile::tempdir().unwrap();
    hwmon_chip(
        dir.path(),
        "1-0040",
        "hwmon1",
        [
            ("VDD_IN", 4992, 1480),
            ("VDD_CPU_GPU_CV", 4992, 384),
            ("VDD_SOC", 4992, 400),
        ],
    );
    let s = Sysfs::new(dir.path()).sample();
    assert_eq!(s.rails.len(), 3);
    let total = s.board_total.unwrap();
    assert_eq!(total.rule, TotalRule::InputRail);
    assert_eq!(total.power_mw, mw(4992, 1480)); // not the sum of the three
    assert_eq!(total.rails, ["VDD_IN"]);
}

#[test]
fn iio_driver_tree_of_a_nano_with_pom_5v_in() {
    let dir = tempfile::tempdir().unwrap();
    let d = "sys/bus/i2c/drivers/ina3221x/6-0040/iio:device0";
    for (n, (name, mv, ma, mw)) in [
        ("POM_5V_IN", 5088, 968, 4925),
        ("POM_5V_GPU", 5088, 40, 203),
        ("POM_5V_CPU", 5088, 320, 1628),
    ]
    .into_iter()
    .enumerate()
    {
        put(dir.path(), &format!("{d}/rail_name_{n}"), name);
        put(
            dir.path(),
            &format!("{d}/in_voltage{n}_input"),
            &mv.to_string(),
        );
        put(
            dir.path(),
            &format!("{d}/in_current{n}_input"),
            &ma.to_string(),
        );
        put(
            dir.path(),
            &format!("{d}/in_power{n}_input"),
            &mw.to_string(),
        );
    }
    let s = Sysfs::new(dir.path()).sample();
    let r = &s.rails[1];
    assert_eq!(
        (r.name.as_str(), r.chip.as_str(), r.channel, r.driver),
        ("POM_5V_GPU", "6-0040", 2, Driver::Iio)
    );
    assert_eq!(
        (r.voltage_mv, r.current_ma, r.power_mw),
        (5088.0, 40.0, 203.0)
    );
    let total = s.board_total.unwrap();
    assert_eq!((total.rule, total.power_mw), (TotalRule::InputRail, 4925.0));
}

#[test]
fn a_host_without_sources_reports_each_absent() {
    let dir = tempfile::tempdir().unwrap();
    let s = Sysfs::new(dir.path()).sample();
    assert!(s.rails.is_empty() && s.board_total.is_none() && s.zones.is_empty());
    assert!(s.gpu_load.is_none() && s.rapl.is_empty());
    for src in &s.sources {
        assert!(matches!(src.state, SourceState::Absent(_)), "{src:?}");
    }
}

#[test]
fn files_that_vanish_and_a_renumbered_hwmon_do_not_stop_the_others() {
    let dir = tempfile::tempdir().unwrap();
    agx_orin(dir.path());
    let mut sys = Sysfs::new(dir.path());
    let chip = dir.path().join("sys/bus/i2c/drivers/ina3221/1-0040/hwmon");
    fs::remove_file(chip.join("hwmon3/curr2_input")).unwrap();
    let s = sys.sample();
    assert_eq!(s.rails.len(), 3, "the other rails still read");
    assert!(!s.rails.iter().any(|r| r.name == "VDD_CPU_CV"));
    match &s.sources[0].state {
        SourceState::Error(m) => assert!(m.contains("VDD_CPU_CV"), "{m}"),
        other => panic!("{other:?}"),
    }
    // Next boot: the hwmon index changed, the file is back.
    fs::rename(chip.join("hwmon3"), chip.join("hwmon7")).unwrap();
    put(
        dir.path(),
        "sys/bus/i2c/drivers/ina3221/1-0040/hwmon/hwmon7/curr2_input",
        "616",
    );
    let s = sys.sample();
    assert_eq!(s.rails.len(), 4);
    assert_eq!(s.sources[0].state, SourceState::Ok);
}

#[test]
fn rapl_power_from_two_samples_across_a_counter_wrap() {
    let dir = tempfile::tempdir().unwrap();
    let z = "sys/class/powercap/intel-rapl:0";
    put(dir.path(), &format!("{z}/name"), "package-0");
    put(
        dir.path(),
        &format!("{z}/max_energy_range_uj"),
        "262143328850",
    );
    put(dir.path(), &format!("{z}/energy_uj"), "262140000000");
    // A sub-zone (cores) is not a package.
    put(dir.path(), &format!("{z}/intel-rapl:0:0/name"), "core");
    put(
        dir.path(),
        "sys/class/powercap/intel-rapl:0:0/energy_uj",
        "1",
    );
    let mut m = RaplMeter::new(dir.path());
    let t0 = Instant::now();
    let (first, state) = m.sample_at(t0);
    assert!(first.is_empty(), "one sample has no interval");
    assert_eq!(state, SourceState::Ok);
    // 2 s later the counter wrapped: 3 328 850 µJ to the top, then 16 671 150 µJ.
    put(dir.path(), &format!("{z}/energy_uj"), "16671150");
    let (p, _) = m.sample_at(t0 + Duration::from_secs(2));
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].name, "package-0");
    assert!((p[0].power_w - 10.0).abs() < 1e-9, "{}", p[0].power_w);
}

#[test]
fn thermal_zone_that_cannot_be_read_is_absent_not_zero() {
    let dir = tempfile::tempdir().unwrap();
    put(
        dir.path(),
        "sys/class/thermal/thermal_zone0/type",
        "cpu-thermal",
    );
    put(dir.path(), "sys/class/thermal/thermal_zone0/temp", "48500");
    put(
        dir.path(),
        "sys/class/thermal/thermal_zone1/type",
        "gpu-thermal",
    );
    let s = Sysfs::new(dir.path()).sample();
    assert_eq!(s.zones.len(), 1);
    assert_eq!(
        (s.zones[0].name.as_str(), s.zones[0].celsius),
        ("cpu-thermal", 48.5)
    );
    assert!(matches!(&s.sources[2].state, SourceState::Error(m) if m.contains("gpu-thermal")));
}

#[test]
fn orin_gpu_load_is_per_mille_and_clock_in_hz() {
    let dir = tempfile::tempdir().unwrap();
    put(
        dir.path(),
        "sys/class/devfreq/17000000.ga10b/cur_freq",
        "918000000",
    );
    put(
        dir.path(),
        "sys/class/devfreq/17000000.ga10b/device/load",
        "523",
    );
    put(dir.path(), "sys/class/devfreq/3d00000.nvdla/cur_freq", "1");
    let g = Sysfs::new(dir.path()).sample().gpu_load.expect("GPU");
    assert_eq!(g.device, "17000000.ga10b");
    assert_eq!((g.load_pct, g.freq_hz), (Some(52.3), Some(918_000_000)));
}

//! What jetson-stats users look at first, read from fixture trees shaped like two real
//! boards (L4T R36 / JetPack 6 layouts), through the public API:
//!
//! * a Jetson Orin Nano 8 GB in its 7 W mode (cores 4 and 5 switched off, as that
//!   nvpmodel mode does), as an unprivileged service sees it: no debugfs, so no EMC;
//! * a Jetson AGX Orin 64 GB in MAXN after `jetson_clocks`, as root sees it: EMC from
//!   BPMP debugfs, every clock pinned at its maximum.
//!
//! Units as sysfs gives them: cpufreq in kHz, devfreq and BPMP clocks in Hz, GPU load
//! in per-mille, `/proc/meminfo` in kB, `pwm1` as 0..=255.

use std::fs;
use std::path::Path;

use fpgagdr_telemetry::{CpuMeter, SourceState, Sysfs, SysfsSample};

fn put(root: &Path, rel: &str, value: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, format!("{value}\n")).unwrap();
}

/// One core: online flag (cpu0 has none), cpufreq in kHz.
fn core(root: &Path, n: u32, online: bool, cur: u64, min: u64, max: u64, governor: &str) {
    let d = format!("sys/devices/system/cpu/cpu{n}");
    if n > 0 {
        put(root, &format!("{d}/online"), if online { "1" } else { "0" });
    }
    let f = format!("{d}/cpufreq");
    put(root, &format!("{f}/scaling_min_freq"), &min.to_string());
    put(root, &format!("{f}/scaling_max_freq"), &max.to_string());
    put(root, &format!("{f}/scaling_governor"), governor);
    if online {
        put(root, &format!("{f}/scaling_cur_freq"), &cur.to_string());
    }
}

/// `/proc/stat` with `busy` and `idle` jiffies per core (user and idle columns only).
fn proc_stat(root: &Path, cores: &[(u64, u64)]) {
    let mut text = String::from("cpu  1 0 0 1 0 0 0 0 0 0\n");
    for (n, (busy, idle)) in cores.iter().enumerate() {
        text.push_str(&format!("cpu{n} {busy} 0 0 {idle} 0 0 0 0 0 0\n"));
    }
    text.push_str("intr 12345\nctxt 6789\n");
    put(root, "proc/stat", text.trim_end());
}

fn nvpmodel(root: &Path, conf: &[(u32, &str)], default: u32, status: Option<u32>) {
    let mut text = String::from("# nvpmodel configuration\n");
    for (id, name) in conf {
        text.push_str(&format!(
            "< POWER_MODEL ID={id} NAME={name} >\nCPU_ONLINE CORE_0 1\n"
        ));
    }
    text.push_str(&format!("< PM_CONFIG DEFAULT={default} >"));
    put(root, "etc/nvpmodel.conf", &text);
    if let Some(id) = status {
        put(
            root,
            "var/lib/nvpmodel/status",
            &format!("pmode:{id:04} fmode:quiet"),
        );
    }
}

fn meminfo(root: &Path, nvmap_kb: u64) {
    put(
        root,
        "proc/meminfo",
        &format!(
            "MemTotal:        7802332 kB\nMemFree:         5120100 kB\nNvMapMemUsed:     {nvmap_kb} kB\nNvMapMemFree:      12288 kB"
        ),
    );
}

/// Jetson Orin Nano 8 GB, 7 W mode (id 3 of four), cores 4-5 off, fan split across a
/// `pwmfan` node and a tachometer node.
fn orin_nano(root: &Path) {
    for n in 0..6 {
        core(root, n, n < 4, 960_000, 115_200, 960_000, "schedutil");
    }
    proc_stat(root, &[(100, 900); 6]);
    let gpu = "sys/class/devfreq/17000000.gpu";
    put(root, &format!("{gpu}/cur_freq"), "306000000");
    put(root, &format!("{gpu}/min_freq"), "306000000");
    put(root, &format!("{gpu}/max_freq"), "408000000");
    put(root, &format!("{gpu}/device/load"), "125");
    nvpmodel(
        root,
        &[(0, "15W"), (1, "25W"), (2, "MAXN_SUPER"), (3, "7W")],
        1,
        Some(3),
    );
    put(root, "sys/class/hwmon/hwmon0/name", "soc_thermal");
    put(root, "sys/class/hwmon/hwmon0/temp1_input", "41000");
    put(root, "sys/class/hwmon/hwmon1/name", "pwmfan");
    put(root, "sys/class/hwmon/hwmon1/pwm1", "102");
    put(root, "sys/class/hwmon/hwmon2/name", "pwm_tach");
    put(root, "sys/class/hwmon/hwmon2/rpm", "1534");
    meminfo(root, 186_368);
}

/// Jetson AGX Orin 64 GB in MAXN (id 0) after `jetson_clocks`: 12 cores pinned at
/// 2.2 GHz, the GPU at 1.3 GHz, EMC at 3.2 GHz from BPMP debugfs (root), fan at full duty.
fn agx_orin(root: &Path) {
    for n in 0..12 {
        core(root, n, true, 2_201_600, 2_201_600, 2_201_600, "schedutil");
    }
    proc_stat(root, &[(500, 500); 12]);
    let gpu = "sys/class/devfreq/17000000.gpu";
    put(root, &format!("{gpu}/cur_freq"), "1300500000");
    put(root, &format!("{gpu}/min_freq"), "1300500000");
    put(root, &format!("{gpu}/max_freq"), "1300500000");
    put(root, &format!("{gpu}/device/load"), "874");
    nvpmodel(
        root,
        &[(0, "MAXN"), (1, "15W"), (2, "30W"), (3, "50W")],
        2,
        Some(0),
    );
    let emc = "sys/kernel/debug/bpmp/debug/clk/emc";
    put(root, &format!("{emc}/rate"), "3199000000");
    put(root, &format!("{emc}/max_rate"), "3199000000");
    put(root, &format!("{emc}/min_rate"), "204000000");
    put(root, "sys/class/hwmon/hwmon3/name", "pwmfan");
    put(root, "sys/class/hwmon/hwmon3/pwm1", "255");
    put(root, "sys/class/hwmon/hwmon4/name", "pwm_tach");
    put(root, "sys/class/hwmon/hwmon4/rpm", "4812");
    meminfo(root, 1_572_864);
}

fn state<'a>(s: &'a SysfsSample, name: &str) -> &'a SourceState {
    &s.sources
        .iter()
        .find(|x| x.name == name)
        .unwrap_or_else(|| panic!("no source {name}: {:?}", s.sources))
        .state
}

#[test]
fn orin_nano_in_7w_mode_with_two_cores_off_and_no_debugfs() {
    let dir = tempfile::tempdir().unwrap();
    orin_nano(dir.path());
    let mut sys = Sysfs::new(dir.path());
    let s = sys.sample();

    let mode = s.power_mode.as_ref().expect("power mode");
    assert_eq!((mode.id, mode.name.as_deref()), (3, Some("7W")));
    assert!(!mode.is_default, "the default is 25W");
    assert_eq!(mode.modes.len(), 4);
    assert_eq!(mode.modes[2], (2, "MAXN_SUPER".to_string()));

    assert_eq!(s.cpu_cores.len(), 6);
    let online: Vec<bool> = s.cpu_cores.iter().map(|c| c.online).collect();
    assert_eq!(online, [true, true, true, true, false, false]);
    assert_eq!(s.cpu_cores[0].freq_hz, Some(960_000_000), "kHz to Hz");
    assert_eq!(s.cpu_cores[0].min_freq_hz, Some(115_200_000));
    assert_eq!(s.cpu_cores[5].freq_hz, None, "an offline core has no clock");
    assert_eq!(s.cpu_cores[0].governor.as_deref(), Some("schedutil"));
    assert!(
        s.cpu_cores.iter().all(|c| c.load_pct.is_none()),
        "one reading has no interval"
    );
    assert_eq!(state(&s, "cpufreq"), &SourceState::Ok);

    let gpu = s.gpu_load.as_ref().expect("GPU devfreq");
    assert_eq!(gpu.device, "17000000.gpu");
    assert_eq!(
        (gpu.load_pct, gpu.freq_hz, gpu.min_freq_hz, gpu.max_freq_hz),
        (
            Some(12.5),
            Some(306_000_000),
            Some(306_000_000),
            Some(408_000_000)
        )
    );

    let clocks = s.clocks.as_ref().expect("a judgement on jetson_clocks");
    assert!(!clocks.jetson_clocks, "{clocks:?}");
    assert_eq!(clocks.detail, "cpu0 scales from 115 to 960 MHz");

    assert_eq!(
        s.fans.len(),
        1,
        "pwmfan and its tachometer are one fan: {:?}",
        s.fans
    );
    let fan = &s.fans[0];
    assert_eq!(fan.name, "pwmfan");
    assert!((fan.pwm_pct.unwrap() - 40.0).abs() < 1e-9, "102/255");
    assert_eq!(fan.rpm, Some(1534));

    assert_eq!(s.emc, None);
    match state(&s, "emc") {
        SourceState::Absent(why) => assert!(why.contains("root"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.gpu_mem_used_bytes, Some(186_368 * 1024));
    assert_eq!(state(&s, "nvmap"), &SourceState::Ok);

    // The second sample has an interval: 50 busy of 100 jiffies on cpu1, nothing
    // counted for the offline cores.
    proc_stat(
        dir.path(),
        &[
            (100, 900),
            (150, 950),
            (100, 1000),
            (100, 900),
            (100, 900),
            (100, 900),
        ],
    );
    let s = sys.sample();
    assert_eq!(s.cpu_cores[1].load_pct, Some(50.0));
    assert_eq!(s.cpu_cores[2].load_pct, Some(0.0));
    assert_eq!(s.cpu_cores[0].load_pct, None, "no jiffies went by on cpu0");
    assert_eq!(s.cpu_cores[4].load_pct, None);
}

#[test]
fn agx_orin_in_maxn_after_jetson_clocks_as_root() {
    let dir = tempfile::tempdir().unwrap();
    agx_orin(dir.path());
    let s = Sysfs::new(dir.path()).sample();
    let mode = s.power_mode.as_ref().unwrap();
    assert_eq!(
        (mode.id, mode.name.as_deref(), mode.is_default),
        (0, Some("MAXN"), false)
    );
    assert_eq!(s.cpu_cores.len(), 12);
    assert!(
        s.cpu_cores
            .iter()
            .all(|c| c.online && c.freq_hz == Some(2_201_600_000))
    );
    let emc = s.emc.as_ref().expect("EMC through debugfs");
    assert_eq!(
        (emc.freq_hz, emc.max_freq_hz),
        (3_199_000_000, Some(3_199_000_000))
    );
    let clocks = s.clocks.as_ref().unwrap();
    assert!(clocks.jetson_clocks, "{clocks:?}");
    assert!(
        clocks.detail.ends_with("cpu11, GPU, EMC"),
        "{}",
        clocks.detail
    );
    assert_eq!(s.fans[0].pwm_pct, Some(100.0));
    assert_eq!(s.fans[0].rpm, Some(4812));
    assert_eq!(s.gpu_mem_used_bytes, Some(1_572_864 * 1024));
    for name in ["cpufreq", "fan", "nvpmodel", "emc", "nvmap", "devfreq"] {
        assert_eq!(state(&s, name), &SourceState::Ok, "{name}");
    }
}

#[test]
fn each_jetson_source_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    agx_orin(dir.path());
    // A status file nvpmodel did not write, an unreadable EMC rate, a PWM that reads
    // no number: each is that source's error, the rest still read.
    put(dir.path(), "var/lib/nvpmodel/status", "garbage");
    fs::remove_file(dir.path().join("sys/kernel/debug/bpmp/debug/clk/emc/rate")).unwrap();
    fs::create_dir(dir.path().join("sys/kernel/debug/bpmp/debug/clk/emc/rate")).unwrap();
    put(dir.path(), "sys/class/hwmon/hwmon3/pwm1", "n/a");
    let s = Sysfs::new(dir.path()).sample();
    assert!(matches!(state(&s, "nvpmodel"), SourceState::Error(m) if m.contains("pmode")));
    assert!(matches!(state(&s, "emc"), SourceState::Error(_)));
    assert!(matches!(state(&s, "fan"), SourceState::Error(m) if m.contains("pwmfan")));
    assert_eq!(s.power_mode, None);
    assert_eq!(s.emc, None);
    // The tachometer still reads, as a fan of its own.
    assert_eq!(s.fans.len(), 1);
    assert_eq!(
        (s.fans[0].name.as_str(), s.fans[0].rpm),
        ("pwm_tach", Some(4812))
    );
    assert_eq!(s.cpu_cores.len(), 12);
    assert!(
        s.clocks.as_ref().unwrap().jetson_clocks,
        "CPU and GPU still pinned"
    );
    assert_eq!(state(&s, "cpufreq"), &SourceState::Ok);
}

#[test]
fn no_status_file_means_the_configured_default_mode() {
    let dir = tempfile::tempdir().unwrap();
    nvpmodel(dir.path(), &[(0, "MAXN"), (1, "15W"), (2, "30W")], 2, None);
    let s = Sysfs::new(dir.path()).sample();
    let mode = s.power_mode.unwrap();
    assert_eq!(
        (mode.id, mode.name.as_deref(), mode.is_default),
        (2, Some("30W"), true)
    );
}

#[test]
fn a_host_that_is_not_a_jetson_reports_each_jetson_source_absent() {
    let dir = tempfile::tempdir().unwrap();
    let s = Sysfs::new(dir.path()).sample();
    for name in ["cpufreq", "fan", "nvpmodel", "emc", "nvmap"] {
        assert!(
            matches!(state(&s, name), SourceState::Absent(_)),
            "{name}: {:?}",
            state(&s, name)
        );
    }
    assert!(s.clocks.is_none() && s.power_mode.is_none() && s.fans.is_empty());
    // The meter alone, on the same empty tree.
    let (cores, st) = CpuMeter::new(dir.path()).sample();
    assert!(cores.is_empty() && matches!(st, SourceState::Absent(_)));
}

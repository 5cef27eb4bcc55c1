//! The host source on the machine the tests run on: sysinfo always answers; NVML is
//! either loaded (and lists GPUs) or absent with a reason, never an error or a panic.

use fpgagdr_telemetry::{Host, SourceState};

#[test]
fn cpu_and_memory_are_read_and_nvml_is_loaded_or_absent() {
    let mut host = Host::new();
    std::thread::sleep(std::time::Duration::from_millis(250));
    let s = host.sample();
    let cpu = s.cpu_pct.expect("CPU load");
    assert!((0.0..=100.0).contains(&cpu), "{cpu}");
    let (used, total) = (s.mem_used_bytes.unwrap(), s.mem_total_bytes.unwrap());
    assert!(total > 0 && used <= total, "{used} of {total}");
    let nvml = s.sources.iter().find(|x| x.name == "nvml").unwrap();
    match &nvml.state {
        SourceState::Ok => assert!(!s.gpus.is_empty(), "NVML loaded but no GPU listed"),
        SourceState::Absent(why) => {
            assert!(s.gpus.is_empty());
            eprintln!("NVML absent here: {why}");
        }
        SourceState::Error(e) => panic!("NVML error: {e}"),
    }
}

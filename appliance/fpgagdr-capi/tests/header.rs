//! The generated header against the Rust side: every struct's size, alignment and field
//! offsets, and every constant's value, as a C compiler reads `fpgagdr.h`, equal to
//! what the library was compiled with. Every struct and `#define` the header declares
//! must be in the tables below, so a new one cannot go unchecked.

use std::collections::{BTreeMap, BTreeSet};
use std::mem::{align_of, offset_of, size_of};
use std::process::Command;

use fpgagdr_capi::*;

const HEADER: &str = include_str!(concat!(env!("OUT_DIR"), "/fpgagdr.h"));

/// (struct, size, alignment, [(field, offset)]) on the Rust side.
macro_rules! layout {
    ($t:ident { $($f:ident),* $(,)? }) => {
        (
            stringify!($t),
            size_of::<$t>(),
            align_of::<$t>(),
            vec![$((stringify!($f), offset_of!($t, $f))),*],
        )
    };
}

/// A struct's name, size, alignment and (member, offset) list.
type Layout = (&'static str, usize, usize, Vec<(&'static str, usize)>);

fn rust_structs() -> Vec<Layout> {
    vec![
        layout!(fpgagdr_buffer { id }),
        layout!(fpgagdr_version {
            struct_size_bytes,
            lib_major,
            lib_minor,
            lib_patch,
            module_abi_version,
            reserved
        }),
        layout!(fpgagdr_card_status {
            struct_size_bytes,
            platform,
            simulated,
            c2h_channels,
            h2c_channels,
            capabilities,
            gpu_page_size_bytes,
            alignment_bytes,
            card_memory_bytes,
            module_abi_version,
            reserved,
            name
        }),
        layout!(fpgagdr_memory {
            struct_size_bytes,
            kind,
            addr,
            length_bytes
        }),
        layout!(fpgagdr_transfer_result {
            struct_size_bytes,
            reserved,
            bytes,
            elapsed_ns
        }),
        layout!(fpgagdr_frame {
            struct_size_bytes,
            epoch,
            card_addr,
            length_bytes,
            sequence
        }),
        layout!(fpgagdr_sim_config {
            struct_size_bytes,
            link_preset,
            card_memory_bytes,
            c2h_channels,
            h2c_channels,
            frame_width_px,
            frame_height_px,
            frame_period_ns,
            frame_base_card_addr
        }),
        layout!(fpgagdr_rule {
            struct_size_bytes,
            errno_value,
            name
        }),
    ]
}

fn rust_constants() -> BTreeMap<&'static str, i128> {
    macro_rules! c {
        ($($n:ident),* $(,)?) => { BTreeMap::from([$((stringify!($n), $n as i128)),*]) };
    }
    c!(
        FPGAGDR_LIB_VERSION_MAJOR,
        FPGAGDR_LIB_VERSION_MINOR,
        FPGAGDR_LIB_VERSION_PATCH,
        FPGAGDR_MODULE_ABI_VERSION,
        FPGAGDR_MEMORY_HOST,
        FPGAGDR_MEMORY_CUDA_DEVICE,
        FPGAGDR_MEMORY_CUDA_HOST,
        FPGAGDR_PLATFORM_TEGRA,
        FPGAGDR_PLATFORM_DESKTOP,
        FPGAGDR_PLATFORM_SIM,
        FPGAGDR_CAP_GPU_DIRECT,
        FPGAGDR_CAP_HOST_DMA,
        FPGAGDR_CAP_INTERRUPTS,
        FPGAGDR_CAP_FRAME_TRIGGER,
        FPGAGDR_FRAME_CHECK_WHOLE,
        FPGAGDR_FRAME_CHECK_TORN,
        FPGAGDR_FRAME_CHECK_UNCHECKED,
        FPGAGDR_TRANSFER_MODE_CPU,
        FPGAGDR_TRANSFER_MODE_GPU_PINNED,
        FPGAGDR_SIM_LINK_ORIN_GEN3X4,
        FPGAGDR_SIM_LINK_X86_GEN3X8,
        FPGAGDR_SIM_LINK_OFF,
        FPGAGDR_NAME_BYTES,
        FPGAGDR_RULE_NAME_BYTES,
    )
}

/// The structs the header declares, with their members, in order.
fn header_structs() -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let mut current: Option<(String, Vec<String>)> = None;
    for line in HEADER.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("struct ").and_then(|r| r.strip_suffix(" {")) {
            current = Some((name.to_string(), Vec::new()));
        } else if t == "};" {
            if let Some((name, fields)) = current.take() {
                out.insert(name, fields);
            }
        } else if let Some((_, fields)) = current.as_mut()
            && !t.is_empty()
            && !t.starts_with("//")
        {
            let decl = t.trim_end_matches(';');
            let name = decl.rsplit(' ').next().unwrap();
            fields.push(name.split('[').next().unwrap().to_string());
        }
    }
    out
}

fn header_defines() -> BTreeSet<String> {
    HEADER
        .lines()
        .filter_map(|l| l.strip_prefix("#define "))
        .map(|r| r.split_whitespace().next().unwrap().to_string())
        .filter(|n| n != "FPGAGDR_H")
        .collect()
}

#[test]
fn header_declares_what_the_library_has() {
    let structs = header_structs();
    let rust = rust_structs();
    let rust_names: BTreeSet<String> = rust.iter().map(|s| s.0.to_string()).collect();
    assert_eq!(
        structs.keys().cloned().collect::<BTreeSet<_>>(),
        rust_names,
        "structs of fpgagdr.h vs this test's table"
    );
    for (name, _, _, fields) in &rust {
        let theirs: Vec<&str> = structs[*name].iter().map(String::as_str).collect();
        let ours: Vec<&str> = fields.iter().map(|f| f.0).collect();
        assert_eq!(theirs, ours, "members of struct {name}");
    }
    let defines = header_defines();
    let consts: BTreeSet<String> = rust_constants().keys().map(|s| s.to_string()).collect();
    assert_eq!(
        defines, consts,
        "#defines of fpgagdr.h vs this test's table"
    );
    assert_eq!(
        FPGAGDR_MODULE_ABI_VERSION,
        fpgagdr_uapi::FPGAGDR_ABI_VERSION,
        "the C API's module ABI version is the uapi crate's"
    );
    // Every struct passed in or out begins with its size (the buffer handle is passed
    // by value and is one member).
    for (name, fields) in &structs {
        if name != "fpgagdr_buffer" {
            assert_eq!(fields[0], "struct_size_bytes", "struct {name}");
        }
    }
}

#[test]
fn c_compiler_sees_the_rust_layouts_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = String::from(
        "#include <stddef.h>\n#include <stdio.h>\n#include \"fpgagdr.h\"\nint main(void) {\n",
    );
    let mut want = BTreeMap::new();
    for (name, size, align, fields) in rust_structs() {
        c += &format!(
            "printf(\"size {name} %zu\\n\", sizeof(struct {name}));\n\
             printf(\"align {name} %zu\\n\", _Alignof(struct {name}));\n"
        );
        want.insert(format!("size {name}"), size.to_string());
        want.insert(format!("align {name}"), align.to_string());
        for (f, off) in fields {
            c += &format!("printf(\"offset {name}.{f} %zu\\n\", offsetof(struct {name}, {f}));\n");
            want.insert(format!("offset {name}.{f}"), off.to_string());
        }
    }
    for (name, value) in rust_constants() {
        c += &format!("printf(\"const {name} %lld\\n\", (long long)({name}));\n");
        want.insert(format!("const {name}"), value.to_string());
    }
    c += "return 0;\n}\n";
    std::fs::write(dir.path().join("layout.c"), c).unwrap();
    let exe = dir.path().join("layout");
    let status = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Werror", "-I", env!("OUT_DIR")])
        .arg(dir.path().join("layout.c"))
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("cc");
    assert!(status.success(), "cc failed on the generated header");
    let out = Command::new(&exe).output().unwrap();
    let got: BTreeMap<String, String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect();
    assert_eq!(got, want, "C's view of fpgagdr.h vs Rust's");
}

//! The Rust mirror against the C header, the only definition of the ABI.
//!
//! The test reads `kmod/include/uapi/linux/fpgagdr.h`, lists its structures (with their
//! members), its `#define`s and enum values, and its error table; writes a C program that
//! includes the header and prints every structure's size, every member's offset, size and
//! signedness, every constant and ioctl number, and the errno values; compiles it with the
//! system compiler (`$CC`, default `cc`) against the installed Linux UAPI headers
//! (Debian: `linux-libc-dev`); runs it; and compares each line with this crate.
//!
//! Because the lists come from the header, a member, constant or errno added there and
//! not here fails the test as surely as a changed offset.

use std::collections::BTreeMap;
use std::mem::{offset_of, size_of, size_of_val};
use std::path::{Path, PathBuf};
use std::process::Command;

use fpgagdr_uapi::*;

/// Signedness of a member's type (arrays: of their element).
trait Signed {
    const SIGNED: bool;
}
impl Signed for u32 {
    const SIGNED: bool = false;
}
impl Signed for u64 {
    const SIGNED: bool = false;
}
impl Signed for i32 {
    const SIGNED: bool = true;
}
impl<T: Signed, const N: usize> Signed for [T; N] {
    const SIGNED: bool = T::SIGNED;
}
fn signed_of<T: Signed>(_: &T) -> bool {
    T::SIGNED
}

/// One member as Rust lays it out: name, offset, size, signedness.
type Member = (&'static str, usize, usize, bool);

/// `(struct name, size, members in declaration order)` for one Rust structure.
macro_rules! layout {
    ($ty:ident { $($field:ident),* $(,)? }) => {{
        let v = $ty::new();
        let members: Vec<Member> = vec![$(
            (
                stringify!($field),
                offset_of!($ty, $field),
                size_of_val(&v.$field),
                signed_of(&v.$field),
            ),
        )*];
        (stringify!($ty), size_of::<$ty>(), members)
    }};
}

fn rust_structs() -> Vec<(&'static str, usize, Vec<Member>)> {
    vec![
        layout!(fpgagdr_status {
            abi_version,
            flags,
            platform,
            caps,
            mem_kinds,
            default_kind,
            gpu_page_size,
            pin_align,
            xfer_align,
            len_granularity,
            h2c_channels,
            c2h_channels,
            desc_max_bytes,
            link_path_dev,
            card_size,
            pins,
            pins_total,
            cache_hits,
            cache_misses,
            transfers,
            transfer_bytes,
            timeouts,
            aborts,
            errors,
            link_gen,
            link_width,
            link_max_payload,
            link_max_read_req,
            link_cap_gen,
            link_cap_width,
            link_path_gen,
            link_path_width,
        }),
        layout!(fpgagdr_pin {
            abi_version,
            kind,
            addr,
            length,
            dmabuf_fd,
            flags,
            handle,
            segments,
            page_size,
            method,
        }),
        layout!(fpgagdr_unpin {
            abi_version,
            handle,
            flags,
            pad0
        }),
        layout!(fpgagdr_transfer {
            abi_version,
            direction,
            channel,
            handle,
            offset,
            card_addr,
            length,
            timeout_ms,
            flags,
            bytes,
            duration_ns,
            frame_seq,
            frame_epoch,
            frame_check,
        }),
        layout!(fpgagdr_abort {
            abi_version,
            direction,
            channel,
            flags
        }),
        layout!(fpgagdr_frame_info {
            abi_version,
            flags,
            state,
            proto_version,
            slot_count,
            slot_size,
            user_irq,
            epoch,
            slot_base,
            events,
            missed,
            queue_overflows,
            protocol_errors,
            dropped,
            torn,
            epoch_changes,
        }),
        layout!(fpgagdr_wait_frame {
            abi_version,
            timeout_ms,
            flags,
            slot,
            sequence,
            length,
            epoch,
            arrival_ns,
            missed,
            overflows,
            queued,
        }),
    ]
}

/// Every `#define` and enum value of the header, with the Rust value (as u64).
fn rust_constants() -> Vec<(&'static str, u64)> {
    macro_rules! consts {
        ($($name:ident),* $(,)?) => { vec![$((stringify!($name), u64::from($name))),*] };
    }
    consts![
        FPGAGDR_ABI_VERSION,
        FPGAGDR_IOC_MAGIC,
        FPGAGDR_TIMEOUT_MAX_MS,
        FPGAGDR_PIN_MAX_BYTES,
        FPGAGDR_MAX_PINS_PER_FILE,
        FPGAGDR_EVENT_QUEUE_LEN,
        FPGAGDR_MAX_SLOTS,
        FPGAGDR_FRAME_HEADER_LEN,
        FPGAGDR_ABORT_WAITS,
        FPGAGDR_WAIT_NOWAIT,
        FPGAGDR_PIN_METHOD_NONE,
        FPGAGDR_PIN_METHOD_HOST,
        FPGAGDR_PIN_METHOD_DMABUF,
        FPGAGDR_PIN_METHOD_NV_P2P,
        FPGAGDR_PIN_METHOD_NV_P2P_PERSISTENT,
        FPGAGDR_FRAMES_OK,
        FPGAGDR_FRAMES_NO_USER_BAR,
        FPGAGDR_FRAMES_BAD_MAGIC,
        FPGAGDR_FRAMES_BAD_VERSION,
        FPGAGDR_FRAMES_NO_SLOTS,
        FPGAGDR_FRAMES_SLOT_TOO_SMALL,
        FPGAGDR_FRAMES_SLOT_MISALIGNED,
        FPGAGDR_FRAMES_SLOTS_PAST_CARD,
        FPGAGDR_FRAMES_BAD_IRQ,
        FPGAGDR_PLATFORM_NONE,
        FPGAGDR_PLATFORM_ORIN,
        FPGAGDR_PLATFORM_X86_DGPU,
        FPGAGDR_PLATFORM_THOR,
        FPGAGDR_MEM_HOST,
        FPGAGDR_MEM_NV_P2P,
        FPGAGDR_MEM_DMABUF,
        FPGAGDR_DIR_C2H,
        FPGAGDR_DIR_H2C,
        FPGAGDR_XFER_FRAME,
        FPGAGDR_FRAME_CHECK_NONE,
        FPGAGDR_FRAME_CHECK_WHOLE,
        FPGAGDR_FRAME_CHECK_TORN,
        FPGAGDR_FRAME_CHECK_UNCHECKED,
        FPGAGDR_LINK_PATH_DEV_UNKNOWN,
        FPGAGDR_CAP_IRQ,
        FPGAGDR_CAP_POLL,
        FPGAGDR_CAP_NV_PERSISTENT,
        FPGAGDR_CAP_TEST_ENGINE,
        FPGAGDR_CAP_STREAM,
        FPGAGDR_IOC_GET_STATUS,
        FPGAGDR_IOC_PIN,
        FPGAGDR_IOC_UNPIN,
        FPGAGDR_IOC_TRANSFER,
        FPGAGDR_IOC_ABORT,
        FPGAGDR_IOC_WAIT_FRAME,
        FPGAGDR_IOC_FRAME_INFO,
    ]
}

// ---------------------------------------------------------------------------------------
// Reading the header
// ---------------------------------------------------------------------------------------

fn uapi_include_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kmod/include/uapi")
}

fn header_text() -> String {
    let path = uapi_include_dir().join("linux/fpgagdr.h");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read the ABI header {}: {e}", path.display()))
}

/// The header with its comments removed (the table is read separately).
fn strip_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("*/").expect("unterminated comment") + start + 2;
        rest = &rest[end..];
    }
    out.push_str(rest);
    out.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `struct fpgagdr_x { T a; T b[4]; };` → `[(fpgagdr_x, [a, b[]])]`, in order (an
/// array member keeps `[]` after its name).
fn header_structs(code: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("struct fpgagdr_") {
        let after = &rest[at + "struct ".len()..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let tail = after[name.len()..].trim_start();
        if let Some(body) = tail.strip_prefix('{') {
            let end = body.find('}').expect("struct without a closing brace");
            let members = body[..end]
                .split(';')
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .map(|decl| {
                    let last = decl.split_whitespace().last().expect("member name");
                    match last.split_once('[') {
                        Some((name, _)) => format!("{name}[]"),
                        None => last.to_string(),
                    }
                })
                .collect();
            out.push((name, members));
            rest = &body[end..];
        } else {
            rest = &after[name.len()..];
        }
    }
    out
}

/// Names of every `#define FPGAGDR_…` and every `FPGAGDR_… = n` enum value.
fn header_constants(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in code.lines() {
        let line = line.trim();
        if let Some(def) = line.strip_prefix("#define ") {
            let name = def.split_whitespace().next().unwrap_or("");
            if name.starts_with("FPGAGDR_") {
                names.push(name.to_string());
            }
        } else if line.starts_with("FPGAGDR_") && line.contains('=') {
            names.push(line.split('=').next().unwrap().trim().to_string());
        }
    }
    names
}

/// The error table of the header comment: `(errno, [ioctl column per line])`, in order.
fn header_errno_table(text: &str) -> Vec<(String, Vec<String>)> {
    let lines: Vec<&str> = text.lines().collect();
    let head = lines
        .iter()
        .position(|l| l.split_whitespace().eq(["*", "errno", "ioctl", "rule"]))
        .expect("the header's error table heading");
    let ioctl_col = lines[head].find("ioctl").unwrap();
    let rule_col = lines[head].find("rule").unwrap();
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    for line in &lines[head + 2..] {
        let body = line.strip_prefix(" *").unwrap_or("");
        if body.trim().is_empty() {
            break; // the blank comment line that ends the table
        }
        let col = |from: usize, to: usize| {
            line.get(from.min(line.len())..to.min(line.len()))
                .unwrap_or("")
                .trim()
                .to_string()
        };
        let errno = col(3, ioctl_col);
        let ioctl = col(ioctl_col, rule_col);
        if !errno.is_empty() {
            rows.push((errno, Vec::new()));
        }
        if !ioctl.is_empty() {
            rows.last_mut().expect("a row").1.push(ioctl);
        }
    }
    rows
}

// ---------------------------------------------------------------------------------------
// The C side
// ---------------------------------------------------------------------------------------

fn c_program(structs: &[(String, Vec<String>)], constants: &[String]) -> String {
    let mut c = String::from(
        "#include <errno.h>\n#include <stddef.h>\n#include <stdio.h>\n\
         #include <linux/fpgagdr.h>\n\n\
         #define SIGNED(e) ((__typeof__(e))-1 < (__typeof__(e))0)\n\n\
         int main(void)\n{\n",
    );
    for (name, members) in structs {
        c += &format!("\tprintf(\"size {name} %zu\\n\", sizeof(struct {name}));\n");
        for m in members {
            // Arrays: signedness of the element.
            let (m, elem) = match m.strip_suffix("[]") {
                Some(m) => (m, "[0]"),
                None => (m.as_str(), ""),
            };
            let member = format!("((struct {name} *)0)->{m}");
            let elem = format!("{member}{elem}");
            c += &format!(
                "\tprintf(\"member {name} {m} %zu %zu %d\\n\", offsetof(struct {name}, {m}), \
                 sizeof({member}), (int)SIGNED({elem}));\n"
            );
        }
    }
    for k in constants {
        c += &format!("\tprintf(\"const {k} %llu\\n\", (unsigned long long)({k}));\n");
    }
    for row in ERRNO_TABLE {
        let n = row.name;
        c += &format!("\tprintf(\"errno {n} %d\\n\", {n});\n");
    }
    c += "\treturn 0;\n}\n";
    c
}

/// Compiles and runs the C program; returns its lines.
fn run_c(program: &str) -> Vec<String> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fpgagdr-uapi-header");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("layout.c");
    let exe = dir.join("layout");
    std::fs::write(&src, program).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args([
            "-std=gnu11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-Wno-type-limits",
            "-I",
        ])
        .arg(uapi_include_dir())
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run the C compiler `{cc}` ({e}): this test compiles the ABI header; \
                 install a C compiler (Debian/Ubuntu: `apt-get install gcc`) or set CC"
            )
        });
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let hint = if stderr.contains("linux/ioctl.h") || stderr.contains("linux/types.h") {
            "the Linux UAPI headers are missing: install `linux-libc-dev` \
             (Debian/Ubuntu: `apt-get install linux-libc-dev`)"
        } else {
            "the header or the generated program does not compile"
        };
        panic!("{hint}\n`{cc}` failed on {}:\n{stderr}", src.display());
    }
    // Cross-built, the program is the target's: `$FPGAGDR_TEST_RUNNER` (e.g.
    // `qemu-aarch64 -L /usr/aarch64-linux-gnu`, split on whitespace) runs it, as cargo's
    // target runner runs this test (appliance/scripts/arm64-tests.sh).
    let runner = std::env::var("FPGAGDR_TEST_RUNNER").unwrap_or_default();
    let mut line: Vec<&std::ffi::OsStr> = runner
        .split_whitespace()
        .map(std::ffi::OsStr::new)
        .collect();
    line.push(exe.as_os_str());
    let run = Command::new(line[0])
        .args(&line[1..])
        .output()
        .expect("run the layout program");
    assert!(run.status.success(), "the layout program failed: {run:?}");
    String::from_utf8(run.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

// ---------------------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------------------

#[test]
fn rust_mirror_matches_the_c_header() {
    let text = header_text();
    let code = strip_comments(&text);
    let c_structs = header_structs(&code);
    let c_constants = header_constants(&code);
    // The include guard is no constant of the ABI.
    let c_constants: Vec<String> = c_constants
        .into_iter()
        .filter(|n| !n.starts_with("_"))
        .collect();

    // Same structures, same members, same order.
    let rust = rust_structs();
    let rust_names: Vec<(String, Vec<String>)> = rust
        .iter()
        .map(|(n, _, ms)| {
            let names = ms.iter().map(|m| m.0.to_string()).collect();
            (n.to_string(), names)
        })
        .collect();
    let c_names: Vec<(String, Vec<String>)> = c_structs
        .iter()
        .map(|(n, ms)| {
            let names = ms
                .iter()
                .map(|m| m.trim_end_matches("[]").to_string())
                .collect();
            (n.clone(), names)
        })
        .collect();
    assert_eq!(
        rust_names, c_names,
        "structures or members differ between fpgagdr-uapi and the header"
    );
    // Same constants by name.
    let mut rust_consts: Vec<String> = rust_constants().iter().map(|c| c.0.into()).collect();
    let mut header_consts = c_constants.clone();
    rust_consts.sort();
    header_consts.sort();
    assert_eq!(
        rust_consts, header_consts,
        "constants differ between fpgagdr-uapi and the header"
    );
    // Same error table (errno names, order, ioctl column).
    let table: Vec<(String, Vec<String>)> = ERRNO_TABLE
        .iter()
        .map(|r| {
            (
                r.name.to_string(),
                r.ioctls.iter().map(|s| s.to_string()).collect(),
            )
        })
        .collect();
    assert_eq!(
        table,
        header_errno_table(&text),
        "ERRNO_TABLE differs from the header's error table"
    );

    // What the C compiler says about each of them.
    let lines = run_c(&c_program(&c_structs, &c_constants));
    let mut c: BTreeMap<String, String> = BTreeMap::new();
    for line in &lines {
        let (key, value) = line.rsplit_once(' ').unwrap();
        if key.starts_with("member ") {
            // member S F OFFSET SIZE SIGNED: key = "member S F", value = "OFFSET SIZE SIGNED"
            let mut parts = line.splitn(4, ' ');
            let (kind, s, f) = (parts.next(), parts.next(), parts.next());
            let k = format!("{} {} {}", kind.unwrap(), s.unwrap(), f.unwrap());
            c.insert(k, parts.next().unwrap().to_string());
        } else {
            c.insert(key.to_string(), value.to_string());
        }
    }

    let mut expected: BTreeMap<String, String> = BTreeMap::new();
    for (name, size, members) in &rust {
        expected.insert(format!("size {name}"), size.to_string());
        for (m, off, sz, signed) in members {
            expected.insert(
                format!("member {name} {m}"),
                format!("{off} {sz} {}", u8::from(*signed)),
            );
        }
    }
    for (name, value) in rust_constants() {
        expected.insert(format!("const {name}"), value.to_string());
    }
    for row in ERRNO_TABLE {
        expected.insert(
            format!("errno {}", row.name),
            (row.errno as i32).to_string(),
        );
    }

    let mut drift = Vec::new();
    for (key, want) in &expected {
        match c.get(key) {
            Some(got) if got == want => {}
            Some(got) => drift.push(format!("{key}: C says {got}, Rust says {want}")),
            None => drift.push(format!("{key}: missing from the C program's output")),
        }
    }
    for key in c.keys().filter(|k| !expected.contains_key(*k)) {
        drift.push(format!(
            "{key}: printed by C but not checked on the Rust side"
        ));
    }
    assert!(
        drift.is_empty(),
        "fpgagdr-uapi has drifted from kmod/include/uapi/linux/fpgagdr.h \
         (format: offset size signed):\n  {}",
        drift.join("\n  ")
    );
    // 7 sizes + every member + every constant + every errno were compared.
    let members: usize = rust.iter().map(|s| s.2.len()).sum();
    assert_eq!(
        expected.len(),
        rust.len() + members + rust_constants().len() + ERRNO_TABLE.len()
    );
}

/// The table reader itself, on the header's shape (a continuation line adds an ioctl).
#[test]
fn errno_table_reader_follows_continuation_lines() {
    let text = " * Error numbers:\n *\n\
                 \x20*   errno       ioctl           rule\n\
                 \x20*   ----------  --------------  -----\n\
                 \x20*   EFAULT      any             copy\n\
                 \x20*               PIN             not mapped\n\
                 \x20*                               more text\n\
                 \x20*   ENODEV      any             gone\n\
                 \x20*\n";
    assert_eq!(
        header_errno_table(text),
        vec![
            (
                "EFAULT".to_string(),
                vec!["any".to_string(), "PIN".to_string()]
            ),
            ("ENODEV".to_string(), vec!["any".to_string()]),
        ]
    );
}

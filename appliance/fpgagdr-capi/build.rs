//! Generates `fpgagdr.h` from the crate's declarations with cbindgen, into `OUT_DIR`
//! (install.sh copies it to `<prefix>/include`), and gives the shared library its
//! soname.
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it"));
    let mut config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    // The module ABI version, from the ABI's own header (the Rust constant is
    // fpgagdr_uapi's, which that crate's tests hold equal to it).
    let uapi = dir.join("../../kmod/include/uapi/linux/fpgagdr.h");
    let text = std::fs::read_to_string(&uapi).expect("kmod/include/uapi/linux/fpgagdr.h");
    let abi = text
        .lines()
        .find_map(|l| l.strip_prefix("#define FPGAGDR_ABI_VERSION"))
        .map(str::trim)
        .expect("FPGAGDR_ABI_VERSION in the uapi header");
    config.after_includes = Some(format!(
        "\n// The kernel module ABI version this library speaks (FPGAGDR_ABI_VERSION of\n\
         // <linux/fpgagdr.h>); opening a module of another version fails with -EPROTO.\n\
         #define FPGAGDR_MODULE_ABI_VERSION {abi}\n"
    ));
    println!("cargo:rerun-if-changed={}", uapi.display());
    cbindgen::Builder::new()
        .with_crate(&dir)
        .with_config(config)
        .generate()
        .expect("cbindgen: generating fpgagdr.h")
        .write_to_file(out.join("fpgagdr.h"));
    // The soname of the major version: programs link libfpgagdr.so.1 (install.sh
    // installs the file under that name and the development link libfpgagdr.so).
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libfpgagdr.so.1");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
}

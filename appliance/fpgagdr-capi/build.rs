//! Generates `fpgagdr.h` from the crate's declarations with cbindgen, into `OUT_DIR`
//! (install.sh copies it to `<prefix>/include`), and gives the shared library its
//! soname.
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
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

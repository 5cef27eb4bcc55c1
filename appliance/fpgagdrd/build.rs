//! Embeds the dashboard: every file listed in `webui/assets.txt` becomes a
//! `(path, bytes)` entry of `ASSETS` (see `src/api/assets.rs`). A listed file that is
//! missing fails the build, naming it.

use std::fmt::Write;
use std::path::PathBuf;

fn main() {
    let manifest =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest.join("../../webui");
    let list = root.join("assets.txt");
    println!("cargo:rerun-if-changed={}", list.display());
    let text = std::fs::read_to_string(&list)
        .unwrap_or_else(|e| panic!("reading {}: {e}", list.display()));
    let mut out = String::from(
        "/// Dashboard files: (path relative to webui/, contents).\npub(crate) static ASSETS: &[(&str, &[u8])] = &[\n",
    );
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let path = root.join(line);
        let abs = path
            .canonicalize()
            .unwrap_or_else(|e| panic!("webui/assets.txt lists {line}: {e}"));
        println!("cargo:rerun-if-changed={}", abs.display());
        writeln!(
            out,
            "    ({line:?}, include_bytes!({:?})),",
            abs.display().to_string()
        )
        .expect("write to String");
    }
    out.push_str("];\n");
    let dest =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("assets.rs");
    std::fs::write(&dest, out).unwrap_or_else(|e| panic!("writing {}: {e}", dest.display()));
}

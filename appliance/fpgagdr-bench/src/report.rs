//! Output of every subcommand: the human table, `--json`, and `--report DIR`.
//!
//! Owns: [`Outcome`] (what a subcommand's result must provide), [`Section`] and
//! [`Table`] (rendered both as aligned text for the terminal and as Markdown), the JSON
//! [`Document`] wrapper, and [`emit`]. A subcommand builds its tables once; the terminal
//! and the Markdown report show the same cells.
//!
//! `--report DIR` writes `DIR/<subcommand>.md`, `DIR/<subcommand>.json` (the same
//! document `--json` prints) and the subcommand's SVG plots; the soak adds its CSV.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::bench::{Bench, GpuInfo, Target};
use crate::error::{BenchError, Result};
use crate::plot::Plot;
use crate::reference::{Compare, RefData, RefPlatform};

/// A table whose cells are already formatted.
#[derive(Debug, Clone, Default)]
pub(crate) struct Table {
    /// Column headings.
    pub(crate) headers: Vec<String>,
    /// Rows of cells (same count as headers).
    pub(crate) rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these headings.
    pub(crate) fn new(headers: &[&str]) -> Table {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row.
    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    fn text(&self, out: &mut String) {
        let n = self.headers.len();
        let mut width: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(n) {
                width[i] = width[i].max(c.chars().count());
            }
        }
        // A column is right-aligned when every cell is a figure (or n/a, —).
        let numeric: Vec<bool> = (0..n)
            .map(|i| {
                i > 0
                    && self.rows.iter().all(|r| {
                        r.get(i).is_none_or(|c| {
                            c == "n/a"
                                || c == "—"
                                || c.starts_with(|ch: char| {
                                    ch.is_ascii_digit() || ch == '-' || ch == '+'
                                })
                        })
                    })
            })
            .collect();
        let line = |cells: &[String], out: &mut String| {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate().take(n) {
                let pad = width[i] - c.chars().count();
                if !numeric[i] {
                    s.push_str(c);
                    s.push_str(&" ".repeat(pad));
                } else {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(c);
                }
                if i + 1 < n {
                    s.push_str("  ");
                }
            }
            let _ = writeln!(out, "  {}", s.trim_end());
        };
        line(&self.headers, out);
        let rule: Vec<String> = width.iter().map(|w| "-".repeat(*w)).collect();
        line(&rule, out);
        for r in &self.rows {
            line(r, out);
        }
    }

    fn markdown(&self, out: &mut String) {
        let esc = |c: &str| c.replace('|', "\\|");
        let _ = writeln!(
            out,
            "| {} |",
            self.headers
                .iter()
                .map(|h| esc(h))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let _ = writeln!(
            out,
            "|{}",
            self.headers
                .iter()
                .enumerate()
                .map(|(i, _)| if i == 0 { "---|" } else { "---:|" })
                .collect::<String>()
        );
        for r in &self.rows {
            let _ = writeln!(
                out,
                "| {} |",
                r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
            );
        }
    }
}

/// A titled part of a result: notes and an optional table.
#[derive(Debug, Clone, Default)]
pub(crate) struct Section {
    /// Heading.
    pub(crate) title: String,
    /// Lines of explanation (units, what was measured, what is not available and why).
    pub(crate) notes: Vec<String>,
    /// The figures.
    pub(crate) table: Option<Table>,
}

impl Section {
    /// A section with a title and a table.
    pub(crate) fn new(title: impl Into<String>, table: Table) -> Section {
        Section {
            title: title.into(),
            notes: Vec::new(),
            table: Some(table),
        }
    }

    /// Adds a note line.
    pub(crate) fn note(mut self, n: impl Into<String>) -> Section {
        let n = n.into();
        if !n.is_empty() {
            self.notes.push(n);
        }
        self
    }
}

/// What a subcommand's result provides to the output stage.
pub(crate) trait Outcome: serde::Serialize {
    /// The subcommand's name (file stem of its report files).
    fn name(&self) -> &'static str;
    /// Its tables, in order.
    fn sections(&self) -> Vec<Section>;
    /// Its plots (written with `--report`).
    fn plots(&self) -> Vec<Plot> {
        Vec::new()
    }
    /// Adds its cells to a reference comparison.
    fn compare(&self, reference: &RefData, cmp: &mut Compare);
    /// Whether the run passed (only the functional suite can fail).
    fn passed(&self) -> bool {
        true
    }
    /// Files the run wrote itself (the soak CSV).
    fn extra_files(&self) -> Vec<PathBuf> {
        Vec::new()
    }
}

/// Options of the output stage (from the command line).
#[derive(Debug, Clone, Default)]
pub(crate) struct OutputOptions {
    /// Print the JSON document instead of the tables.
    pub(crate) json: bool,
    /// Write the report here.
    pub(crate) report: Option<PathBuf>,
    /// Compare with the reference report.
    pub(crate) compare: bool,
    /// Reference platform to compare with, overriding the card's.
    pub(crate) reference_platform: Option<RefPlatform>,
    /// The command line, recorded in reports.
    pub(crate) command: String,
}

/// Transfer settings recorded in every document.
#[derive(Debug, serde::Serialize)]
struct Settings {
    /// DMA channel.
    channel: u32,
    /// Per-transfer timeout, ms.
    timeout_ms: u64,
}

/// The JSON document of a run (`--json`, and `<subcommand>.json` in the report).
#[derive(Debug, serde::Serialize)]
struct Document<'a, T: serde::Serialize> {
    /// Always "fpgagdr-bench".
    tool: &'static str,
    /// The tool's version.
    version: &'static str,
    /// The subcommand.
    subcommand: &'static str,
    /// The command line as typed.
    command: &'a str,
    /// When the document was made, UNIX seconds.
    unix_time_s: f64,
    /// The card.
    card: &'a Target,
    /// The GPU.
    gpu: &'a GpuInfo,
    /// Channel and timeout.
    settings: Settings,
    /// Whether the run passed (false only for a failing functional suite).
    passed: bool,
    /// The subcommand's result.
    result: &'a T,
    /// `--compare reference`.
    #[serde(skip_serializing_if = "Option::is_none")]
    compare: Option<&'a Compare>,
    /// Files of `--report` (and the soak CSV).
    files: Vec<String>,
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|source| BenchError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// The comparison the options ask for, if any.
pub(crate) fn comparison<T: Outcome>(
    b: &Bench,
    opts: &OutputOptions,
    outcome: &T,
) -> Option<Compare> {
    if !opts.compare {
        return None;
    }
    let platform = opts.reference_platform.or_else(|| b.reference_platform());
    let mut cmp = Compare::new(platform, b.target.status.simulated);
    if let Some(p) = platform {
        outcome.compare(p.data(), &mut cmp);
    }
    Some(cmp)
}

fn compare_section(cmp: &Compare) -> Section {
    let mut t = Table::new(&["metric", "unit", "ours", "reference", "ours/reference"]);
    for r in &cmp.rows {
        t.row(vec![
            r.metric.clone(),
            r.unit.clone(),
            r.ours.map_or("n/a".into(), |v| format!("{v:.2}")),
            format!("{:.2}", r.reference),
            r.ratio.map_or("—".into(), |v| format!("{v:.3}")),
        ]);
    }
    let mut s = Section::new(
        format!(
            "compared with the reference report — platform: {}",
            cmp.platform_name
        ),
        t,
    );
    if cmp.rows.is_empty() {
        s.table = None;
    }
    if !cmp.sections.is_empty() {
        s = s.note(format!("reference figures from {}", cmp.sections));
    }
    for n in &cmp.notes {
        s = s.note(n.clone());
    }
    s
}

fn header_lines(b: &Bench, name: &str) -> Vec<String> {
    let sim = if b.target.status.simulated {
        " — SIMULATED"
    } else {
        ""
    };
    let mut v = vec![
        format!("fpgagdr-bench {name}{sim}"),
        b.card_line(),
        b.gpu_line(),
        b.link_line(),
        format!("path: {}", b.target.pcie.path_summary),
        format!("limit: {}", b.target.pcie.limit_summary),
    ];
    for w in &b.target.pcie.warnings {
        v.push(format!("WARNING: {w}"));
    }
    v
}

/// Prints / writes `outcome` as the options say; returns the exit status (0, or 1 when
/// the run did not pass).
///
/// Errors: [`BenchError::Io`] / [`BenchError::Plot`] writing the report.
pub(crate) fn emit<T: Outcome>(b: &Bench, opts: &OutputOptions, outcome: &T) -> Result<i32> {
    let cmp = comparison(b, opts, outcome);
    let mut sections = outcome.sections();
    if let Some(c) = &cmp {
        sections.push(compare_section(c));
    }
    let name = outcome.name();
    let mut files: Vec<String> = outcome
        .extra_files()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let mut plots = outcome.plots();
    if b.target.status.simulated {
        for p in &mut plots {
            p.title = format!("SIMULATED card — {}", p.title);
        }
    }
    if let Some(dir) = &opts.report {
        create_dir(dir)?;
        for p in &plots {
            p.write_svg(dir)?;
            files.push(dir.join(&p.file).display().to_string());
        }
        files.push(dir.join(format!("{name}.md")).display().to_string());
        files.push(dir.join(format!("{name}.json")).display().to_string());
    }
    let doc = Document {
        tool: "fpgagdr-bench",
        version: env!("CARGO_PKG_VERSION"),
        subcommand: name,
        command: &opts.command,
        unix_time_s: crate::units::unix_now(),
        card: &b.target,
        gpu: &b.gpu,
        settings: Settings {
            channel: b.channel,
            timeout_ms: b.timeout.as_millis() as u64,
        },
        passed: outcome.passed(),
        result: outcome,
        compare: cmp.as_ref(),
        files: files.clone(),
    };
    let json = serde_json::to_string_pretty(&doc).expect("the document serialises");
    if let Some(dir) = &opts.report {
        let mut md = String::new();
        let head = header_lines(b, name);
        let _ = writeln!(md, "# {}\n", head[0]);
        let _ = writeln!(md, "- command: `{}`", opts.command);
        for h in &head[1..] {
            let _ = writeln!(md, "- {h}");
        }
        let _ = writeln!(
            md,
            "- channel {}, timeout {} ms\n",
            b.channel,
            b.timeout.as_millis()
        );
        for s in &sections {
            let _ = writeln!(md, "## {}\n", s.title);
            for n in &s.notes {
                let _ = writeln!(md, "{n}\n");
            }
            if let Some(t) = &s.table {
                t.markdown(&mut md);
                md.push('\n');
            }
        }
        if !plots.is_empty() {
            let _ = writeln!(md, "## Plots\n");
            for p in &plots {
                let _ = writeln!(md, "![{}]({})\n", p.title, p.file);
            }
        }
        let extra = outcome.extra_files();
        if !extra.is_empty() {
            let _ = writeln!(md, "## Data\n");
            for f in extra {
                let _ = writeln!(md, "- `{}`", f.display());
            }
        }
        write_file(&dir.join(format!("{name}.md")), &md)?;
        write_file(&dir.join(format!("{name}.json")), &json)?;
    }
    if opts.json {
        write_stdout(&format!("{json}\n"));
    } else {
        let mut out = String::new();
        for l in header_lines(b, name) {
            let _ = writeln!(out, "{l}");
        }
        for s in &sections {
            let _ = writeln!(out, "\n{}", s.title);
            if let Some(t) = &s.table {
                t.text(&mut out);
            }
            for n in &s.notes {
                let _ = writeln!(out, "  {n}");
            }
        }
        if !files.is_empty() {
            let _ = writeln!(out, "\nfiles:");
            for f in &files {
                let _ = writeln!(out, "  {f}");
            }
        }
        write_stdout(&out);
    }
    Ok(if outcome.passed() { 0 } else { 1 })
}

/// Writes `text` to stdout; a reader that went away (`--json | head -1`: EPIPE) is not an
/// error (the files, if any, are written already), so this never panics as `print!` does.
fn write_stdout(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush())
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        eprintln!("fpgagdr-bench: writing to stdout: {e}");
    }
}

/// Creates the report folder (and parents).
pub(crate) fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|source| BenchError::Io {
        path: dir.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_render_as_text_and_markdown() {
        let mut t = Table::new(&["size", "mean µs"]);
        t.row(vec!["4 KiB".into(), "54.4".into()]);
        t.row(vec!["8 MiB".into(), "3557.4".into()]);
        let mut s = String::new();
        t.text(&mut s);
        assert_eq!(
            s,
            "  size   mean µs\n  -----  -------\n  4 KiB     54.4\n  8 MiB   3557.4\n"
        );
        let mut m = String::new();
        t.markdown(&mut m);
        assert!(m.starts_with("| size | mean µs |\n|---|---:|\n| 4 KiB | 54.4 |"));
    }
}

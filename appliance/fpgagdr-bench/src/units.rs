//! Sizes, durations and numbers as people type and read them.
//!
//! Owns: parsing `4K` / `1M` / `2G` (binary units: KiB, MiB, GiB) and `500ms` / `3s` /
//! `10m` / `12h`, and the formatting of sizes, addresses and figures in tables.

use std::time::Duration;

/// 1 KiB, 1 MiB, 1 GiB in bytes.
pub(crate) const KIB: u64 = 1 << 10;
pub(crate) const MIB: u64 = 1 << 20;
pub(crate) const GIB: u64 = 1 << 30;

/// Parses a byte count: a plain number of bytes, or a number with `K`, `M`, `G`
/// (optionally `KiB`, `MiB`, `GiB`, `KB`, `MB`, `GB`; all binary, as the reference report's "1MB"
/// is 1 048 576 bytes). Zero is refused.
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{s}`: expected a number of bytes such as 4096, 64K, 1M, 2G"))?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => KIB,
        "m" | "mb" | "mib" => MIB,
        "g" | "gb" | "gib" => GIB,
        other => return Err(format!("`{s}`: unknown unit `{other}` (use K, M or G)")),
    };
    match n.checked_mul(mult) {
        Some(0) => Err(format!("`{s}`: a size must be greater than zero")),
        Some(v) => Ok(v),
        None => Err(format!("`{s}`: too large")),
    }
}

/// Parses a comma-separated list of sizes (`4K,64K,1M`).
pub(crate) fn parse_size_list(s: &str) -> Result<Vec<u64>, String> {
    let v: Vec<u64> = s
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(parse_size)
        .collect::<Result<_, _>>()?;
    if v.is_empty() {
        return Err("the size list is empty".into());
    }
    Ok(v)
}

/// A list of sizes as one command-line value (`--sizes 4K,64K,1M`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SizeList(pub(crate) Vec<u64>);

/// clap value parser for [`SizeList`].
pub(crate) fn size_list(s: &str) -> Result<SizeList, String> {
    parse_size_list(s).map(SizeList)
}

/// Parses a card address: `0x…` hex, `0`, or a size such as `64M`.
pub(crate) fn parse_addr(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return u64::from_str_radix(h, 16).map_err(|e| format!("`{s}`: {e}"));
    }
    if t == "0" {
        return Ok(0);
    }
    parse_size(t)
}

/// Parses a duration: a number followed by `ms`, `s`, `m` or `h` (`500ms`, `3s`, `2m`,
/// `12h`); a bare number is seconds. Zero is refused.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("`{s}`: expected a duration such as 500ms, 30s, 10m, 12h"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "" | "s" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        other => return Err(format!("`{s}`: unknown unit `{other}` (use ms, s, m or h)")),
    };
    if !(secs.is_finite() && secs > 0.0) {
        return Err(format!("`{s}`: a duration must be greater than zero"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `4 KiB`, `1 MiB`, `1.5 MiB`, `2 GiB`, or bytes below 1 KiB.
pub(crate) fn fmt_size(bytes: u64) -> String {
    let (unit, div) = if bytes >= GIB && bytes.is_multiple_of(GIB / 4) {
        ("GiB", GIB)
    } else if bytes >= MIB {
        ("MiB", MIB)
    } else if bytes >= KIB {
        ("KiB", KIB)
    } else {
        return format!("{bytes} B");
    };
    let v = bytes as f64 / div as f64;
    if v.fract() == 0.0 {
        format!("{v:.0} {unit}")
    } else {
        format!("{v:.2} {unit}")
    }
}

/// A card address as `0x…` and in MiB, e.g. `0x04000000 (64 MiB)`.
pub(crate) fn fmt_addr(addr: u64) -> String {
    format!("{addr:#010x} ({} MiB)", addr / MIB)
}

/// A latency in µs with one decimal.
pub(crate) fn us(v: f64) -> String {
    format!("{v:.1}")
}

/// A ratio such as a speed-up: `1.52x`.
pub(crate) fn ratio(v: f64) -> String {
    format!("{v:.2}x")
}

/// A duration for people: `12h`, `10m`, `3.0s`, `500ms`.
pub(crate) fn fmt_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 3600.0 && (s % 3600.0) == 0.0 {
        format!("{}h", s as u64 / 3600)
    } else if s >= 60.0 && (s % 60.0) == 0.0 {
        format!("{}m", s as u64 / 60)
    } else if s >= 1.0 {
        format!("{s:.1}s")
    } else {
        format!("{:.0}ms", s * 1000.0)
    }
}

/// Seconds since the UNIX epoch (wall clock, for reports only).
pub(crate) fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_binary_units() {
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("1MB"), Ok(MIB));
        assert_eq!(parse_size("2G"), Ok(2 * GIB));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("0").is_err());
        assert!(parse_size("4X").is_err());
        assert!(parse_size("").is_err());
        assert_eq!(
            parse_size_list("4K,64K, 512K,1M,4M,8M"),
            Ok(vec![4096, 65536, 524288, MIB, 4 * MIB, 8 * MIB])
        );
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("3s"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("12h"), Ok(Duration::from_secs(43200)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("5d").is_err());
    }

    #[test]
    fn formatting() {
        assert_eq!(fmt_size(4096), "4 KiB");
        assert_eq!(fmt_size(MIB), "1 MiB");
        assert_eq!(fmt_size(2 * GIB), "2 GiB");
        assert_eq!(fmt_size(100), "100 B");
        assert_eq!(fmt_addr(64 * MIB), "0x04000000 (64 MiB)");
        assert_eq!(fmt_duration(Duration::from_secs(43200)), "12h");
        assert_eq!(fmt_duration(Duration::from_secs(600)), "10m");
        assert_eq!(fmt_duration(Duration::from_millis(500)), "500ms");
    }
}

//! SVG line plots for the reports (plotters, SVG back-end only: no fonts, no bitmaps).
//!
//! Owns: [`Plot`] and [`Series`] (what to draw) and [`Plot::write_svg`]. Each series is
//! one polyline with point markers and a legend entry carrying its name, so a reader (or
//! a test parsing the XML) finds every series by name.

use std::path::Path;

use plotters::prelude::*;

use crate::error::{BenchError, Result};

/// One named line.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    /// Legend text, e.g. "C read".
    pub(crate) name: String,
    /// (x, y) points in drawing order.
    pub(crate) points: Vec<(f64, f64)>,
}

/// A line chart written as one SVG file of the report.
#[derive(Debug, Clone)]
pub(crate) struct Plot {
    /// File name inside the report folder, e.g. `sizes-latency.svg`.
    pub(crate) file: String,
    /// Chart title.
    pub(crate) title: String,
    /// X axis label with its unit.
    pub(crate) x_label: String,
    /// Y axis label with its unit.
    pub(crate) y_label: String,
    /// Logarithmic x axis (sizes).
    pub(crate) x_log: bool,
    /// Logarithmic y axis (latencies over sizes).
    pub(crate) y_log: bool,
    /// The lines; series without points are left out.
    pub(crate) series: Vec<Series>,
}

const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

fn range(values: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (if log { 1.0 } else { 0.0 }, 1.0);
    }
    if log {
        (lo / 1.5, hi * 1.5)
    } else {
        let pad = ((hi - lo) * 0.08).max(hi.abs() * 0.02).max(1e-9);
        (lo - pad, hi + pad)
    }
}

/// An axis tick as people write numbers: no trailing `.0` (`10`, not `10.0`; iteration
/// `0`, not `0.0`), at most three significant digits below 1000, thousands as `k`
/// (`1.5k`) and millions as `M`.
pub(crate) fn tick(v: f64) -> String {
    let a = v.abs();
    let (x, suffix) = if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let digits = match x.abs() {
        a if a == 0.0 || a >= 100.0 => 0,
        a if a >= 10.0 => 1,
        a if a >= 1.0 => 2,
        _ => 3,
    };
    let mut t = format!("{x:.digits$}");
    if t.contains('.') {
        t = t.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    if t == "-0" {
        t = "0".into();
    }
    format!("{t}{suffix}")
}

impl Plot {
    /// Draws the chart into `dir/self.file`.
    ///
    /// Errors: [`BenchError::Plot`] when plotters cannot draw or write the file.
    pub(crate) fn write_svg(&self, dir: &Path) -> Result<()> {
        let path = dir.join(&self.file);
        let fail = |e: String| BenchError::Plot {
            path: path.clone(),
            message: e,
        };
        let series: Vec<&Series> = self
            .series
            .iter()
            .filter(|s| !s.points.is_empty())
            .collect();
        let xs = || series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
        let ys = || series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
        let (x0, x1) = range(xs(), self.x_log);
        let (y0, y1) = range(ys(), self.y_log);
        let root = SVGBackend::new(&path, (960, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(e.to_string()))?;
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(&self.title, ("sans-serif", 22))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(72);
        // Four axis combinations are four chart types in plotters.
        macro_rules! draw {
            ($chart:expr) => {{
                let mut chart = $chart.map_err(|e| fail(e.to_string()))?;
                chart
                    .configure_mesh()
                    .x_desc(self.x_label.as_str())
                    .y_desc(self.y_label.as_str())
                    .x_label_formatter(&|v| tick(*v))
                    .y_label_formatter(&|v| tick(*v))
                    .draw()
                    .map_err(|e| fail(e.to_string()))?;
                for (i, s) in series.iter().enumerate() {
                    let colour = COLOURS[i % COLOURS.len()];
                    chart
                        .draw_series(LineSeries::new(
                            s.points.iter().copied(),
                            colour.stroke_width(2),
                        ))
                        .map_err(|e| fail(e.to_string()))?
                        .label(s.name.as_str())
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                        });
                    chart
                        .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, colour.filled())))
                        .map_err(|e| fail(e.to_string()))?;
                }
                chart
                    .configure_series_labels()
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK)
                    .position(SeriesLabelPosition::UpperLeft)
                    .draw()
                    .map_err(|e| fail(e.to_string()))?;
            }};
        }
        match (self.x_log, self.y_log) {
            (true, true) => {
                draw!(builder.build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale()))
            }
            (true, false) => draw!(builder.build_cartesian_2d((x0..x1).log_scale(), y0..y1)),
            (false, true) => draw!(builder.build_cartesian_2d(x0..x1, (y0..y1).log_scale())),
            (false, false) => draw!(builder.build_cartesian_2d(x0..x1, y0..y1)),
        }
        root.present().map_err(|e| fail(e.to_string()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::tick;

    #[test]
    fn ticks_read_as_people_write_them() {
        for (v, want) in [
            (0.0, "0"),
            (10.0, "10"),
            (100.0, "100"),
            (1000.0, "1000"),
            (2.5, "2.5"),
            (0.125, "0.125"),
            (497.3, "497"),
            (15000.0, "15k"),
            (2_500_000.0, "2.5M"),
            (-0.0001, "0"),
        ] {
            assert_eq!(tick(v), want, "{v}");
        }
    }
}

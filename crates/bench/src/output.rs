//! Bench results out: a table per sweep on stdout, and on request JSON (stdout), CSV, Markdown
//! and an SVG plot of MP/s against image size. One `Record` type feeds all of them
//! (hyperfine's `export` module is the model).

use super::{BenchOptions, Record};
use anyhow::Context as _;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

/// One column of a table: its header and how to print a record's value.
pub struct Column {
    pub header: &'static str,
    pub value: fn(&Record) -> String,
}

impl Column {
    pub const SIZE: Column = Column {
        header: "size",
        value: |r| r.size.clone(),
    };
    pub const MEDIAN_MS: Column = Column {
        header: "median ms",
        value: |r| opt(r.median_ms, 3),
    };
    pub const SPREAD: Column = Column {
        header: "min–max ms",
        value: spread,
    };
    pub const GBPS: Column = Column {
        header: "GB/s",
        value: |r| opt(r.gbps, 1),
    };
    pub const MPPS: Column = Column {
        header: "MP/s",
        value: |r| opt(r.mpps, 0),
    };
    pub const PCT_OF_COPY: Column = Column {
        header: "% of copy",
        value: |r| opt(r.pct_of_copy, 1),
    };
    pub const FLOP_PER_BYTE: Column = Column {
        header: "flop/byte",
        value: |r| opt(r.flops_per_byte, 2),
    };
    pub const STATUS: Column = Column {
        header: "status",
        value: |r| r.status.to_string(),
    };

    /// The record's name, under `header`.
    pub const fn name(header: &'static str) -> Column {
        Column {
            header,
            value: |r| r.name.clone(),
        }
    }
}

pub fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map(|v| format!("{v:.decimals$}"))
        .unwrap_or_else(|| "-".into())
}

pub fn spread(r: &Record) -> String {
    match (r.min_ms, r.max_ms) {
        (Some(a), Some(b)) => format!("{a:.3}–{b:.3}"),
        _ => "-".into(),
    }
}

fn rows(records: &[Record], columns: &[Column]) -> Vec<Vec<String>> {
    records
        .iter()
        .map(|r| columns.iter().map(|c| (c.value)(r)).collect())
        .collect()
}

/// A plain aligned table.
pub fn table(records: &[Record], columns: &[Column]) -> String {
    let body = rows(records, columns);
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            body.iter()
                .map(|r| r[i].chars().count())
                .chain([c.header.len()])
                .max()
                .unwrap()
        })
        .collect();
    let mut s = String::new();
    let line = |cells: Vec<String>, s: &mut String| {
        let cells: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i < 2 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        let _ = writeln!(s, "{}", cells.join("  ").trim_end());
    };
    line(
        columns.iter().map(|c| c.header.to_string()).collect(),
        &mut s,
    );
    for r in body {
        line(r, &mut s);
    }
    s
}

pub fn markdown(records: &[Record], columns: &[Column]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| {} |",
        columns
            .iter()
            .map(|c| c.header)
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(
        s,
        "|{}",
        columns
            .iter()
            .enumerate()
            .map(|(i, _)| if i < 2 { "---|" } else { "---:|" })
            .collect::<String>()
    );
    for r in rows(records, columns) {
        let _ = writeln!(s, "| {} |", r.join(" | "));
    }
    s
}

/// What a plot draws: one line per record name, `y` against `x`, both axes logarithmic.
pub struct PlotAxes {
    pub x_desc: &'static str,
    pub y_desc: &'static str,
    pub x: fn(&Record) -> f64,
    pub y: fn(&Record) -> Option<f64>,
    pub x_decimals: usize,
}

impl PlotAxes {
    /// MP/s against image megapixels: the image benches.
    pub const MPPS: PlotAxes = PlotAxes {
        x_desc: "image size (megapixels)",
        y_desc: "MP/s (median)",
        x: |r| r.pixels() * 1e-6,
        y: |r| r.mpps,
        x_decimals: 2,
    };
}

/// Writes everything the options ask for, plotting MP/s against image size. `title` heads
/// the table.
pub fn emit(
    records: &[Record],
    columns: &[Column],
    title: &str,
    opts: &BenchOptions,
) -> anyhow::Result<()> {
    emit_with(records, columns, title, opts, &PlotAxes::MPPS)
}

/// `emit` with the plot's axes chosen by the bench.
pub fn emit_with(
    records: &[Record],
    columns: &[Column],
    title: &str,
    opts: &BenchOptions,
    axes: &PlotAxes,
) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if opts.json {
        let _ = writeln!(out, "{}", serde_json::to_string_pretty(records)?);
    } else {
        let device = records.first().map(|r| r.device.as_str()).unwrap_or("");
        let _ = writeln!(out, "{title} on {device}\n{}", table(records, columns));
    }
    if let Some(p) = &opts.csv {
        let mut w =
            csv::Writer::from_path(p).with_context(|| format!("{}: cannot write", p.display()))?;
        for r in records {
            w.serialize(r)
                .with_context(|| format!("{}: cannot write", p.display()))?;
        }
        w.flush()?;
    }
    if let Some(p) = &opts.markdown {
        std::fs::write(p, markdown(records, columns))
            .with_context(|| format!("{}: cannot write", p.display()))?;
    }
    if let Some(p) = &opts.plot {
        plot(records, title, p, axes)?;
    }
    Ok(())
}

/// Bundled so PNG plots need no system fonts (DejaVu Sans, licence in assets/fonts).
static FONT: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");

/// `axes` (MP/s against megapixels for the image benches), one line per record name, both
/// axes logarithmic, as SVG or PNG (by extension). A sweep over several sigmas or channel
/// counts plots the first of each, and says so.
pub fn plot(records: &[Record], title: &str, path: &Path, axes: &PlotAxes) -> anyhow::Result<()> {
    const SIZE: (u32, u32) = (1200, 640);
    // Both backends measure text with it; registering twice is harmless.
    plotters::style::register_font("sans-serif", FontStyle::Normal, FONT)
        .map_err(|_| anyhow::anyhow!("the bundled font could not be loaded"))?;
    match check_plot_path(path)? {
        PlotFormat::Svg => draw(
            SVGBackend::new(path, SIZE).into_drawing_area(),
            records,
            title,
            axes,
        ),
        PlotFormat::Png => {
            let mut rgb = vec![0u8; (SIZE.0 * SIZE.1 * 3) as usize];
            draw(
                BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area(),
                records,
                title,
                axes,
            )?;
            // The PNG encoder alone: `save` would compile every format's encoder into the suite.
            use image::ImageEncoder;
            let file = std::fs::File::create(path)
                .with_context(|| format!("{}: cannot write", path.display()))?;
            image::codecs::png::PngEncoder::new(std::io::BufWriter::new(file))
                .write_image(&rgb, SIZE.0, SIZE.1, image::ExtendedColorType::Rgb8)
                .with_context(|| format!("{}: cannot write", path.display()))
        }
    }
}

/// The plot formats, by file extension.
pub enum PlotFormat {
    Svg,
    Png,
}

/// The plot's format from `path`'s extension, or an error naming the ones there are.
pub fn check_plot_path(path: &Path) -> anyhow::Result<PlotFormat> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    match ext.as_str() {
        "svg" => Ok(PlotFormat::Svg),
        "png" => Ok(PlotFormat::Png),
        _ => anyhow::bail!("{}: plots are written as .svg or .png", path.display()),
    }
}

/// Line `i` of the legend in `area`: a stroke of `color` and the series' `name`.
fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    i: usize,
    name: &str,
    color: RGBAColor,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let y = 40 + 22 * i as i32;
    area.draw(&PathElement::new(
        vec![(8, y), (34, y)],
        color.stroke_width(3),
    ))?;
    area.draw(&Text::new(
        name.to_string(),
        (42, y - 7),
        ("sans-serif", 14),
    ))?;
    Ok(())
}

/// The points each name's records of `first`'s channels and sigma give on `axes`, and the
/// names in the order they first appear.
#[allow(clippy::type_complexity)]
fn plotted_series<'a>(
    records: &'a [Record],
    first: (Option<usize>, Option<f64>),
    axes: &PlotAxes,
) -> (BTreeMap<&'a str, Vec<(f64, f64)>>, Vec<&'a str>) {
    let mut series: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for r in records.iter().filter(|r| (r.channels, r.sigma) == first) {
        if let Some(y) = (axes.y)(r) {
            if !order.contains(&r.name.as_str()) {
                order.push(&r.name);
            }
            series.entry(&r.name).or_default().push(((axes.x)(r), y));
        }
    }
    (series, order)
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    records: &[Record],
    title: &str,
    axes: &PlotAxes,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let first = records
        .first()
        .map(|r| (r.channels, r.sigma))
        .unwrap_or_default();
    let (series, order) = plotted_series(records, first, axes);
    anyhow::ensure!(
        !series.is_empty(),
        "nothing was measured, so there is nothing to plot"
    );
    let caption = match first {
        (Some(c), Some(s)) => format!("{title}, {c} channel(s), sigma {s}"),
        _ => title.to_string(),
    };
    let all = || series.values().flatten();
    let (x0, x1) = all().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (y0, y1) = all().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(880);
    let mut chart = ChartBuilder::on(&left)
        .caption(caption, ("sans-serif", 18))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d(
            (x0 * 0.7..x1 * 1.4).log_scale(),
            (y0 * 0.7..y1 * 1.4).log_scale(),
        )?;
    chart
        .configure_mesh()
        .x_desc(axes.x_desc)
        .y_desc(axes.y_desc)
        .x_label_formatter(&|v| format!("{v:.*}", axes.x_decimals))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()?;
    for (i, name) in order.iter().enumerate() {
        let mut pts = series[name].clone();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let color = Palette99::pick(i).to_rgba();
        chart.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?;
        chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
        legend(&right, i, name, color)?;
    }
    root.present()?;
    Ok(())
}

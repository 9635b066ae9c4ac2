//! `gblur bench blur`: the algorithm table of the "Tuning Performance on the GPU" chapter
//! rebuilt on this device. Each row is a real, checked kernel set; beside its measured MP/s
//! stands the chapter's estimate, the copy kernel's MP/s × 2 / (memory accesses per sample), so
//! a reader sees how close each algorithm gets to what its memory traffic allows.

use super::device::{download, enqueue_copy4, noise_planar, verify};
use super::output::{opt, Column};
use super::runner::measure;
use super::{BenchOptions, Record};
use crate::kernels::CONV2D;
use gblur::filter::{Blur2d, LineFilter, Method};
use gblur::gpu::defines::pass_defines;
use gblur::gpu::format::PixelFormat;
use gblur::gpu::opencl::queue::Arg;
use gblur::gpu::opencl::{ClContext, ClError, Timed};
use gblur::gpu::pipeline::{self, DeviceImage};
use gblur::gpu::plan::Blocking;
use gblur::gpu::plan::{ChunkStart, Pipeline};
use gblur::gpu::transpose::TransposeKind;
use gblur::gpu::upload;
use gblur::pixels::planar::Planar;
use gblur::progress::SWEEP;
use indicatif::ProgressBar;
use opencl3::memory::Buffer;

/// The blocked rows, on every image: Nehab et al.'s carried states at three chunk lengths, and
/// the overlapped chunks at three.
const BLOCKED_ROWS: [(usize, ChunkStart); 6] = [
    (32, ChunkStart::Carried),
    (64, ChunkStart::Carried),
    (128, ChunkStart::Carried),
    (64, ChunkStart::Overlap),
    (128, ChunkStart::Overlap),
    (256, ChunkStart::Overlap),
];

fn blocked_name(start: ChunkStart) -> &'static str {
    match start {
        ChunkStart::Overlap => "overlapped",
        _ => "blocked",
    }
}

/// Enqueues one timed run of a row.
type RunFn<'a> = Box<dyn Fn() -> Result<Vec<Timed>, ClError> + 'a>;

/// Flops per sample of one recursive pass: per sample and direction, each of the two sections
/// costs 4 multiplies and 5 adds, plus the offset and the sums.
const RECURSIVE_PASS_FLOPS: f64 = 42.0;

#[derive(Clone, Debug)]
pub struct BlurBenchOptions {
    pub sigmas: Vec<f64>,
    pub channels: Vec<usize>,
    /// Name fragments of the rows to run (all when empty); the copy rows always run.
    pub only: Vec<String>,
}

/// The chapter's comparison uses a kernel of radius 3 sigma for both convolutions.
fn conv_radius(sigma: f64) -> usize {
    (3.0 * sigma).ceil().max(1.0) as usize
}

/// Work above this many multiply-adds per run makes the 2D convolution row too slow to time.
const CONV2D_MAX_MACS: f64 = 2e11;

enum Row {
    Copy,
    Conv2d,
    Separable,
    Recursive(Pipeline),
    /// The float4 copy of an RGBA8 image's bytes: the yardstick of the RGBA8 rows.
    CopyRgba8,
    /// The blocked pipeline on RGBA8 in, RGBA8 out (`upload::enqueue_u8`).
    BlockedRgba8 {
        chunk: usize,
        start: ChunkStart,
    },
}

impl Row {
    fn name(&self) -> String {
        match self {
            Row::Copy => "copy float4".into(),
            Row::Conv2d => "2D convolution".into(),
            Row::Separable => "separable convolution".into(),
            Row::Recursive(Pipeline::Direct) => "recursive, direct (row + column)".into(),
            Row::Recursive(Pipeline::Transpose(t)) => format!("recursive, V+T+V+T {t}"),
            Row::Recursive(Pipeline::Blocked { chunk, start }) => {
                format!(
                    "recursive, {} c{chunk} (fused transpose)",
                    blocked_name(*start)
                )
            }
            Row::CopyRgba8 => "copy RGBA8 (float4)".into(),
            Row::BlockedRgba8 { chunk, start } => {
                format!("recursive, {} c{chunk}, RGBA8 in/out", blocked_name(*start))
            }
        }
    }

    fn is_rgba8(&self) -> bool {
        matches!(self, Row::CopyRgba8 | Row::BlockedRgba8 { .. })
    }

    /// (global accesses, flops) per sample.
    fn cost(&self, sigma: f64) -> (f64, f64) {
        let taps = (2 * conv_radius(sigma) + 1) as f64;
        match self {
            Row::Copy => (2.0, 0.0),
            Row::Conv2d => (taps * taps + 1.0, 2.0 * taps * taps + 2.0 * taps),
            Row::Separable => (2.0 * taps + 2.0, 4.0 * taps),
            Row::Recursive(Pipeline::Direct) => (10.0, 2.0 * RECURSIVE_PASS_FLOPS),
            Row::Recursive(Pipeline::Transpose(_)) => (14.0, 2.0 * RECURSIVE_PASS_FLOPS),
            // Overlapped, per axis: reads 1 (the overlaps from cache), writes 1; the flops
            // exclude the walks in from outside (about 10 sigma rows per chunk end).
            Row::Recursive(Pipeline::Blocked {
                start: ChunkStart::Overlap,
                ..
            }) => (4.0, 2.0 * RECURSIVE_PASS_FLOPS),
            // Carried, per axis: summaries read 1 and write 1/4, carries move 1/2, the final
            // pass reads the input twice (the second time mostly from cache), reads 1/4 and
            // writes 1.
            Row::Recursive(Pipeline::Blocked { .. }) => (10.0, 4.0 * RECURSIVE_PASS_FLOPS),
            // In 4-byte units per pixel (one RGBA8 pixel, or one f32 sample).
            Row::CopyRgba8 => (2.0, 0.0),
            // Overlapped: y reads 1 and writes 4 (f32 RGBA), x reads 4 and writes 1.
            Row::BlockedRgba8 {
                start: ChunkStart::Overlap,
                ..
            } => (10.0, 8.0 * RECURSIVE_PASS_FLOPS),
            // Carried: y summaries read 1, final reads 2 and writes 4 (f32 RGBA); x summaries
            // read 4, final reads 8 and writes 1.
            Row::BlockedRgba8 { .. } => (20.0, 16.0 * RECURSIVE_PASS_FLOPS),
        }
    }
}

pub fn run(
    ctx: &ClContext,
    opts: &BenchOptions,
    blur_opts: &BlurBenchOptions,
) -> anyhow::Result<Vec<Record>> {
    let records = sweep(ctx, opts, blur_opts)?;
    super::output::emit(
        &records,
        &COLUMNS,
        "gblur bench blur (MP/s = megapixels per second, all channels)",
        opts,
    )?;
    Ok(records)
}

const COLUMNS: [Column; 11] = [
    Column {
        header: "size",
        value: |r| {
            format!(
                "{} {}ch σ{}",
                r.size,
                r.channels.unwrap_or(1),
                r.sigma.unwrap_or(0.0)
            )
        },
    },
    Column::name("algorithm"),
    Column {
        header: "acc/sample",
        value: |r| opt(r.accesses_per_pixel, 0),
    },
    Column {
        header: "flop/sample",
        value: |r| opt(r.flops_per_pixel, 0),
    },
    Column::FLOP_PER_BYTE,
    Column {
        header: "estimate MP/s",
        value: |r| opt(r.estimate_mpps, 0),
    },
    Column::MPPS,
    Column {
        header: "meas/est",
        value: |r| opt(r.measured_over_estimate, 2),
    },
    Column::PCT_OF_COPY,
    Column::MEDIAN_MS,
    Column::STATUS,
];

/// The table's rows: on every image, and with 4 channels also on RGBA8 bytes. `only` keeps the
/// rows whose names contain one of its fragments, and always the copy rows (the yardsticks).
struct RowSet {
    planar: Vec<Row>,
    rgba8: Vec<Row>,
}

impl RowSet {
    fn new(only: &[String]) -> Self {
        let mut planar = vec![
            Row::Copy,
            Row::Conv2d,
            Row::Separable,
            Row::Recursive(Pipeline::Direct),
        ];
        planar.extend(TransposeKind::ALL.map(|t| Row::Recursive(Pipeline::Transpose(t))));
        planar.extend(
            BLOCKED_ROWS.map(|(chunk, start)| Row::Recursive(Pipeline::Blocked { chunk, start })),
        );
        let mut rgba8 = vec![Row::CopyRgba8];
        rgba8.extend(BLOCKED_ROWS.map(|(chunk, start)| Row::BlockedRgba8 { chunk, start }));
        let chosen = |row: &Row| {
            matches!(row, Row::Copy | Row::CopyRgba8)
                || only.is_empty()
                || only.iter().any(|o| row.name().contains(o.as_str()))
        };
        planar.retain(chosen);
        rgba8.retain(chosen);
        RowSet { planar, rgba8 }
    }

    /// The rows run on an image of `c` channels, in table order.
    fn for_channels(&self, c: usize) -> impl Iterator<Item = &Row> {
        let extra = if c == 4 { &self.rgba8[..] } else { &[] };
        self.planar.iter().chain(extra)
    }
}

fn sweep(
    ctx: &ClContext,
    opts: &BenchOptions,
    blur_opts: &BlurBenchOptions,
) -> anyhow::Result<Vec<Record>> {
    let sizes = opts
        .sizes
        .clone()
        .unwrap_or_else(|| vec![(1024, 1024), (2048, 2048), (4096, 4096)]);
    let rows = RowSet::new(&blur_opts.only);
    let per_size: usize = blur_opts
        .channels
        .iter()
        .map(|&c| rows.for_channels(c).count())
        .sum();
    let total = sizes.len() * blur_opts.sigmas.len() * per_size;
    let bar = gblur::progress::progress_bar(total, opts.quiet, SWEEP);
    let mut records = Vec::new();
    for &(w, h) in &sizes {
        for &c in &blur_opts.channels {
            let img = noise_planar(w, h, c, (w * 31 + h * 7 + c) as u64);
            let mut dev = DeviceImage::new(ctx, w, h, c)?;
            for &sigma in &blur_opts.sigmas {
                let image = (&img, &mut dev);
                let table = measure_rows(ctx, opts, rows.for_channels(c), image, sigma, &bar)?;
                records.extend(table);
            }
        }
    }
    bar.finish_and_clear();
    Ok(records)
}

/// Every row on one image at one sigma, each beside the estimate from its copy yardstick.
fn measure_rows<'r>(
    ctx: &ClContext,
    opts: &BenchOptions,
    rows: impl Iterator<Item = &'r Row>,
    (img, dev): (&Planar, &mut DeviceImage),
    sigma: f64,
    bar: &ProgressBar,
) -> anyhow::Result<Vec<Record>> {
    let (w, h, c) = (img.width, img.height, img.channels);
    let (mut copy_mpps, mut copy_rgba8_mpps) = (None, None);
    let mut reference = None;
    let mut records = Vec::new();
    for row in rows {
        bar.set_message(format!("{w}x{h} {c}ch σ{sigma} {}", row.name()));
        let mut r = row_record(ctx, row, img, sigma);
        if row.is_rgba8() {
            measure_rgba8_row(ctx, opts, row, img, sigma, &mut r)?;
        } else {
            let image = (img, &mut *dev);
            measure_row(ctx, opts, row, image, sigma, &mut r, &mut reference)?;
        }
        match row {
            Row::Copy => copy_mpps = r.mpps,
            Row::CopyRgba8 => copy_rgba8_mpps = r.mpps,
            _ => {}
        }
        let yardstick = if row.is_rgba8() {
            copy_rgba8_mpps
        } else {
            copy_mpps
        };
        if let Some(copy) = yardstick {
            let estimate = copy * 2.0 / row.cost(sigma).0;
            r.estimate_mpps = Some(estimate);
            r.measured_over_estimate = r.mpps.map(|m| m / estimate);
            r.pct_of_copy = r.mpps.map(|m| 100.0 * m / copy);
        }
        records.push(r);
        bar.inc(1);
    }
    Ok(records)
}

/// A row's record before it is measured: its costs, and the blocked rows' y-pass defines
/// (overlapped or carried as the row runs it) in the build options.
fn row_record(ctx: &ClContext, row: &Row, img: &Planar, sigma: f64) -> Record {
    let (w, h) = (img.width, img.height);
    let mut r = Record::new("blur", row.name(), (w, h), ctx);
    r.channels = Some(if row.is_rgba8() { 4 } else { img.channels });
    r.sigma = Some(sigma);
    let (acc, flops) = row.cost(sigma);
    r.accesses_per_pixel = Some(acc);
    r.flops_per_pixel = Some(flops);
    r.flops_per_byte = Some(flops / (acc * 4.0));
    let format = match row {
        Row::Recursive(Pipeline::Blocked { chunk, start }) => {
            Some((*chunk, *start, PixelFormat::F32))
        }
        Row::BlockedRgba8 { chunk, start } => Some((*chunk, *start, rgba8_format(true))),
        _ => None,
    };
    if let Some((chunk, start, format)) = format {
        let y = Blur2d::new(Method::Recursive, sigma, sigma).y;
        let defines = pass_defines(&y, Blocking { chunk, start }, h, format);
        r.build_options = format!("{} {defines}", r.build_options);
    }
    r
}

/// The sampled Gaussian of radius `conv_radius(sigma)`: both convolution rows' taps.
fn fir(sigma: f64) -> LineFilter {
    LineFilter::fir(sigma, conv_radius(sigma), 0)
}

/// A planar row ready to time: its output of one run and the reference it must match, and
/// how to enqueue a timed run. `Err`: why the row is skipped.
type Checkable<'a> = Result<(Vec<f32>, Vec<f32>, RunFn<'a>), String>;

/// The blur reference of the image at hand, kept from row to row: every recursive row checks
/// against the same one.
type BlurReference = Option<(Blur2d, Vec<f32>)>;

/// Runs a planar row once on `img`, checks it, and times it if it is right.
fn measure_row(
    ctx: &ClContext,
    opts: &BenchOptions,
    row: &Row,
    (img, dev): (&Planar, &mut DeviceImage),
    sigma: f64,
    r: &mut Record,
    reference: &mut BlurReference,
) -> anyhow::Result<()> {
    // Every row starts from the same input; the in-place pipelines overwrite it while timed,
    // which changes nothing about their cost.
    ctx.write(&mut dev.a, &img.data, "upload")?;
    ctx.finish()?;
    let dev: &DeviceImage = dev;
    let checkable = match row {
        Row::Copy => copy_once(ctx, img, dev)?,
        Row::Conv2d => conv2d_once(ctx, img, dev, sigma)?,
        Row::Separable | Row::Recursive(_) => filter_once(ctx, row, img, dev, sigma, reference)?,
        Row::CopyRgba8 | Row::BlockedRgba8 { .. } => unreachable!("measure_rgba8_row"),
    };
    let (got, want, enqueue) = match checkable {
        Err(why) => {
            r.skip(why);
            return Ok(());
        }
        Ok(ready) => ready,
    };
    match verify(&got, &want, 1e-5) {
        Err(why) => r.fail(why),
        Ok(()) => {
            let stats = measure(ctx, opts.runs, enqueue)?;
            r.timed(&stats, img.data.len() as f64 * 4.0 * row.cost(sigma).0);
        }
    }
    Ok(())
}

/// The float4 copy of the image's samples.
fn copy_once<'a>(
    ctx: &'a ClContext,
    img: &Planar,
    dev: &'a DeviceImage,
) -> Result<Checkable<'a>, ClError> {
    let n = img.data.len();
    if !n.is_multiple_of(4) {
        return Ok(Err("sample count not a multiple of 4".into()));
    }
    enqueue_copy4(ctx, &dev.a, &dev.b, n)?;
    ctx.finish()?;
    Ok(Ok((
        download(ctx, &dev.b, n)?,
        img.data.clone(),
        Box::new(move || Ok(vec![enqueue_copy4(ctx, &dev.a, &dev.b, n)?])),
    )))
}

/// The 2D convolution with the sampled Gaussian, checked at sample positions.
fn conv2d_once<'a>(
    ctx: &'a ClContext,
    img: &Planar,
    dev: &'a DeviceImage,
    sigma: f64,
) -> Result<Checkable<'a>, ClError> {
    let (w, h, c) = (img.width, img.height, img.channels);
    let n = img.data.len();
    let radius = conv_radius(sigma);
    let macs = n as f64 * ((2 * radius + 1) as f64).powi(2);
    if macs > CONV2D_MAX_MACS {
        return Ok(Err(format!("{macs:.1e} multiply-adds per run")));
    }
    let taps = match fir(sigma) {
        LineFilter::Fir { taps, .. } => taps,
        LineFilter::Recursive { .. } => unreachable!(),
    };
    let mut tbuf = ctx.buffer(taps.len(), true)?;
    ctx.write(&mut tbuf, &taps, "taps")?;
    ctx.finish()?;
    let run = move || -> Result<Vec<Timed>, ClError> {
        Ok(vec![conv2d(ctx, &tbuf, radius, dev, (w, h, c))?])
    };
    run()?;
    ctx.finish()?;
    let got = download(ctx, &dev.b, n)?;
    let (got, want) = sampled_conv2d(img, &got, &taps, radius);
    Ok(Ok((got, want, Box::new(run))))
}

/// The separable convolution (the FIR through the direct pipeline) or a recursive pipeline,
/// checked against the Rust reference blur.
fn filter_once<'a>(
    ctx: &'a ClContext,
    row: &Row,
    img: &Planar,
    dev: &'a DeviceImage,
    sigma: f64,
    reference: &mut BlurReference,
) -> Result<Checkable<'a>, ClError> {
    let (blur, pipe) = match row {
        Row::Separable => (
            Blur2d {
                x: fir(sigma),
                y: fir(sigma),
                method: Method::Fir,
                truncate: None,
            },
            Pipeline::Direct,
        ),
        Row::Recursive(p) => (Blur2d::new(Method::Recursive, sigma, sigma), *p),
        _ => unreachable!("the filter rows"),
    };
    pipeline::enqueue(ctx, dev, &blur, pipe)?;
    let got = download(ctx, &dev.a, img.data.len())?;
    if reference.as_ref().is_none_or(|(b, _)| *b != blur) {
        *reference = Some((blur.clone(), gblur::cpu::reference::blur(img, &blur).0.data));
    }
    let want = reference.as_ref().unwrap().1.clone();
    let run = move || -> Result<Vec<Timed>, ClError> {
        Ok(pipeline::enqueue(ctx, dev, &blur, pipe)?
            .into_iter()
            .map(|e| e.timed)
            .collect())
    };
    Ok(Ok((got, want, Box::new(run))))
}

/// The y pass's pixel format of the RGBA8 rows (`in_u8`), or the x pass's.
fn rgba8_format(first: bool) -> PixelFormat {
    PixelFormat {
        channels: 4,
        in_u8: first,
        out_u8: !first,
        linear: false,
    }
}

/// The most `got` (`samples` blurred by `blur`, RGBA8 of `w`×`h`) is off the Rust reference,
/// in steps.
fn steps_off_reference(got: &[u8], samples: Vec<u8>, (w, h): (usize, usize), blur: &Blur2d) -> u8 {
    let input = image::RgbaImage::from_raw(w as u32, h as u32, samples).expect("w×h×4 samples");
    let want = gblur::cpu::reference::blur_image(&input.into(), blur, false);
    got.iter()
        .zip(want.as_bytes())
        .map(|(a, b)| a.abs_diff(*b))
        .max()
        .unwrap_or(0)
}

/// The RGBA8 rows: the planar noise image's first four planes as 8-bit RGBA (alpha included,
/// so the premultiplication is exercised), blurred bytes in, bytes out, and checked against
/// the Rust reference on the same image to one step.
fn measure_rgba8_row(
    ctx: &ClContext,
    opts: &BenchOptions,
    row: &Row,
    img: &Planar,
    sigma: f64,
    r: &mut Record,
) -> anyhow::Result<()> {
    let (w, h) = (img.width, img.height);
    let plane = w * h;
    let samples: Vec<u8> = (0..plane * 4)
        .map(|i| (img.data[(i % 4) * plane + i / 4].clamp(0.0, 1.0) * 255.0).round() as u8)
        .collect();
    let mut bytes = ctx.buffer::<u8>(samples.len(), false)?;
    let bytes_per_run = plane as f64 * 4.0 * row.cost(sigma).0;
    match row {
        Row::CopyRgba8 => {
            // The same bytes moved as float4: 4 pixels per work-item.
            let (src, dst) = (
                ctx.buffer::<f32>(plane, false)?,
                ctx.buffer::<f32>(plane, false)?,
            );
            enqueue_copy4(ctx, &src, &dst, plane)?;
            ctx.finish()?;
            let stats = measure(ctx, opts.runs, || {
                Ok(vec![enqueue_copy4(ctx, &src, &dst, plane)?])
            })?;
            r.timed(&stats, bytes_per_run);
        }
        Row::BlockedRgba8 { chunk, start } => {
            let blur = Blur2d::new(Method::Recursive, sigma, sigma);
            let mid = ctx.buffer::<f32>(plane * 4, false)?;
            let chunk = Blocking {
                chunk: *chunk,
                start: *start,
            };
            ctx.write(&mut bytes, &samples, "upload")?;
            upload::enqueue_u8(ctx, &bytes, &mid, (w, h, 4), &blur, false, chunk)?;
            let mut got = vec![0u8; samples.len()];
            ctx.read(&bytes, &mut got, "download")?;
            let worst = steps_off_reference(&got, samples, (w, h), &blur);
            if worst > 1 {
                r.fail(format!("{worst} steps off the Rust reference"));
                return Ok(());
            }
            let stats = measure(ctx, opts.runs, || {
                Ok(
                    upload::enqueue_u8(ctx, &bytes, &mid, (w, h, 4), &blur, false, chunk)?
                        .into_iter()
                        .map(|e| e.timed)
                        .collect(),
                )
            })?;
            r.timed(&stats, bytes_per_run);
        }
        _ => unreachable!("only the RGBA8 rows"),
    }
    Ok(())
}

fn conv2d(
    ctx: &ClContext,
    taps: &Buffer<f32>,
    radius: usize,
    dev: &DeviceImage,
    (w, h, c): (usize, usize, usize),
) -> Result<Timed, ClError> {
    let k = ctx.kernel(CONV2D, "conv2d", "")?;
    let args = [
        Arg::Buf(&dev.a),
        Arg::Buf(&dev.b),
        Arg::Buf(taps),
        Arg::U32(radius as u32),
        Arg::U32(w as u32),
        Arg::U32(h as u32),
    ];
    ctx.run(&k, &args, &[w, h, c], None, "2D convolution")
}

/// The 2D convolution at 4096 sample positions (all of them for small images), exactly.
fn sampled_conv2d(img: &Planar, got: &[f32], taps: &[f32], radius: usize) -> (Vec<f32>, Vec<f32>) {
    let (w, h) = (img.width as isize, img.height as isize);
    let n = img.data.len();
    let step = (n / 4096).max(1);
    let mut g = Vec::new();
    let mut want = Vec::new();
    for i in (0..n).step_by(step) {
        let (c, rem) = (i / (w * h) as usize, i % (w * h) as usize);
        let (x, y) = ((rem % w as usize) as isize, (rem / w as usize) as isize);
        let r = radius as isize;
        let mut acc = 0f32;
        for (j, tj) in taps.iter().enumerate() {
            let yy = (y + j as isize - r).clamp(0, h - 1) as usize;
            let mut row = 0f32;
            for (k, tk) in taps.iter().enumerate() {
                let xx = (x + k as isize - r).clamp(0, w - 1) as usize;
                row += tk * img.at(xx, yy, c);
            }
            acc += tj * row;
        }
        g.push(got[i]);
        want.push(acc);
    }
    (g, want)
}

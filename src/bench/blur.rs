//! `gblur bench blur`: the seed chapter's algorithm table rebuilt on this device. Each row is
//! a real, checked kernel set; beside its measured MP/s stands the seed's estimate, the copy
//! kernel's MP/s × 2 / (memory accesses per sample), so a reader sees how close each algorithm
//! gets to what its memory traffic allows.

use super::output::{opt, Column};
use super::peak::{download, enqueue_copy4, verify};
use super::runner::measure;
use super::{BenchOptions, Record};
use crate::filter::{Blur2d, LineFilter, Method};
use crate::gaussian;
use crate::opencl::program::CONVOLUTION;
use crate::opencl::queue::Arg;
use crate::opencl::{ClContext, ClError, Timed};
use crate::pipeline::{self, DeviceImage, Pipeline, TransposeKind};
use crate::planar::Planar;
use crate::report::SWEEP;
use opencl3::memory::Buffer;

/// Enqueues one timed run of a row.
type RunFn<'a> = Box<dyn Fn() -> Result<Vec<Timed>, ClError> + 'a>;

/// Flops per sample of one recursive pass: per sample and direction, each of the two sections
/// costs 4 multiplies and 5 adds, plus the offset and the sums.
const RECURSIVE_PASS_FLOPS: f64 = 42.0;

pub struct BlurBenchOptions {
    pub sigmas: Vec<f64>,
    pub channels: Vec<usize>,
}

/// The seed's comparison uses a kernel of radius 3 sigma for both convolutions.
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
}

impl Row {
    fn name(&self) -> String {
        match self {
            Row::Copy => "copy float4".into(),
            Row::Conv2d => "2D convolution".into(),
            Row::Separable => "separable convolution".into(),
            Row::Recursive(Pipeline::Direct) => "recursive, direct (row + column)".into(),
            Row::Recursive(Pipeline::Transpose(t)) => format!("recursive, V+T+V+T {t}"),
            Row::Recursive(Pipeline::Blocked { chunk }) => {
                format!("recursive, blocked c{chunk} (fused transpose)")
            }
        }
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
            // Per axis: summaries read 1 and write 1/4, carries move 1/2, the final pass reads
            // the input twice (the second time mostly from cache), reads 1/4 and writes 1.
            Row::Recursive(Pipeline::Blocked { .. }) => (10.0, 4.0 * RECURSIVE_PASS_FLOPS),
        }
    }
}

pub fn run(
    ctx: &ClContext,
    opts: &BenchOptions,
    blur_opts: &BlurBenchOptions,
) -> anyhow::Result<Vec<Record>> {
    let sizes = opts
        .sizes
        .clone()
        .unwrap_or_else(|| vec![(1024, 1024), (2048, 2048), (4096, 4096)]);
    let mut rows = vec![
        Row::Copy,
        Row::Conv2d,
        Row::Separable,
        Row::Recursive(Pipeline::Direct),
    ];
    rows.extend(TransposeKind::ALL.map(|t| Row::Recursive(Pipeline::Transpose(t))));
    rows.extend([32, 64, 128].map(|chunk| Row::Recursive(Pipeline::Blocked { chunk })));
    let total = sizes.len() * blur_opts.sigmas.len() * blur_opts.channels.len() * rows.len();
    let bar = crate::report::progress_bar(total, opts.quiet, SWEEP);
    let mut records = Vec::new();
    for &(w, h) in &sizes {
        for &c in &blur_opts.channels {
            let img = super::peak::noise_planar(w, h, c, (w * 31 + h * 7 + c) as u64);
            let mut dev = DeviceImage::new(ctx, w, h, c)?;
            for &sigma in &blur_opts.sigmas {
                let mut copy_mpps = None;
                let mut reference = None;
                for row in &rows {
                    bar.set_message(format!("{w}x{h} {c}ch σ{sigma} {}", row.name()));
                    let mut r = Record::new("blur", row.name(), (w, h), ctx);
                    r.channels = Some(c);
                    r.sigma = Some(sigma);
                    let (acc, flops) = row.cost(sigma);
                    r.accesses_per_pixel = Some(acc);
                    r.flops_per_pixel = Some(flops);
                    r.flops_per_byte = Some(flops / (acc * 4.0));
                    if let Row::Recursive(Pipeline::Blocked { chunk }) = row {
                        let defines = pipeline::blocked_defines(*chunk).0;
                        r.build_options = format!("{} {defines}", r.build_options);
                    }
                    measure_row(
                        ctx,
                        opts,
                        row,
                        &img,
                        &mut dev,
                        sigma,
                        &mut r,
                        &mut reference,
                    )?;
                    if matches!(row, Row::Copy) {
                        copy_mpps = r.mpps;
                    }
                    if let Some(copy) = copy_mpps {
                        let estimate = copy * 2.0 / acc;
                        r.estimate_mpps = Some(estimate);
                        r.measured_over_estimate = r.mpps.map(|m| m / estimate);
                        r.pct_of_copy = r.mpps.map(|m| 100.0 * m / copy);
                    }
                    records.push(r);
                    bar.inc(1);
                }
            }
        }
    }
    bar.finish_and_clear();
    let columns = [
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
    super::output::emit(
        &records,
        &columns,
        "gblur bench blur (MP/s = megapixels per second, all channels)",
        opts,
    )?;
    Ok(records)
}

fn fir(sigma: f64) -> LineFilter {
    let taps = gaussian::sampled_gaussian(sigma, conv_radius(sigma));
    LineFilter::Fir {
        sigma,
        taps: taps.into_iter().map(|v| v as f32).collect(),
    }
}

#[allow(clippy::too_many_arguments)]
fn measure_row(
    ctx: &ClContext,
    opts: &BenchOptions,
    row: &Row,
    img: &Planar,
    dev: &mut DeviceImage,
    sigma: f64,
    r: &mut Record,
    reference: &mut Option<(Blur2d, Vec<f32>)>,
) -> anyhow::Result<()> {
    let (w, h, c) = (img.width, img.height, img.channels);
    let n = img.data.len();
    // Every row starts from the same input; the in-place pipelines overwrite it while timed,
    // which changes nothing about their cost.
    ctx.write(&mut dev.a, &img.data, "upload")?;
    ctx.finish()?;
    let dev: &DeviceImage = dev;
    let bytes_per_run = n as f64 * 4.0 * row.cost(sigma).0;
    let (got, want, enqueue): (Vec<f32>, Vec<f32>, RunFn) = match row {
        Row::Copy => {
            if !n.is_multiple_of(4) {
                r.status = "skipped: sample count not a multiple of 4".into();
                return Ok(());
            }
            enqueue_copy4(ctx, &dev.a, &dev.b, n)?;
            ctx.finish()?;
            (
                download(ctx, &dev.b, n)?,
                img.data.clone(),
                Box::new(|| Ok(vec![enqueue_copy4(ctx, &dev.a, &dev.b, n)?])),
            )
        }
        Row::Conv2d => {
            let radius = conv_radius(sigma);
            let macs = n as f64 * ((2 * radius + 1) as f64).powi(2);
            if macs > CONV2D_MAX_MACS {
                r.status = format!("skipped: {macs:.1e} multiply-adds per run");
                return Ok(());
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
            let (g, want) = sampled_conv2d(img, &got, &taps, radius);
            (g, want, Box::new(run))
        }
        Row::Separable | Row::Recursive(_) => {
            let (blur, pipe) = match row {
                Row::Separable => (
                    Blur2d {
                        x: fir(sigma),
                        y: fir(sigma),
                    },
                    Pipeline::Direct,
                ),
                Row::Recursive(p) => (Blur2d::new(Method::Recursive, sigma, sigma), *p),
                _ => unreachable!(),
            };
            pipeline::enqueue(ctx, dev, &blur, pipe)?;
            let got = download(ctx, &dev.a, n)?;
            // Every recursive row checks against the same reference: compute it once.
            if reference.as_ref().is_none_or(|(b, _)| *b != blur) {
                *reference = Some((blur.clone(), crate::cpu::blur(img, &blur).0.data));
            }
            let want = reference.as_ref().unwrap().1.clone();
            let run = move || -> Result<Vec<Timed>, ClError> {
                Ok(pipeline::enqueue(ctx, dev, &blur, pipe)?
                    .into_iter()
                    .map(|e| e.timed)
                    .collect())
            };
            (got, want, Box::new(run))
        }
    };
    match verify(&got, &want, 1e-5) {
        Err(why) => r.failed(why),
        Ok(()) => {
            let stats = measure(ctx, opts.runs, enqueue)?;
            r.timed(&stats, bytes_per_run);
        }
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
    let k = ctx.kernel(CONVOLUTION, "conv2d", "")?;
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

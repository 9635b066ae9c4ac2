//! `gblur bench transpose`: every transpose strategy against the float4 copy kernel moving
//! the same bytes, over a sweep of sizes (squares, non-square, sizes that are not tile
//! multiples).

use super::device::{download, enqueue_copy4, noise, upload_pair, verify};
use super::output::Column;
use super::runner::measure;
use super::{BenchOptions, Record};
use gblur::gpu::opencl::ClContext;
use gblur::gpu::transpose::{enqueue_transpose, TransposeKind};
use gblur::progress::SWEEP;
use opencl3::memory::Buffer;

pub const DEFAULT_SIZES: [(usize, usize); 8] = [
    (512, 512),
    (1024, 1024),
    (2048, 2048),
    (4096, 4096),
    (8192, 8192),
    (4000, 3000),
    (1000, 999),
    (8191, 4097),
];

pub fn run(ctx: &ClContext, opts: &BenchOptions) -> anyhow::Result<Vec<Record>> {
    let records = sweep(ctx, opts)?;
    super::output::emit(
        &records,
        &COLUMNS,
        "gblur bench transpose (f32, GB/s counts bytes read + written)",
        opts,
    )?;
    if !opts.json && !opts.quiet {
        for (size, best) in fastest_per_size(&records) {
            eprintln!("fastest at {size}: {best}");
        }
    }
    Ok(records)
}

const COLUMNS: [Column; 8] = [
    Column::SIZE,
    Column::name("strategy"),
    Column::MEDIAN_MS,
    Column::SPREAD,
    Column::GBPS,
    Column::MPPS,
    Column::PCT_OF_COPY,
    Column::STATUS,
];

fn sweep(ctx: &ClContext, opts: &BenchOptions) -> anyhow::Result<Vec<Record>> {
    let sizes = opts.sizes.clone().unwrap_or_else(|| DEFAULT_SIZES.to_vec());
    let bar = gblur::progress::progress_bar(
        sizes.len() * (1 + TransposeKind::ALL.len()),
        opts.quiet,
        SWEEP,
    );
    let mut records = Vec::new();
    for &(w, h) in &sizes {
        let host = noise(w * h);
        let (src, dst, n) = upload_pair(ctx, &host)?;
        let buffers = (&src, &dst);

        bar.set_message(format!("{w}x{h} copy"));
        let copy = measure_copy(ctx, opts.runs, buffers, &host, (w, h), n)?;
        let copy_gbps = copy.gbps;
        records.push(copy);
        bar.inc(1);

        let mut want = vec![0f32; w * h];
        gblur::cpu::reference::transpose_planes(&host, &mut want, w, h);
        for kind in TransposeKind::ALL {
            bar.set_message(format!("{w}x{h} {kind}"));
            let mut r = measure_strategy(ctx, opts.runs, kind, buffers, &want, (w, h), n)?;
            r.pct_of_copy = r.gbps.zip(copy_gbps).map(|(a, b)| 100.0 * a / b);
            records.push(r);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(records)
}

/// The yardstick: the float4 copy of the `w`×`h` image `host` (`n` floats with the padding).
fn measure_copy(
    ctx: &ClContext,
    runs: usize,
    (src, dst): (&Buffer<f32>, &Buffer<f32>),
    host: &[f32],
    (w, h): (usize, usize),
    n: usize,
) -> anyhow::Result<Record> {
    let mut copy = Record::new("transpose", "copy float4", (w, h), ctx);
    enqueue_copy4(ctx, src, dst, n)?;
    ctx.finish()?;
    match verify(&download(ctx, dst, n)?[..w * h], host, 0.0) {
        Err(why) => copy.fail(why),
        Ok(()) => {
            let stats = measure(ctx, runs, || Ok(vec![enqueue_copy4(ctx, src, dst, n)?]))?;
            copy.timed(&stats, (w * h) as f64 * 8.0);
        }
    }
    copy.pct_of_copy = copy.gbps.map(|_| 100.0);
    Ok(copy)
}

/// One transpose strategy, checked against `want` (the input transposed on the host).
fn measure_strategy(
    ctx: &ClContext,
    runs: usize,
    kind: TransposeKind,
    (src, dst): (&Buffer<f32>, &Buffer<f32>),
    want: &[f32],
    (w, h): (usize, usize),
    n: usize,
) -> anyhow::Result<Record> {
    let mut r = Record::new("transpose", kind.name(), (w, h), ctx);
    let enqueue = || enqueue_transpose(ctx, kind, src, dst, (w, h, 1), kind.name());
    drop(enqueue()?);
    ctx.finish()?;
    match verify(&download(ctx, dst, n)?[..w * h], want, 0.0) {
        Err(why) => r.fail(why),
        Ok(()) => {
            let stats = measure(ctx, runs, || Ok(vec![enqueue()?.timed]))?;
            r.timed(&stats, (w * h) as f64 * 8.0);
        }
    }
    Ok(r)
}

/// The fastest verified strategy at each size, for the summary line.
pub fn fastest_per_size(records: &[Record]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for r in records
        .iter()
        .filter(|r| r.bench == "transpose" && r.name != "copy float4" && r.verified)
    {
        let better = |o: &Record| r.median_ms < o.median_ms;
        match out.iter_mut().find(|(s, _)| *s == r.size) {
            Some((_, best)) => {
                let current = records
                    .iter()
                    .find(|o| o.size == r.size && o.name == *best)
                    .unwrap();
                if better(current) {
                    *best = r.name.clone();
                }
            }
            None => out.push((r.size.clone(), r.name.clone())),
        }
    }
    out
}

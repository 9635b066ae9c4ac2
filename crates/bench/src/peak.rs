//! `gblur bench peak`: the device's copy bandwidth (one float and one float4 per work-item)
//! and the copy with chains of dependent multiply-adds, which shows where the device turns
//! from memory-bound to compute-bound (the copy and MAD kernels of the "Tuning Performance on
//! the GPU" chapter).

use super::device::{copy_kernel, download, noise, upload_pair, verify};
use super::output::{opt, Column};
use super::runner::measure;
use super::{BenchOptions, Record};
use gblur::gpu::opencl::ClContext;
use gblur::progress::SWEEP;
use opencl3::memory::Buffer;
use rayon::prelude::*;

/// Dependent multiply-adds per float in the MAD series (2 flops each).
pub const MAD_SERIES: [usize; 6] = [3, 6, 24, 96, 384, 1536];

pub fn run(ctx: &ClContext, opts: &BenchOptions) -> anyhow::Result<Vec<Record>> {
    let records = sweep(ctx, opts)?;
    super::output::emit(
        &records,
        &COLUMNS,
        "gblur bench peak (GB/s counts bytes read + written)",
        opts,
    )?;
    Ok(records)
}

const COLUMNS: [Column; 9] = [
    Column::SIZE,
    Column::name("kernel"),
    Column::MEDIAN_MS,
    Column::SPREAD,
    Column::GBPS,
    Column {
        header: "GFLOP/s",
        value: |r| opt(r.gflops, 1),
    },
    Column::FLOP_PER_BYTE,
    Column {
        header: "% of float4 copy",
        value: |r| opt(r.pct_of_copy, 1),
    },
    Column::STATUS,
];

/// One kernel of the series: its row name, its name in `kernels/copy.cl`, its defines, its
/// work-items, and the dependent multiply-adds per float.
struct Kernel {
    name: String,
    kernel: &'static str,
    defines: String,
    items: usize,
    mads: usize,
}

/// The series over `n` floats: the two copies, then the copy with each MAD chain.
fn series(n: usize) -> Vec<Kernel> {
    let copy = |name: &str, kernel, items| Kernel {
        name: name.into(),
        kernel,
        defines: String::new(),
        items,
        mads: 0,
    };
    let mut kernels = vec![
        copy("copy float", "copy_float", n),
        copy("copy float4", "copy_float4", n / 4),
    ];
    kernels.extend(MAD_SERIES.map(|m| Kernel {
        name: format!("copy + {m} mad"),
        kernel: "copy_mad",
        defines: format!("-DMAD_COUNT={m}"),
        items: n / 4,
        mads: m,
    }));
    kernels
}

fn sweep(ctx: &ClContext, opts: &BenchOptions) -> anyhow::Result<Vec<Record>> {
    let sizes = opts
        .sizes
        .clone()
        .unwrap_or_else(|| vec![(1024, 1024), (4096, 4096)]);
    let bar =
        gblur::progress::progress_bar(sizes.len() * (2 + MAD_SERIES.len()), opts.quiet, SWEEP);
    let mut records = Vec::new();
    for &(w, h) in &sizes {
        let host = noise(w * h);
        let (src, dst, n) = upload_pair(ctx, &host)?;
        let mut padded = host;
        padded.resize(n, 0.0);
        let mut rows = Vec::new();
        for k in series(n) {
            bar.set_message(format!("{w}x{h} {}", k.name));
            rows.push(measure_kernel(
                ctx,
                opts.runs,
                &k,
                (&src, &dst),
                &padded,
                (w, h),
            )?);
            bar.inc(1);
        }
        let copy_gbps = rows
            .iter()
            .find(|r| r.name == "copy float4")
            .and_then(|r| r.gbps);
        for r in &mut rows {
            r.pct_of_copy = r.gbps.zip(copy_gbps).map(|(a, b)| 100.0 * a / b);
        }
        records.extend(rows);
    }
    bar.finish_and_clear();
    Ok(records)
}

/// Checks one kernel of the series on `input` (`n` floats, uploaded to `src`), then times it.
fn measure_kernel(
    ctx: &ClContext,
    runs: usize,
    k: &Kernel,
    (src, dst): (&Buffer<f32>, &Buffer<f32>),
    input: &[f32],
    size: (usize, usize),
) -> anyhow::Result<Record> {
    let n = input.len();
    let mut r = Record::new("peak", &k.name, size, ctx);
    r.build_options = format!("{} {}", r.build_options, k.defines).trim().into();
    // v -> 0.5 v + 0.25 reaches its fixed point 0.5 exactly within ~30 steps in f32, so the
    // host stops there instead of running billions of dependent steps.
    let want: Vec<f32> = input
        .par_iter()
        .map(|&v| (0..k.mads.min(64)).fold(v, |v, _| v.mul_add(0.5, 0.25)))
        .collect();
    let enqueue = || copy_kernel(ctx, k.kernel, &k.defines, src, dst, k.items, &k.name);
    enqueue()?;
    ctx.finish()?;
    match verify(&download(ctx, dst, n)?, &want, 1e-6) {
        Err(why) => r.fail(why),
        Ok(()) => {
            let stats = measure(ctx, runs, || Ok(vec![enqueue()?]))?;
            r.timed(&stats, n as f64 * 8.0);
            let flops = 2.0 * k.mads as f64 * n as f64;
            r.gflops = Some(flops / (stats.median_ms * 1e-3) * 1e-9);
            r.flops_per_byte = Some(flops / (n as f64 * 8.0));
        }
    }
    Ok(r)
}

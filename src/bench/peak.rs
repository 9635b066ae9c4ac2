//! `gblur bench peak`: the device's copy bandwidth (one float and one float4 per work-item)
//! and the copy with chains of dependent multiply-adds, which shows where the device turns
//! from memory-bound to compute-bound (the seed chapter's copy and MAD kernels).

use super::output::{opt, Column};
use super::runner::measure;
use super::{BenchOptions, Record};
use crate::gpu::opencl::program::COPY;
use crate::gpu::opencl::queue::Arg;
use crate::gpu::opencl::{ClContext, ClError, Timed};
use crate::pixels::planar::Planar;
use crate::report::SWEEP;
use opencl3::memory::Buffer;
use rayon::prelude::*;

/// Dependent multiply-adds per float in the MAD series (2 flops each).
pub const MAD_SERIES: [usize; 6] = [3, 6, 24, 96, 384, 1536];

/// Enqueues a float4 copy of `n` floats (`n` a multiple of 4, buffers at least that long).
pub fn enqueue_copy4(
    ctx: &ClContext,
    src: &Buffer<f32>,
    dst: &Buffer<f32>,
    n: usize,
) -> Result<Timed, ClError> {
    copy_kernel(ctx, "copy_float4", "", src, dst, n / 4, "copy float4")
}

fn copy_kernel(
    ctx: &ClContext,
    kernel: &str,
    defines: &str,
    src: &Buffer<f32>,
    dst: &Buffer<f32>,
    items: usize,
    name: &str,
) -> Result<Timed, ClError> {
    let k = ctx.kernel(COPY, kernel, defines)?;
    ctx.run(
        &k,
        &[Arg::Buf(src), Arg::Buf(dst), Arg::U32(items as u32)],
        &[items.max(1)],
        None,
        name,
    )
}

/// Device buffers holding `data` (padded to a multiple of 4 floats) and a scratch twin.
pub fn upload_pair(
    ctx: &ClContext,
    data: &[f32],
) -> Result<(Buffer<f32>, Buffer<f32>, usize), ClError> {
    let n = data.len().div_ceil(4) * 4;
    let mut padded = data.to_vec();
    padded.resize(n, 0.0);
    let mut src = ctx.buffer(n, false)?;
    let dst = ctx.buffer(n, false)?;
    ctx.write(&mut src, &padded, "upload")?;
    ctx.finish()?;
    Ok((src, dst, n))
}

pub fn download(ctx: &ClContext, buf: &Buffer<f32>, n: usize) -> Result<Vec<f32>, ClError> {
    let mut v = vec![0f32; n];
    ctx.read(buf, &mut v, "download")?;
    Ok(v)
}

/// Checks a device result against the host's, naming the first mismatch.
pub fn verify(got: &[f32], want: &[f32], tol: f32) -> Result<(), String> {
    match got
        .iter()
        .zip(want)
        // NaN never compares within tolerance, so it is reported too.
        .position(|(a, b)| {
            (a - b).abs().partial_cmp(&tol) != Some(std::cmp::Ordering::Less)
                && (a - b).abs() != tol
        }) {
        None => Ok(()),
        Some(i) => Err(format!("element {i}: got {}, want {}", got[i], want[i])),
    }
}

pub fn run(ctx: &ClContext, opts: &BenchOptions) -> anyhow::Result<Vec<Record>> {
    let sizes = opts
        .sizes
        .clone()
        .unwrap_or_else(|| vec![(1024, 1024), (4096, 4096)]);
    let bar = crate::report::progress_bar(sizes.len() * (2 + MAD_SERIES.len()), opts.quiet, SWEEP);
    let mut records = Vec::new();
    for &(w, h) in &sizes {
        let host = crate::bench::noise(w * h);
        let (src, dst, n) = upload_pair(ctx, &host)?;
        let mut padded = host.clone();
        padded.resize(n, 0.0);
        let mut kernels: Vec<(String, &str, String, usize, usize)> = vec![
            ("copy float".into(), "copy_float", String::new(), n, 0),
            ("copy float4".into(), "copy_float4", String::new(), n / 4, 0),
        ];
        for m in MAD_SERIES {
            kernels.push((
                format!("copy + {m} mad"),
                "copy_mad",
                format!("-DMAD_COUNT={m}"),
                n / 4,
                m,
            ));
        }
        let mut copy_gbps = None;
        for (name, kernel, defines, items, mads) in kernels {
            bar.set_message(format!("{w}x{h} {name}"));
            let mut r = Record::new("peak", &name, (w, h), ctx);
            r.build_options = format!("{} {defines}", r.build_options).trim().into();
            // v -> 0.5 v + 0.25 reaches its fixed point 0.5 exactly within ~30 steps in f32,
            // so the host stops there instead of running billions of dependent steps.
            let want: Vec<f32> = padded
                .par_iter()
                .map(|&v| (0..mads.min(64)).fold(v, |v, _| v.mul_add(0.5, 0.25)))
                .collect();
            copy_kernel(ctx, kernel, &defines, &src, &dst, items, &name)?;
            ctx.finish()?;
            match verify(&download(ctx, &dst, n)?, &want, 1e-6) {
                Err(why) => r.failed(why),
                Ok(()) => {
                    let stats = measure(ctx, opts.runs, || {
                        Ok(vec![copy_kernel(
                            ctx, kernel, &defines, &src, &dst, items, &name,
                        )?])
                    })?;
                    r.timed(&stats, n as f64 * 8.0);
                    let secs = stats.median_ms * 1e-3;
                    let flops = 2.0 * mads as f64 * n as f64;
                    r.gflops = Some(flops / secs * 1e-9);
                    r.flops_per_byte = Some(flops / (n as f64 * 8.0));
                    if name == "copy float4" {
                        copy_gbps = r.gbps;
                    }
                }
            }
            records.push(r);
            bar.inc(1);
        }
        for r in records.iter_mut().filter(|r| r.size == format!("{w}x{h}")) {
            r.pct_of_copy = r.gbps.zip(copy_gbps).map(|(a, b)| 100.0 * a / b);
        }
    }
    bar.finish_and_clear();
    let columns = [
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
    super::output::emit(
        &records,
        &columns,
        "gblur bench peak (GB/s counts bytes read + written)",
        opts,
    )?;
    Ok(records)
}

/// A planar noise image's worth of values, deterministic.
pub fn noise_planar(w: usize, h: usize, c: usize, seed: u64) -> Planar {
    let mut p = Planar::new(w, h, c);
    p.data = super::noise_seeded(w * h * c, seed);
    p
}

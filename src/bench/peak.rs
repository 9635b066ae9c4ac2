//! `gblur bench peak`: the device's copy bandwidth (one float and one float4 per work-item)
//! and the copy with chains of dependent multiply-adds, which shows where the device turns
//! from memory-bound to compute-bound (the seed chapter's copy and MAD kernels).

use super::device::{copy_kernel, download, upload_pair, verify};
use super::output::{opt, Column};
use super::runner::measure;
use super::{BenchOptions, Record};
use crate::gpu::opencl::ClContext;
use crate::report::SWEEP;
use rayon::prelude::*;

/// Dependent multiply-adds per float in the MAD series (2 flops each).
pub const MAD_SERIES: [usize; 6] = [3, 6, 24, 96, 384, 1536];

pub fn run(ctx: &ClContext, opts: &BenchOptions) -> anyhow::Result<Vec<Record>> {
    let sizes = opts
        .sizes
        .clone()
        .unwrap_or_else(|| vec![(1024, 1024), (4096, 4096)]);
    let bar = crate::report::progress_bar(sizes.len() * (2 + MAD_SERIES.len()), opts.quiet, SWEEP);
    let mut records = Vec::new();
    for &(w, h) in &sizes {
        let host = super::device::noise(w * h);
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
                Err(why) => r.fail(why),
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

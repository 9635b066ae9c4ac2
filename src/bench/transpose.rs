//! `gblur bench transpose`: every transpose strategy against the float4 copy kernel moving
//! the same bytes, over a sweep of sizes (squares, non-square, sizes that are not tile
//! multiples).

use super::output::Column;
use super::peak::{download, enqueue_copy4, upload_pair, verify};
use super::runner::measure;
use super::{BenchOptions, Record};
use crate::gpu::opencl::ClContext;
use crate::gpu::transpose::{enqueue_transpose, TransposeKind};
use crate::report::SWEEP;

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
    let sizes = opts.sizes.clone().unwrap_or_else(|| DEFAULT_SIZES.to_vec());
    let bar = crate::report::progress_bar(
        sizes.len() * (1 + TransposeKind::ALL.len()),
        opts.quiet,
        SWEEP,
    );
    let mut records = Vec::new();
    for &(w, h) in &sizes {
        let host = super::noise(w * h);
        let (src, dst, n) = upload_pair(ctx, &host)?;
        let bytes = (w * h) as f64 * 8.0;

        bar.set_message(format!("{w}x{h} copy"));
        let mut copy = Record::new("transpose", "copy float4", (w, h), ctx);
        enqueue_copy4(ctx, &src, &dst, n)?;
        ctx.finish()?;
        match verify(&download(ctx, &dst, n)?[..w * h], &host, 0.0) {
            Err(why) => copy.failed(why),
            Ok(()) => {
                let stats = measure(ctx, opts.runs, || {
                    Ok(vec![enqueue_copy4(ctx, &src, &dst, n)?])
                })?;
                copy.timed(&stats, bytes);
            }
        }
        let copy_gbps = copy.gbps;
        copy.pct_of_copy = copy_gbps.map(|_| 100.0);
        records.push(copy);
        bar.inc(1);

        let mut want = vec![0f32; w * h];
        crate::cpu::reference::transpose_planes(&host, &mut want, w, h);
        for kind in TransposeKind::ALL {
            bar.set_message(format!("{w}x{h} {kind}"));
            let mut r = Record::new("transpose", kind.name(), (w, h), ctx);
            let once = enqueue_transpose(ctx, kind, &src, &dst, (w, h, 1), kind.name())?;
            drop(once);
            ctx.finish()?;
            match verify(&download(ctx, &dst, n)?[..w * h], &want, 0.0) {
                Err(why) => r.failed(why),
                Ok(()) => {
                    let stats = measure(ctx, opts.runs, || {
                        Ok(vec![
                            enqueue_transpose(ctx, kind, &src, &dst, (w, h, 1), kind.name())?.timed,
                        ])
                    })?;
                    r.timed(&stats, bytes);
                    r.pct_of_copy = r.gbps.zip(copy_gbps).map(|(a, b)| 100.0 * a / b);
                }
            }
            records.push(r);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    let columns = [
        Column::SIZE,
        Column::name("strategy"),
        Column::MEDIAN_MS,
        Column::SPREAD,
        Column::GBPS,
        Column::MPPS,
        Column::PCT_OF_COPY,
        Column::STATUS,
    ];
    super::output::emit(
        &records,
        &columns,
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

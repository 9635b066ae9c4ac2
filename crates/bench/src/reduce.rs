//! `gblur bench reduce`: the dot product of two float vectors up the ladder of the dot-product
//! tutorial that `kernels/reduce.cl` follows: the device multiplies and the host sums;
//! work-groups sum in local memory and the host adds their sums; the whole sum on the device in
//! two stages. Each is checked against an f64 sum, then timed beside the float4 copy kernel
//! moving the same bytes.

use super::device::{download, enqueue_copy4, upload_pair, verify};
use super::output::{Column, PlotAxes};
use super::runner::{measure, measure_with_host};
use super::{BenchOptions, Record};
use crate::kernels::REDUCE;
use gblur::gpu::opencl::queue::Arg;
use gblur::gpu::opencl::{ClContext, ClError, Timed};
use gblur::progress::SWEEP;
use opencl3::memory::Buffer;
use std::cell::RefCell;

/// Work-items per group in every reduce kernel (a power of two).
pub const LOCAL: usize = 256;
/// float4 pairs each work-item of stage 1 loads before using them.
const UNROLL: usize = 4;

#[derive(Clone, Debug)]
pub struct ReduceOptions {
    /// Vector lengths; `None` means the device class's default.
    pub sizes: Option<Vec<usize>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rung {
    /// The yardstick: the float4 copy of one vector, the same 8 bytes per element.
    Copy,
    HostSum,
    GroupSums,
    OnDevice,
}

impl Rung {
    pub const ALL: [Rung; 4] = [Rung::Copy, Rung::HostSum, Rung::GroupSums, Rung::OnDevice];

    pub fn name(self) -> &'static str {
        match self {
            Rung::Copy => "copy float4 (same bytes)",
            Rung::HostSum => "1 device multiplies, host sums",
            Rung::GroupSums => "2 work-group sums in local memory, host adds",
            Rung::OnDevice => "3 on device: float4 x many per item, 2 stages",
        }
    }
}

/// Stage 1's work-groups: enough to fill the device (8 groups of 256 per compute unit is
/// 2048 work-items, the most an NVIDIA multiprocessor keeps), and no more than there are
/// float4s to go round.
pub fn stage1_groups(ctx: &ClContext, n: usize) -> usize {
    let fill = ctx.info.compute_units.max(1) as usize * 8;
    fill.min((n / 4).div_ceil(LOCAL)).max(1)
}

/// The longest chain of rounded f32 operations behind one result, for the tolerance
/// (L + 2)·2⁻²⁴·Σ|xᵢyᵢ| (Higham's bound for recursive summation, plus the products' own
/// rounding; the host's f64 sums add nothing visible).
pub fn chain_length(rung: Rung, n: usize, groups: usize) -> usize {
    let tree = LOCAL.trailing_zeros() as usize;
    match rung {
        Rung::Copy => 0,
        Rung::HostSum => 1,
        Rung::GroupSums => 1 + tree,
        // per lane: one multiply-add per visit; 2 adds across lanes; up to 3 tail elements;
        // the group's tree; stage 2's strided sum and tree.
        Rung::OnDevice => {
            (n / 4).div_ceil(groups * LOCAL) + 2 + 3 + tree + groups.div_ceil(LOCAL) + tree
        }
    }
}

pub fn run(
    ctx: &ClContext,
    opts: &BenchOptions,
    ro: &ReduceOptions,
) -> anyhow::Result<Vec<Record>> {
    let records = sweep(ctx, opts, ro)?;
    super::output::emit_with(
        &records,
        &COLUMNS,
        "gblur bench reduce (x·y in f32; GB/s = 8 bytes per element / median time)",
        opts,
        &AXES,
    )?;
    Ok(records)
}

const COLUMNS: [Column; 7] = [
    Column::SIZE,
    Column::name("kernel"),
    Column::MEDIAN_MS,
    Column::SPREAD,
    Column::GBPS,
    Column::PCT_OF_COPY,
    Column::STATUS,
];

fn sweep(ctx: &ClContext, opts: &BenchOptions, ro: &ReduceOptions) -> anyhow::Result<Vec<Record>> {
    let sizes = ro.sizes.clone().unwrap_or_else(|| {
        if ctx.info.is_gpu() {
            vec![1 << 20, 1 << 24, 1 << 26]
        } else {
            vec![1 << 16, 1 << 20, 1 << 22]
        }
    });
    let bar = gblur::progress::progress_bar(sizes.len() * Rung::ALL.len(), opts.quiet, SWEEP);
    let mut records = Vec::new();
    for &n in &sizes {
        let x = signed_noise(n, 11 + n as u64);
        let y = signed_noise(n, 29 + n as u64);
        let want = reference(&x, &y);
        let dev = Vectors::upload(ctx, &x, &y)?;
        let mut copy_gbps = None;
        for rung in Rung::ALL {
            bar.set_message(format!("{} {}", label(n), rung.name()));
            let mut r = Record::new("reduce", rung.name(), (n, 1), ctx);
            r.size = label(n);
            r.build_options = format!("{} {}", r.build_options, defines(ctx))
                .trim()
                .into();
            match check(ctx, &dev, rung, want)? {
                Err(why) => r.fail(why),
                Ok(()) => {
                    let stats = dev.measure(ctx, rung, opts.runs)?;
                    r.timed(&stats, n as f64 * 8.0);
                    if rung == Rung::Copy {
                        copy_gbps = r.gbps;
                    }
                    r.pct_of_copy = r.gbps.zip(copy_gbps).map(|(g, c)| 100.0 * g / c);
                }
            }
            records.push(r);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(records)
}

/// Runs `rung` once and checks it: the copy exactly, the dot products against `(Σ xᵢyᵢ,
/// Σ|xᵢyᵢ|)` within the rounding of the rung's longest chain of operations.
fn check(
    ctx: &ClContext,
    dev: &Vectors,
    rung: Rung,
    (want, abs): (f64, f64),
) -> Result<Result<(), String>, ClError> {
    if rung == Rung::Copy {
        enqueue_copy4(ctx, &dev.x, &dev.scratch, dev.n4)?;
        ctx.finish()?;
        return Ok(verify(
            &download(ctx, &dev.scratch, dev.n4)?,
            &dev.x_host,
            0.0,
        ));
    }
    let got = dev.once(ctx, rung)?;
    let l = chain_length(rung, dev.n, stage1_groups(ctx, dev.n)) + 2;
    let tol = l as f64 * f32::EPSILON as f64 / 2.0 * abs;
    Ok(if (got - want).abs() <= tol {
        Ok(())
    } else {
        Err(format!(
            "got {got}, want {want} (tolerance {tol:.3e} = {l}·2^-24·Σ|x·y|)"
        ))
    })
}

/// GB/s against the vector length.
const AXES: PlotAxes = PlotAxes {
    x_desc: "elements (millions)",
    y_desc: "GB/s (median)",
    x: |r| r.pixels() * 1e-6,
    y: |r| r.gbps,
    x_decimals: 2,
};

/// The build options: on CPU devices stage 1 walks a contiguous chunk per work-item.
fn defines(ctx: &ClContext) -> String {
    let chunked = if ctx.info.is_gpu() { "" } else { " -DCHUNKED" };
    format!("-DLOCAL={LOCAL} -DUNROLL={UNROLL}{chunked}")
}

/// `2^26` for powers of two, the number otherwise.
fn label(n: usize) -> String {
    if n.is_power_of_two() && n >= 1024 {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

/// Values in [-1, 1), so the sum cancels as real data does.
pub fn signed_noise(n: usize, seed: u64) -> Vec<f32> {
    super::device::noise_seeded(n, seed)
        .into_iter()
        .map(|v| 2.0 * v - 1.0)
        .collect()
}

/// Σ xᵢyᵢ and Σ|xᵢyᵢ| in f64: each product is exact in f64 and 2^26 additions lose under
/// 1e-8 of Σ|xᵢyᵢ|, far below any f32 result's error.
pub fn reference(x: &[f32], y: &[f32]) -> (f64, f64) {
    x.iter().zip(y).fold((0.0, 0.0), |(s, a), (&x, &y)| {
        let p = x as f64 * y as f64;
        (s + p, a + p.abs())
    })
}

/// x and y on the device (zero-padded to whole float4s), with scratch for each rung.
pub struct Vectors {
    pub n: usize,
    n4: usize,
    x_host: Vec<f32>,
    pub x: Buffer<f32>,
    pub y: Buffer<f32>,
    /// Products (rung 1), the copy's output.
    scratch: Buffer<f32>,
    /// Group sums (rungs 2-3).
    sums: Buffer<f32>,
    out: Buffer<f32>,
    /// What the host sums in rungs 1-2, read back inside the timed run.
    host: RefCell<Vec<f32>>,
}

impl Vectors {
    pub fn upload(ctx: &ClContext, x: &[f32], y: &[f32]) -> Result<Self, ClError> {
        let n = x.len();
        let (xb, scratch, n4) = upload_pair(ctx, x)?;
        let (yb, _, _) = upload_pair(ctx, y)?;
        let mut x_host = x.to_vec();
        x_host.resize(n4, 0.0);
        Ok(Vectors {
            n,
            n4,
            x_host,
            x: xb,
            y: yb,
            scratch,
            sums: ctx.buffer(n.div_ceil(LOCAL).max(1), false)?,
            out: ctx.buffer(1, false)?,
            host: RefCell::new(Vec::new()),
        })
    }

    fn kernel(ctx: &ClContext, name: &str) -> Result<opencl3::kernel::Kernel, ClError> {
        ctx.kernel(REDUCE, name, &defines(ctx))
    }

    /// The device part of one run; rungs 1-2 end with the download the host then sums.
    pub fn enqueue(&self, ctx: &ClContext, rung: Rung) -> Result<Vec<Timed>, ClError> {
        let n = self.n;
        let u = |v: usize| Arg::U32(v as u32);
        Ok(match rung {
            Rung::Copy => vec![enqueue_copy4(ctx, &self.x, &self.scratch, self.n4)?],
            Rung::HostSum => {
                let k = Self::kernel(ctx, "dot_products")?;
                let args = [
                    Arg::Buf(&self.x),
                    Arg::Buf(&self.y),
                    Arg::Buf(&self.scratch),
                    u(n),
                ];
                let mult = ctx.run(&k, &args, &[n], None, rung.name())?;
                let mut host = self.host.borrow_mut();
                host.resize(n, 0.0);
                let read = ctx.read(&self.scratch, &mut host, "products")?;
                vec![mult, read]
            }
            Rung::GroupSums => {
                let k = Self::kernel(ctx, "dot_groups")?;
                let groups = n.div_ceil(LOCAL);
                let args = [
                    Arg::Buf(&self.x),
                    Arg::Buf(&self.y),
                    Arg::Buf(&self.sums),
                    u(n),
                ];
                let g = ctx.run(&k, &args, &[groups * LOCAL], Some(&[LOCAL]), rung.name())?;
                let mut host = self.host.borrow_mut();
                host.resize(groups, 0.0);
                let read = ctx.read(&self.sums, &mut host, "group sums")?;
                vec![g, read]
            }
            Rung::OnDevice => {
                let groups = stage1_groups(ctx, n);
                let k1 = Self::kernel(ctx, "dot_stage1")?;
                let k2 = Self::kernel(ctx, "dot_stage2")?;
                let args = [
                    Arg::Buf(&self.x),
                    Arg::Buf(&self.y),
                    Arg::Buf(&self.sums),
                    u(n),
                ];
                let s1 = ctx.run(&k1, &args, &[groups * LOCAL], Some(&[LOCAL]), "stage 1")?;
                let args = [Arg::Buf(&self.sums), Arg::Buf(&self.out), u(groups)];
                let s2 = ctx.run(&k2, &args, &[LOCAL], Some(&[LOCAL]), "stage 2")?;
                vec![s1, s2]
            }
        })
    }

    /// The host's part of rungs 1-2: an f64 sum of what was read back.
    fn host_sum(&self) -> f64 {
        self.host.borrow().iter().map(|&v| v as f64).sum()
    }

    /// One whole run, returning the dot product.
    pub fn once(&self, ctx: &ClContext, rung: Rung) -> Result<f64, ClError> {
        self.enqueue(ctx, rung)?;
        ctx.finish()?;
        Ok(match rung {
            Rung::HostSum | Rung::GroupSums => self.host_sum(),
            _ => {
                let mut out = [0f32];
                ctx.read(&self.out, &mut out, "result")?;
                out[0] as f64
            }
        })
    }

    /// Times `rung`: device span plus, for rungs 1-2, the host's sum. The on-device rung's
    /// 4-byte result stays on the device, like the copy's output.
    pub fn measure(
        &self,
        ctx: &ClContext,
        rung: Rung,
        runs: usize,
    ) -> Result<super::runner::Stats, ClError> {
        match rung {
            Rung::HostSum | Rung::GroupSums => measure_with_host(
                ctx,
                runs,
                || self.enqueue(ctx, rung),
                || {
                    std::hint::black_box(self.host_sum());
                },
            ),
            _ => measure(ctx, runs, || self.enqueue(ctx, rung)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(label(1 << 26), "2^26");
        assert_eq!(label(1000), "1000");
        assert_eq!(label(1), "1");
    }

    #[test]
    fn reference_is_exact_on_small_integers() {
        let x = [1.0, -2.0, 3.0];
        let y = [4.0, 5.0, -6.0];
        assert_eq!(reference(&x, &y), (4.0 - 10.0 - 18.0, 32.0));
    }
}

//! `gblur bench matmul`: C = A·B up an optimisation ladder, ten rungs from one work-item per
//! element to 2D register blocking (`kernels/matmul.cl`: the steps of the MQL5 article
//! "OpenCL: from naive towards more insightful programming", continued with Cedric Nugteren's
//! SGEMM tutorial), beside a naive and a multi-threaded CPU baseline. Every rung's result is
//! checked against a host reference before it is timed; rungs too slow for the device class
//! are skipped with a note, and CPU baselines too slow to run whole are timed on their first
//! rows and scaled, and say so.

mod check;
mod cpu;
mod launch;
mod rungs;

pub use check::{Operands, Reference};
pub use launch::DeviceOperands;
#[cfg(test)]
pub use launch::Prepared;
#[cfg(test)]
pub use rungs::PRESETS;
pub use rungs::{ladder, Preset, Rung};

use super::output::{opt, Column, PlotAxes};
use super::runner::Stats;
use super::{BenchOptions, Record};
use gblur::gpu::opencl::ClContext;
use gblur::progress::SWEEP;
use indicatif::ProgressBar;

/// A product's dimensions: A is m×k, B is k×n, C is m×n.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

impl Shape {
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    pub fn label(&self) -> String {
        if self.m == self.n && self.n == self.k {
            format!("{}³", self.m)
        } else {
            format!("{}x{}x{}", self.m, self.n, self.k)
        }
    }

    /// The shape rounded up to multiples of `(pm, pn, pk)`.
    fn padded(&self, (pm, pn, pk): (usize, usize, usize)) -> Shape {
        Shape {
            m: self.m.next_multiple_of(pm),
            n: self.n.next_multiple_of(pn),
            k: self.k.next_multiple_of(pk),
        }
    }
}

/// Parses `1024` (a cube), `17x33x9` (MxNxK) or a comma-separated list of them.
pub fn parse_shapes(s: &str) -> Result<Vec<Shape>, String> {
    s.split(',')
        .map(|one| {
            let one = one.trim();
            let dims: Vec<Option<usize>> = one
                .split(['x', 'X'])
                .map(|v| v.trim().parse::<usize>().ok().filter(|v| *v > 0))
                .collect();
            match dims[..] {
                [Some(n)] => Ok(Shape { m: n, n, k: n }),
                [Some(m), Some(n), Some(k)] => Ok(Shape { m, n, k }),
                _ => Err(format!(
                    "'{one}' is not a shape: use N or MxNxK with positive integers"
                )),
            }
        })
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    F32,
    I32,
}

impl Elem {
    fn defines(self) -> &'static str {
        match self {
            Elem::F32 => "",
            Elem::I32 => "-DREAL=int -DINTEGER",
        }
    }
}

#[derive(Clone, Debug)]
pub struct MatmulOptions {
    pub shapes: Option<Vec<Shape>>,
    pub elem: Elem,
    /// Rung numbers to run; empty means all.
    pub rungs: Vec<u8>,
    /// Preset names for rung 10 (`all` for every one); empty means the device class's.
    pub presets: Vec<String>,
    pub cpu_baselines: bool,
}

/// Work budgets, in flops per run, above which a device rung is skipped. A GPU runs rungs
/// 1-6 at 4096³ in well under a second each; PoCL on two cores needs seconds for 256³.
struct Budget {
    untiled: f64,
    tiled: f64,
}

impl Budget {
    fn for_device(gpu: bool) -> Self {
        if gpu {
            Budget {
                untiled: 1.5e11,
                tiled: 2e13,
            }
        } else {
            Budget {
                untiled: 1e8,
                tiled: 2e10,
            }
        }
    }

    /// Why `rung` is not run at `s`, if its work is over the budget.
    fn over(&self, rung: Rung, s: Shape) -> Option<String> {
        let limit = if rung.untiled() {
            self.untiled
        } else {
            self.tiled
        };
        (s.flops() > limit).then(|| {
            format!(
                "{:.1e} flop per run is over this device class's budget for rung {} ({limit:.0e})",
                s.flops(),
                rung.number()
            )
        })
    }
}

pub fn run(ctx: &ClContext, opts: &BenchOptions, m: &MatmulOptions) -> anyhow::Result<Vec<Record>> {
    let records = sweep(ctx, opts, m)?;
    let (elem, ops) = match m.elem {
        Elem::F32 => ("f32", "GFLOP/s"),
        Elem::I32 => ("i32", "GOP/s"),
    };
    let title = format!("gblur bench matmul ({elem}, {ops} = 2·M·N·K / median time)");
    super::output::emit_with(&records, &columns(m.elem), &title, opts, &AXES)?;
    Ok(records)
}

/// The table's columns: GFLOP/s is GOP/s for integers.
fn columns(elem: Elem) -> [Column; 8] {
    [
        Column::SIZE,
        Column::name("kernel"),
        Column::MEDIAN_MS,
        Column::SPREAD,
        Column {
            header: if elem == Elem::I32 {
                "GOP/s"
            } else {
                "GFLOP/s"
            },
            value: |r| opt(r.gflops, 1),
        },
        Column {
            header: "× CPU",
            value: |r| opt(r.speedup_over_cpu, 1),
        },
        Column {
            header: "% of best",
            value: |r| opt(r.pct_of_best, 1),
        },
        Column::STATUS,
    ]
}

/// GFLOP/s against the cube root of M·N·K.
const AXES: PlotAxes = PlotAxes {
    x_desc: "matrix size (cube root of M·N·K)",
    y_desc: "GFLOP/s (median)",
    x: |r| ((r.width * r.height * r.depth.unwrap_or(1)) as f64).cbrt(),
    y: |r| r.gflops,
    x_decimals: 0,
};

/// Every shape: the CPU baselines, then the chosen rungs.
fn sweep(ctx: &ClContext, opts: &BenchOptions, m: &MatmulOptions) -> anyhow::Result<Vec<Record>> {
    let gpu = ctx.info.is_gpu();
    let shapes = m.shapes.clone().unwrap_or_else(|| default_shapes(gpu));
    for s in &shapes {
        anyhow::ensure!(
            [s.m * s.k, s.k * s.n, s.m * s.n]
                .iter()
                .all(|&e| (e as u64) < 1 << 31),
            "{}: a matrix of 2^31 elements or more is beyond the kernels' 32-bit indices",
            s.label()
        );
    }
    let presets = rungs::choose_presets(&m.presets, gpu).map_err(anyhow::Error::msg)?;
    let rungs: Vec<Rung> = ladder(&presets)
        .into_iter()
        .filter(|r| m.rungs.is_empty() || m.rungs.contains(&r.number()))
        .collect();
    let cpu_rows = if m.cpu_baselines { 2 } else { 0 };
    let sweep = Sweep {
        ctx,
        runs: opts.runs,
        options: m,
        bar: gblur::progress::progress_bar(
            shapes.len() * (rungs.len() + cpu_rows),
            opts.quiet,
            SWEEP,
        ),
        rungs,
        budget: Budget::for_device(gpu),
    };
    let mut records = Vec::new();
    for &s in &shapes {
        records.extend(sweep.shape(s)?);
    }
    sweep.bar.finish_and_clear();
    Ok(records)
}

/// The default shapes: cubes that take a GPU milliseconds to seconds, and other devices
/// about as long.
fn default_shapes(gpu: bool) -> Vec<Shape> {
    let sizes: &[usize] = if gpu {
        &[1024, 2048, 4096, 2000]
    } else {
        &[128, 256, 512]
    };
    sizes.iter().map(|&n| Shape { m: n, n, k: n }).collect()
}

/// What stays the same from shape to shape.
struct Sweep<'a> {
    ctx: &'a ClContext,
    runs: usize,
    options: &'a MatmulOptions,
    rungs: Vec<Rung>,
    budget: Budget,
    bar: ProgressBar,
}

impl Sweep<'_> {
    /// One shape's rows, with the speed-up and % of best filled in.
    fn shape(&self, s: Shape) -> anyhow::Result<Vec<Record>> {
        let (ctx, elem) = (self.ctx, self.options.elem);
        let data = Operands::host(s, elem);
        // Built on first use: a sweep whose rows are all skipped never pays for it.
        let mut reference: Option<Reference> = None;
        let mut rows: Vec<Record> = Vec::new();
        if self.options.cpu_baselines {
            for naive in [true, false] {
                let name = if naive { cpu::NAIVE } else { cpu::BLOCKED };
                self.bar.set_message(format!("{} {name}", s.label()));
                let mut r = record(ctx, name, s, elem);
                r.build_options = String::new();
                let reference = reference.get_or_insert_with(|| Reference::new(&data));
                cpu::baseline(&mut r, &data, reference, naive, self.runs);
                rows.push(r);
                self.bar.inc(1);
            }
        }
        let mut dev = DeviceOperands::upload(ctx, &data)?;
        for &rung in &self.rungs {
            self.bar
                .set_message(format!("{} {}", s.label(), rung.name()));
            let mut r = record(ctx, &rung.name(), s, elem);
            r.build_options = format!("{} {}", r.build_options, rung.defines(s, elem))
                .trim()
                .to_string();
            if let Some(why) = rung
                .unsupported(s, ctx)
                .or_else(|| self.budget.over(rung, s))
            {
                r.skip(why);
            } else {
                let reference = reference.get_or_insert_with(|| Reference::new(&data));
                launch::measure_rung(ctx, self.runs, rung, &mut dev, elem, reference, &mut r)?;
            }
            rows.push(r);
            self.bar.inc(1);
        }
        finish_rows(&mut rows);
        Ok(rows)
    }
}

fn record(ctx: &ClContext, name: &str, s: Shape, elem: Elem) -> Record {
    let mut r = Record::new("matmul", name, (s.n, s.m), ctx);
    r.size = s.label();
    r.depth = Some(s.k);
    r.build_options = format!(
        "{} {}",
        gblur::gpu::opencl::program::BASE_OPTIONS,
        elem.defines()
    )
    .trim()
    .to_string();
    r
}

/// Fills the timing fields; GB/s and MP/s mean nothing for a product and stay empty.
fn timed(r: &mut Record, stats: &Stats, flops: f64) {
    r.timed(stats, 0.0);
    r.gbps = None;
    r.mpps = None;
    r.gflops = Some(flops / (stats.median_ms * 1e-3) * 1e-9);
}

/// Speed-up over the multi-threaded CPU baseline and % of the fastest device kernel.
fn finish_rows(rows: &mut [Record]) {
    let cpu = rows
        .iter()
        .find(|r| r.name == cpu::BLOCKED)
        .and_then(|r| r.median_ms);
    let best = rows
        .iter()
        .filter(|r| !r.name.starts_with("CPU"))
        .filter_map(|r| r.gflops)
        .fold(0.0, f64::max);
    for r in rows {
        r.speedup_over_cpu = cpu.zip(r.median_ms).map(|(c, t)| c / t);
        if best > 0.0 {
            r.pct_of_best = r.gflops.map(|g| 100.0 * g / best);
        }
    }
}

//! `gblur bench matmul`: C = A·B through the seed articles' optimisation ladder, ten rungs from
//! one work-item per element to 2D register blocking (`kernels/matmul.cl`), beside a naive and
//! a multi-threaded CPU baseline. Every rung's result is checked against a host reference
//! before it is timed; rungs too slow for the device class are skipped with a note, and CPU
//! baselines too slow to run whole are timed on their first rows and scaled, and say so.

use super::output::{opt, Column, PlotAxes};
use super::peak::download;
use super::runner::{measure, measure_host, Stats};
use super::{BenchOptions, Record};
use crate::gpu::opencl::program::MATMUL;
use crate::gpu::opencl::queue::Arg;
use crate::gpu::opencl::{ClContext, ClError, Timed};
use crate::gpu::transpose::{enqueue_transpose, TransposeKind};
use crate::report::SWEEP;
use opencl3::kernel::Kernel;
use opencl3::memory::Buffer;
use rayon::prelude::*;

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

/// Tile parameters of rung 10, passed as -D defines. Named `TSMxTSNxTSK-WPTMxWPTN`: the
/// work-group's tile of C, the depth of a local-memory tile, and each work-item's block of C.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    pub tsm: usize,
    pub tsn: usize,
    pub tsk: usize,
    pub wptm: usize,
    pub wptn: usize,
}

impl Preset {
    pub fn name(&self) -> String {
        format!(
            "{}x{}x{}-{}x{}",
            self.tsm, self.tsn, self.tsk, self.wptm, self.wptn
        )
    }

    /// A name in the `TSMxTSNxTSK-WPTMxWPTN` form, checked against what the kernel needs.
    pub fn parse(s: &str) -> Result<Preset, String> {
        let bad =
            || format!("'{s}' is not a preset: use TSMxTSNxTSK-WPTMxWPTN, e.g. 128x128x8-8x8");
        let (tile, wpt) = s.split_once('-').ok_or_else(bad)?;
        let num = |v: &str| v.parse::<usize>().ok().filter(|v| *v > 0);
        let t: Vec<Option<usize>> = tile.split('x').map(num).collect();
        let w: Vec<Option<usize>> = wpt.split('x').map(num).collect();
        let p = match (&t[..], &w[..]) {
            ([Some(tsm), Some(tsn), Some(tsk)], [Some(wptm), Some(wptn)]) => Preset {
                tsm: *tsm,
                tsn: *tsn,
                tsk: *tsk,
                wptm: *wptm,
                wptn: *wptn,
            },
            _ => return Err(bad()),
        };
        let items = (p.tsm / p.wptm.max(1)) * (p.tsn / p.wptn.max(1));
        let ok = p.wptm % 4 == 0
            && p.wptn % 4 == 0
            && p.tsk % 4 == 0
            && p.tsm % p.wptm == 0
            && p.tsn % p.wptn == 0
            && (1..=1024).contains(&items)
            && (p.tsm * p.tsk / 4) % items == 0
            && (p.tsk * p.tsn / 4) % items == 0;
        if ok {
            Ok(p)
        } else {
            Err(format!(
                "preset {s}: WPTM, WPTN and TSK must be multiples of 4 dividing the tile, \
                 with the tile's float4s a multiple of the (TSM/WPTM)·(TSN/WPTN) work-items"
            ))
        }
    }

    fn defines(&self) -> String {
        format!(
            "-DTSM={} -DTSN={} -DTSK={} -DWPTM={} -DWPTN={}",
            self.tsm, self.tsn, self.tsk, self.wptm, self.wptn
        )
    }
}

/// The bundled presets, fastest first on an H100 at 4096³ (docs/BENCHMARKS.md).
pub const PRESETS: [Preset; 9] = [
    Preset {
        tsm: 64,
        tsn: 128,
        tsk: 8,
        wptm: 8,
        wptn: 8,
    },
    Preset {
        tsm: 64,
        tsn: 128,
        tsk: 16,
        wptm: 8,
        wptn: 8,
    },
    Preset {
        tsm: 128,
        tsn: 64,
        tsk: 16,
        wptm: 8,
        wptn: 8,
    },
    Preset {
        tsm: 128,
        tsn: 64,
        tsk: 8,
        wptm: 8,
        wptn: 8,
    },
    Preset {
        tsm: 128,
        tsn: 128,
        tsk: 8,
        wptm: 16,
        wptn: 8,
    },
    Preset {
        tsm: 128,
        tsn: 128,
        tsk: 8,
        wptm: 8,
        wptn: 8,
    },
    Preset {
        tsm: 128,
        tsn: 128,
        tsk: 16,
        wptm: 8,
        wptn: 8,
    },
    Preset {
        tsm: 64,
        tsn: 64,
        tsk: 16,
        wptm: 4,
        wptn: 4,
    },
    Preset {
        tsm: 64,
        tsn: 64,
        tsk: 8,
        wptm: 8,
        wptn: 8,
    },
];

/// Rung 10's presets when none are asked for: every one on a GPU (they take milliseconds),
/// on other devices the one that was fastest on PoCL at 512³ (docs/BENCHMARKS.md).
fn default_presets(gpu: bool) -> Vec<Preset> {
    if gpu {
        PRESETS.to_vec()
    } else {
        vec![PRESETS[8]]
    }
}

/// One kernel of the ladder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rung {
    Naive,
    Coalesced,
    Private,
    Row,
    RowPrivate,
    RowLocal,
    Tiled,
    Wpt,
    Vector(usize),
    Blocked(Preset),
}

/// Work-items per group of the row-per-work-item rungs.
const ROW_GROUP: usize = 64;
/// Rung 5 keeps a row of A in private memory: beyond this K it is a stack the size of a page
/// of floats per work-item, which some runtimes refuse.
const ROW_PRIVATE_MAX_K: usize = 16384;

impl Rung {
    pub fn number(&self) -> u8 {
        match self {
            Rung::Naive => 1,
            Rung::Coalesced => 2,
            Rung::Private => 3,
            Rung::Row => 4,
            Rung::RowPrivate => 5,
            Rung::RowLocal => 6,
            Rung::Tiled => 7,
            Rung::Wpt => 8,
            Rung::Vector(_) => 9,
            Rung::Blocked(_) => 10,
        }
    }

    pub fn name(&self) -> String {
        let what = match self {
            Rung::Naive => "naive (row per dim 0)".to_string(),
            Rung::Coalesced => "coalesced (column per dim 0)".into(),
            Rung::Private => "private accumulator".into(),
            Rung::Row => "one row per work-item".into(),
            Rung::RowPrivate => "row of A in private memory".into(),
            Rung::RowLocal => "column of B in local memory".into(),
            Rung::Tiled => "16x16 local tiles".into(),
            Rung::Wpt => "32x32 tiles, 8 per work-item".into(),
            Rung::Vector(w) => format!("float{w} tiles"),
            Rung::Blocked(p) => format!("register blocking {}", p.name()),
        };
        format!("{:>2} {what}", self.number())
    }

    fn kernel(&self) -> &'static str {
        match self {
            Rung::Naive => "matmul_naive",
            Rung::Coalesced => "matmul_coalesced",
            Rung::Private => "matmul_private",
            Rung::Row => "matmul_row",
            Rung::RowPrivate => "matmul_row_private",
            Rung::RowLocal => "matmul_row_local",
            Rung::Tiled => "matmul_tiled",
            Rung::Wpt => "matmul_wpt",
            Rung::Vector(_) => "matmul_vector",
            Rung::Blocked(_) => "matmul_blocked",
        }
    }

    fn defines(&self, s: Shape, elem: Elem) -> String {
        let own = match self {
            Rung::RowPrivate | Rung::RowLocal => format!("-DKDIM={}", s.k),
            Rung::Tiled => "-DTS=16".into(),
            Rung::Wpt => "-DTSW=32 -DWPT=8".into(),
            Rung::Vector(w) => format!("-DTSV=32 -DVW={w}"),
            Rung::Blocked(p) => p.defines(),
            _ => String::new(),
        };
        format!("{} {own}", elem.defines()).trim().to_string()
    }

    /// The multiples M, N and K must be of; the host pads the operands on the device when
    /// they are not.
    fn padding(&self) -> Option<(usize, usize, usize)> {
        match self {
            Rung::Vector(_) => Some((32, 32, 32)),
            Rung::Blocked(p) => Some((p.tsm, p.tsn, p.tsk)),
            _ => None,
        }
    }

    /// Rungs 4-6 read B transposed, made on the device inside the timed run.
    fn reads_bt(&self) -> bool {
        matches!(self, Rung::Row | Rung::RowPrivate | Rung::RowLocal)
    }

    /// The rungs without local-memory tiles: the ones whose time explodes with size.
    fn untiled(&self) -> bool {
        self.number() <= 6
    }

    /// Global and local sizes over the (padded) shape.
    fn ndrange(&self, s: Shape) -> (Vec<usize>, Vec<usize>) {
        let up = |v: usize, m: usize| v.next_multiple_of(m);
        match self {
            Rung::Naive => (vec![up(s.m, 16), up(s.n, 16)], vec![16, 16]),
            Rung::Coalesced | Rung::Private | Rung::Tiled => {
                (vec![up(s.n, 16), up(s.m, 16)], vec![16, 16])
            }
            Rung::Row | Rung::RowPrivate | Rung::RowLocal => {
                (vec![up(s.m, ROW_GROUP)], vec![ROW_GROUP])
            }
            Rung::Wpt => (vec![up(s.n, 32), up(s.m, 32) / 8], vec![32, 4]),
            Rung::Vector(w) => (vec![s.n / w, s.m], vec![32 / w, 32]),
            Rung::Blocked(p) => (
                vec![s.n / p.wptn, s.m / p.wptm],
                vec![p.tsn / p.wptn, p.tsm / p.wptm],
            ),
        }
    }

    /// Why this rung cannot run this shape on this device, if it cannot.
    fn unsupported(&self, s: Shape, ctx: &ClContext) -> Option<String> {
        match self {
            Rung::RowPrivate if s.k > ROW_PRIVATE_MAX_K => Some(format!(
                "skipped: a private row of K = {} floats (limit {ROW_PRIVATE_MAX_K})",
                s.k
            )),
            Rung::RowLocal if (s.k * 4) as u64 + 1024 > ctx.info.local_mem_kib << 10 => {
                Some(format!(
                    "skipped: a column of K = {} floats exceeds {} KiB of local memory",
                    s.k, ctx.info.local_mem_kib
                ))
            }
            _ => None,
        }
    }
}

/// The ladder, in order, with rung 10 once per preset.
pub fn ladder(presets: &[Preset]) -> Vec<Rung> {
    let mut rungs = vec![
        Rung::Naive,
        Rung::Coalesced,
        Rung::Private,
        Rung::Row,
        Rung::RowPrivate,
        Rung::RowLocal,
        Rung::Tiled,
        Rung::Wpt,
        Rung::Vector(4),
        Rung::Vector(8),
    ];
    rungs.extend(presets.iter().map(|&p| Rung::Blocked(p)));
    rungs
}

pub struct MatmulOptions {
    pub shapes: Option<Vec<Shape>>,
    pub elem: Elem,
    /// Rung numbers to run; empty means all.
    pub rungs: Vec<u8>,
    /// Preset names for rung 10 (`all` for every one); empty means the device class's.
    pub presets: Vec<String>,
    pub cpu_baselines: bool,
}

/// Work budgets, in flops per run, above which a row is skipped (device rungs) or timed on
/// its first rows only (CPU baselines). A GPU runs rungs 1-6 at 4096³ in well under a second
/// each; PoCL on two cores needs seconds for 256³.
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
}

/// The naive CPU loop is timed whole up to this many flops, on its first rows beyond.
const CPU_NAIVE_MAX_FLOP: f64 = 3e8;
/// Likewise the multi-threaded CPU baseline.
const CPU_BLOCKED_MAX_FLOP: f64 = 2e11;
/// CPU baselines take seconds per run at the large sizes: at most this many timed runs.
const CPU_MAX_RUNS: usize = 3;

const CPU_NAIVE: &str = "CPU naive triple loop (1 thread)";
const CPU_BLOCKED: &str = "CPU blocked, rayon (all cores)";

pub fn run(ctx: &ClContext, opts: &BenchOptions, m: &MatmulOptions) -> anyhow::Result<Vec<Record>> {
    let gpu = ctx.info.is_gpu();
    let shapes = m.shapes.clone().unwrap_or_else(|| {
        let sizes: &[usize] = if gpu {
            &[1024, 2048, 4096, 2000]
        } else {
            &[128, 256, 512]
        };
        sizes.iter().map(|&n| Shape { m: n, n, k: n }).collect()
    });
    for s in &shapes {
        anyhow::ensure!(
            [s.m * s.k, s.k * s.n, s.m * s.n]
                .iter()
                .all(|&e| (e as u64) < 1 << 31),
            "{}: a matrix of 2^31 elements or more is beyond the kernels' 32-bit indices",
            s.label()
        );
    }
    let presets = if m.presets.is_empty() {
        default_presets(gpu)
    } else {
        let mut chosen = Vec::new();
        for name in &m.presets {
            let add = if name == "all" {
                PRESETS.to_vec()
            } else {
                vec![Preset::parse(name).map_err(anyhow::Error::msg)?]
            };
            for p in add {
                if !chosen.contains(&p) {
                    chosen.push(p);
                }
            }
        }
        chosen
    };
    let rungs: Vec<Rung> = ladder(&presets)
        .into_iter()
        .filter(|r| m.rungs.is_empty() || m.rungs.contains(&r.number()))
        .collect();
    let budget = Budget::for_device(gpu);
    let cpu_rows = if m.cpu_baselines { 2 } else { 0 };
    let bar =
        crate::report::progress_bar(shapes.len() * (rungs.len() + cpu_rows), opts.quiet, SWEEP);
    let mut records = Vec::new();
    for &s in &shapes {
        let data = Operands::host(s, m.elem);
        let mut reference: Option<Reference> = None;
        let mut rows: Vec<Record> = Vec::new();
        if m.cpu_baselines {
            for naive in [true, false] {
                let name = if naive { CPU_NAIVE } else { CPU_BLOCKED };
                bar.set_message(format!("{} {name}", s.label()));
                let mut r = record(ctx, name, s, m.elem);
                r.build_options = String::new();
                let reference = reference.get_or_insert_with(|| Reference::new(&data));
                cpu_baseline(&mut r, &data, reference, naive, opts.runs);
                rows.push(r);
                bar.inc(1);
            }
        }
        let mut dev = DeviceOperands::upload(ctx, &data)?;
        for rung in &rungs {
            bar.set_message(format!("{} {}", s.label(), rung.name()));
            let mut r = record(ctx, &rung.name(), s, m.elem);
            r.build_options = format!("{} {}", r.build_options, rung.defines(s, m.elem))
                .trim()
                .to_string();
            let limit = if rung.untiled() {
                budget.untiled
            } else {
                budget.tiled
            };
            if let Some(why) = rung.unsupported(s, ctx) {
                r.status = why;
            } else if s.flops() > limit {
                r.status = format!(
                    "skipped: {:.1e} flop per run is over this device class's budget for rung {} ({limit:.0e})",
                    s.flops(),
                    rung.number()
                );
            } else {
                let reference = reference.get_or_insert_with(|| Reference::new(&data));
                measure_rung(ctx, opts.runs, *rung, &mut dev, m.elem, reference, &mut r)?;
            }
            rows.push(r);
            bar.inc(1);
        }
        finish_rows(&mut rows);
        records.extend(rows);
    }
    bar.finish_and_clear();
    let ops = if m.elem == Elem::I32 {
        "GOP/s"
    } else {
        "GFLOP/s"
    };
    let columns = [
        Column {
            header: "size",
            value: |r| r.size.clone(),
        },
        Column::name("kernel"),
        Column::MEDIAN_MS,
        Column::SPREAD,
        Column {
            header: if m.elem == Elem::I32 {
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
    ];
    let title = format!(
        "gblur bench matmul ({}, {ops} = 2·M·N·K / median time)",
        if m.elem == Elem::I32 { "i32" } else { "f32" }
    );
    super::output::emit_with(&records, &columns, &title, opts, &AXES)?;
    Ok(records)
}

/// GFLOP/s against the cube root of M·N·K.
const AXES: PlotAxes = PlotAxes {
    x_desc: "matrix size (cube root of M·N·K)",
    y_desc: "GFLOP/s (median)",
    x: |r| ((r.width * r.height * r.depth.unwrap_or(1)) as f64).cbrt(),
    y: |r| r.gflops,
    x_decimals: 0,
};

fn record(ctx: &ClContext, name: &str, s: Shape, elem: Elem) -> Record {
    let mut r = Record::new("matmul", name, (s.n, s.m), ctx);
    r.size = s.label();
    r.depth = Some(s.k);
    r.build_options = format!(
        "{} {}",
        crate::gpu::opencl::program::BASE_OPTIONS,
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
        .find(|r| r.name == CPU_BLOCKED)
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

/// The operands on the host. Both element types travel in f32 buffers: the i32 variant keeps
/// its integers' bit patterns there, and the kernels read them as int.
pub struct Operands {
    pub shape: Shape,
    pub elem: Elem,
    pub a: Vec<f32>,
    pub b: Vec<f32>,
}

impl Operands {
    /// Random operands: floats in [-1, 1), or integers in [-8, 8) (whose products' sums stay
    /// far inside i32 for any K this bench can hold).
    pub fn host(s: Shape, elem: Elem) -> Self {
        let gen = |n: usize, seed: u64| -> Vec<f32> {
            let u = super::noise_seeded(n, seed);
            match elem {
                Elem::F32 => u.into_iter().map(|v| 2.0 * v - 1.0).collect(),
                Elem::I32 => u
                    .into_iter()
                    .map(|v| f32::from_bits(((v * 16.0) as i32 - 8) as u32))
                    .collect(),
            }
        };
        Operands {
            shape: s,
            elem,
            a: gen(s.m * s.k, (s.m * 131 + s.k) as u64),
            b: gen(s.k * s.n, (s.n * 137 + s.k * 3) as u64),
        }
    }
}

/// C = A·B from the host's operands: f64 for f32 data, with Σ|a·b| per element for the
/// tolerance; exact i64 for i32 data.
pub struct Reference {
    pub elem: Elem,
    pub n: usize,
    pub k: usize,
    pub value: Vec<f64>,
    pub abs: Vec<f64>,
}

impl Reference {
    pub fn new(d: &Operands) -> Self {
        let Shape { m, n, k } = d.shape;
        let conv = |v: &[f32]| -> Vec<f64> {
            v.iter()
                .map(|&x| match d.elem {
                    Elem::F32 => x as f64,
                    Elem::I32 => x.to_bits() as i32 as f64,
                })
                .collect()
        };
        let (a, b) = (conv(&d.a), conv(&d.b));
        let mut value = vec![0f64; m * n];
        let mut abs = vec![0f64; m * n];
        // Rows in parallel; within a row, k outer and j inner so B streams in order. Integers
        // below 2^53 are exact in f64, so the same loop serves i32.
        value
            .par_chunks_mut(n.max(1))
            .zip(abs.par_chunks_mut(n.max(1)))
            .enumerate()
            .for_each(|(i, (v, s))| {
                for kk in 0..k {
                    let x = a[i * k + kk];
                    let row = &b[kk * n..(kk + 1) * n];
                    for ((v, s), &y) in v.iter_mut().zip(s.iter_mut()).zip(row) {
                        let p = x * y;
                        *v += p;
                        *s += p.abs();
                    }
                }
            });
        Reference {
            elem: d.elem,
            n,
            k,
            value,
            abs,
        }
    }

    /// Checks rows `rows` of C (`got`, bit patterns for i32). f32 results must lie within
    /// 4·√K·2⁻²⁴·Σ|a·b| of the f64 value: rounding errors of K additions of mixed-sign terms
    /// grow like √K (the worst-case bound, K·2⁻²⁴, is loose enough to let a dropped term
    /// through at K = 4096). i32 results must be exact.
    pub fn check(&self, got: &[f32], rows: std::ops::Range<usize>) -> Result<(), String> {
        let n = self.n;
        debug_assert_eq!(got.len(), rows.len() * n);
        let scale = 4.0 * (self.k as f64).sqrt() * f32::EPSILON as f64 / 2.0;
        for (i, &g) in got.iter().enumerate() {
            let at = rows.start * n + i;
            let want = self.value[at];
            let ok = match self.elem {
                Elem::F32 => (g as f64 - want).abs() <= scale * self.abs[at],
                Elem::I32 => g.to_bits() as i32 as f64 == want,
            };
            if !ok {
                let shown = match self.elem {
                    Elem::F32 => g.to_string(),
                    Elem::I32 => (g.to_bits() as i32).to_string(),
                };
                return Err(format!(
                    "C[{}][{}]: got {shown}, want {want}",
                    at / n,
                    at % n
                ));
            }
        }
        Ok(())
    }
}

/// The CPU baselines. Each computes the rows `rows` of C into `c`.
trait Scalar:
    Copy + Send + Sync + Default + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self>
{
    fn from_bits(v: f32) -> Self;
    fn to_bits(self) -> f32;
}

impl Scalar for f32 {
    fn from_bits(v: f32) -> Self {
        v
    }
    fn to_bits(self) -> f32 {
        self
    }
}

impl Scalar for i32 {
    fn from_bits(v: f32) -> Self {
        v.to_bits() as i32
    }
    fn to_bits(self) -> f32 {
        f32::from_bits(self as u32)
    }
}

/// The textbook loop: i, j, k, with B read down a column.
fn cpu_naive<T: Scalar>(a: &[T], b: &[T], c: &mut [T], s: Shape, rows: std::ops::Range<usize>) {
    for (ci, i) in rows.enumerate() {
        for j in 0..s.n {
            let mut acc = T::default();
            for kk in 0..s.k {
                acc = acc + a[i * s.k + kk] * b[kk * s.n + j];
            }
            c[ci * s.n + j] = acc;
        }
    }
}

/// Cache-friendly and parallel: rows of C split over the cores; each row accumulates
/// a[i][k]·B[k][..] for k in blocks of KB, so the block of B (KB × N) is reused by the rows a
/// core works on while it is in cache, and the inner loop runs along contiguous memory.
fn cpu_blocked<T: Scalar>(a: &[T], b: &[T], c: &mut [T], s: Shape, rows: std::ops::Range<usize>) {
    const KB: usize = 128;
    let n = s.n.max(1);
    c.par_chunks_mut(n * 4).enumerate().for_each(|(blk, cblk)| {
        cblk.fill(T::default());
        let i0 = rows.start + blk * 4;
        for k0 in (0..s.k).step_by(KB) {
            let k1 = (k0 + KB).min(s.k);
            for (ri, crow) in cblk.chunks_mut(n).enumerate() {
                let i = i0 + ri;
                for kk in k0..k1 {
                    let x = a[i * s.k + kk];
                    let brow = &b[kk * s.n..(kk + 1) * s.n];
                    for (cv, &bv) in crow.iter_mut().zip(brow) {
                        *cv = *cv + x * bv;
                    }
                }
            }
        }
    });
}

fn cpu_baseline(r: &mut Record, d: &Operands, reference: &Reference, naive: bool, runs: usize) {
    let s = d.shape;
    let max = if naive {
        CPU_NAIVE_MAX_FLOP
    } else {
        CPU_BLOCKED_MAX_FLOP
    };
    // Both loops cost the same per row of C, so timing the first rows and scaling is fair.
    let rows = if s.flops() <= max {
        s.m
    } else {
        ((max / (2.0 * s.n as f64 * s.k as f64)) as usize).clamp(1, s.m)
    };
    let runs = runs.min(CPU_MAX_RUNS);
    let (stats, got) = match d.elem {
        Elem::F32 => time_cpu::<f32>(d, rows, naive, runs),
        Elem::I32 => time_cpu::<i32>(d, rows, naive, runs),
    };
    if let Err(why) = reference.check(&got, 0..rows) {
        r.failed(why);
        return;
    }
    let scale = s.m as f64 / rows as f64;
    let scaled = Stats {
        runs: stats.runs,
        median_ms: stats.median_ms * scale,
        min_ms: stats.min_ms * scale,
        max_ms: stats.max_ms * scale,
    };
    timed(r, &scaled, s.flops());
    if rows < s.m {
        r.status = format!("estimated: first {rows} of {} rows timed, ×{scale:.0}", s.m);
    }
}

fn time_cpu<T: Scalar>(d: &Operands, rows: usize, naive: bool, runs: usize) -> (Stats, Vec<f32>) {
    let s = d.shape;
    let a: Vec<T> = d.a.iter().map(|&v| T::from_bits(v)).collect();
    let b: Vec<T> = d.b.iter().map(|&v| T::from_bits(v)).collect();
    let mut c = vec![T::default(); rows * s.n];
    let stats = measure_host(
        runs,
        &mut c,
        |_| {},
        |c| {
            if naive {
                cpu_naive(&a, &b, c, s, 0..rows)
            } else {
                cpu_blocked(&a, &b, c, s, 0..rows)
            }
        },
    );
    (stats, c.into_iter().map(T::to_bits).collect())
}

/// A, B and C on the device.
pub struct DeviceOperands {
    pub shape: Shape,
    pub a: Buffer<f32>,
    pub b: Buffer<f32>,
    pub c: Buffer<f32>,
}

impl DeviceOperands {
    pub fn upload(ctx: &ClContext, d: &Operands) -> Result<Self, ClError> {
        let s = d.shape;
        let mut a = ctx.buffer(s.m * s.k, true)?;
        let mut b = ctx.buffer(s.k * s.n, true)?;
        let c = ctx.buffer(s.m * s.n, false)?;
        ctx.write(&mut a, &d.a, "upload A")?;
        ctx.write(&mut b, &d.b, "upload B")?;
        ctx.finish()?;
        Ok(DeviceOperands { shape: s, a, b, c })
    }
}

/// One rung, ready to enqueue: its kernels built, its scratch buffers allocated.
pub struct Prepared {
    rung: Rung,
    kernel: Kernel,
    /// B transposed (rungs 4-6).
    bt: Option<(Buffer<f32>, TransposeKind)>,
    /// Rungs 9-10 on shapes that are not tile multiples.
    padded: Option<Padded>,
}

/// Zero-padded copies of A and B, a padded C, the padded shape, and the kernels that fill
/// and empty them.
struct Padded {
    a: Buffer<f32>,
    b: Buffer<f32>,
    c: Buffer<f32>,
    shape: Shape,
    pad: Kernel,
    unpad: Kernel,
}

impl Prepared {
    pub fn new(
        ctx: &ClContext,
        rung: Rung,
        dev: &DeviceOperands,
        elem: Elem,
    ) -> Result<Self, ClError> {
        let s = dev.shape;
        let kernel = ctx.kernel(MATMUL, rung.kernel(), &rung.defines(s, elem))?;
        let bt = if rung.reads_bt() {
            Some((
                ctx.buffer(s.n * s.k, false)?,
                TransposeKind::fastest_for(&ctx.info),
            ))
        } else {
            None
        };
        let padded = match rung.padding() {
            Some(multiples) if s.padded(multiples) != s => {
                let p = s.padded(multiples);
                Some(Padded {
                    a: ctx.buffer(p.m * p.k, false)?,
                    b: ctx.buffer(p.k * p.n, false)?,
                    c: ctx.buffer(p.m * p.n, false)?,
                    shape: p,
                    pad: ctx.kernel(MATMUL, "matrix_pad", "")?,
                    unpad: ctx.kernel(MATMUL, "matrix_unpad", "")?,
                })
            }
            _ => None,
        };
        Ok(Prepared {
            rung,
            kernel,
            bt,
            padded,
        })
    }

    /// One complete product into `dev.c`: transposing or padding first when the rung needs
    /// it, all of it inside the timed run.
    pub fn enqueue(&self, ctx: &ClContext, dev: &DeviceOperands) -> Result<Vec<Timed>, ClError> {
        let s = dev.shape;
        let mut cmds = Vec::new();
        let u = |v: usize| Arg::U32(v as u32);
        if let Some((bt, kind)) = &self.bt {
            cmds.push(
                enqueue_transpose(ctx, *kind, &dev.b, bt, (s.n, s.k, 1), "B transposed")?.timed,
            );
        }
        let name = self.rung.name();
        match &self.padded {
            None => {
                let b = self.bt.as_ref().map_or(&dev.b, |(bt, _)| bt);
                let (global, local) = self.rung.ndrange(s);
                let args = [
                    Arg::Buf(&dev.a),
                    Arg::Buf(b),
                    Arg::Buf(&dev.c),
                    u(s.m),
                    u(s.n),
                    u(s.k),
                ];
                cmds.push(ctx.run(&self.kernel, &args, &global, Some(&local), &name)?);
            }
            Some(Padded {
                a: ap,
                b: bp,
                c: cp,
                shape: p,
                pad,
                unpad,
            }) => {
                let g2 = |cols: usize, rows: usize| {
                    [cols.next_multiple_of(16), rows.next_multiple_of(16)]
                };
                let l2 = Some(&[16usize, 16][..]);
                let pad_args = [
                    Arg::Buf(&dev.a),
                    Arg::Buf(ap),
                    u(s.m),
                    u(s.k),
                    u(p.m),
                    u(p.k),
                ];
                cmds.push(ctx.run(pad, &pad_args, &g2(p.k, p.m), l2, "pad A")?);
                let pad_args = [
                    Arg::Buf(&dev.b),
                    Arg::Buf(bp),
                    u(s.k),
                    u(s.n),
                    u(p.k),
                    u(p.n),
                ];
                cmds.push(ctx.run(pad, &pad_args, &g2(p.n, p.k), l2, "pad B")?);
                let (global, local) = self.rung.ndrange(*p);
                let args = [
                    Arg::Buf(ap),
                    Arg::Buf(bp),
                    Arg::Buf(cp),
                    u(p.m),
                    u(p.n),
                    u(p.k),
                ];
                cmds.push(ctx.run(&self.kernel, &args, &global, Some(&local), &name)?);
                let un_args = [Arg::Buf(cp), Arg::Buf(&dev.c), u(s.m), u(s.n), u(p.n)];
                cmds.push(ctx.run(unpad, &un_args, &g2(s.n, s.m), l2, "unpad C")?);
            }
        }
        Ok(cmds)
    }
}

/// Poisons C, runs the rung once, checks it, and times it if it is right.
fn measure_rung(
    ctx: &ClContext,
    runs: usize,
    rung: Rung,
    dev: &mut DeviceOperands,
    elem: Elem,
    reference: &Reference,
    r: &mut Record,
) -> anyhow::Result<()> {
    let s = dev.shape;
    // A NaN in every element (read as int, a value no product of these operands reaches), so
    // an element the kernel never writes cannot pass.
    ctx.write_blocking(
        &mut dev.c,
        &vec![f32::from_bits(0x7fc0_1234); s.m * s.n],
        "poison C",
    )?;
    let dev: &DeviceOperands = dev;
    let prepared = Prepared::new(ctx, rung, dev, elem)?;
    prepared.enqueue(ctx, dev)?;
    ctx.finish()?;
    let got = download(ctx, &dev.c, s.m * s.n)?;
    match reference.check(&got, 0..s.m) {
        Err(why) => r.failed(why),
        Ok(()) => {
            let stats = measure(ctx, runs, || prepared.enqueue(ctx, dev))?;
            timed(r, &stats, s.flops());
        }
    }
    Ok(())
}

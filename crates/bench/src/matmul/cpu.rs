//! The CPU baselines: the textbook triple loop on one thread, and a cache-blocked loop over
//! every core (rayon), both checked against the reference like the device rungs. Too much
//! work to run whole, they are timed on their first rows and scaled.

use super::check::{Operands, Reference};
use super::{timed, Elem, Shape};
use crate::runner::{measure_host, Stats};
use crate::{Record, Status};
use rayon::prelude::*;

pub const NAIVE: &str = "CPU naive triple loop (1 thread)";
pub const BLOCKED: &str = "CPU blocked, rayon (all cores)";

/// The naive CPU loop is timed whole up to this many flops, on its first rows beyond.
const NAIVE_MAX_FLOP: f64 = 3e8;
/// Likewise the multi-threaded CPU baseline.
const BLOCKED_MAX_FLOP: f64 = 2e11;
/// CPU baselines take seconds per run at the large sizes: at most this many timed runs.
const MAX_RUNS: usize = 3;

/// The element types the baselines run on, kept in f32 buffers (i32 as bit patterns). Each
/// baseline computes the rows `rows` of C into `c`.
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
fn naive_loop<T: Scalar>(a: &[T], b: &[T], c: &mut [T], s: Shape, rows: std::ops::Range<usize>) {
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
fn blocked_loop<T: Scalar>(a: &[T], b: &[T], c: &mut [T], s: Shape, rows: std::ops::Range<usize>) {
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

/// Checks and times one baseline into `r`: `naive`, the triple loop, or the blocked one.
pub fn baseline(r: &mut Record, d: &Operands, reference: &Reference, naive: bool, runs: usize) {
    let s = d.shape;
    let max = if naive {
        NAIVE_MAX_FLOP
    } else {
        BLOCKED_MAX_FLOP
    };
    // Both loops cost the same per row of C, so timing the first rows and scaling is fair.
    let rows = if s.flops() <= max {
        s.m
    } else {
        ((max / (2.0 * s.n as f64 * s.k as f64)) as usize).clamp(1, s.m)
    };
    let runs = runs.min(MAX_RUNS);
    let (stats, got) = match d.elem {
        Elem::F32 => time_cpu::<f32>(d, rows, naive, runs),
        Elem::I32 => time_cpu::<i32>(d, rows, naive, runs),
    };
    if let Err(why) = reference.check(&got, 0..rows) {
        r.fail(why);
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
        r.status = Status::Estimated(format!("first {rows} of {} rows timed, ×{scale:.0}", s.m));
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
                naive_loop(&a, &b, c, s, 0..rows)
            } else {
                blocked_loop(&a, &b, c, s, 0..rows)
            }
        },
    );
    (stats, c.into_iter().map(T::to_bits).collect())
}

//! The host side of the check: the operands every rung multiplies, and C = A·B computed in
//! f64 (exact for integers) with the tolerance each element is held to.

use super::{Elem, Shape};
use rayon::prelude::*;

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
            let u = crate::device::noise_seeded(n, seed);
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

//! The recursive filter as every pass steps it, 16 lines at a time: its coefficients splatted
//! (`Coef`) and both sections' state run poles first (`Sections`). One module for the
//! summaries, the columns and the rows, so that all three filter identically.

use super::samples::Sample;
use super::VECS;
use crate::cpu::lanes::{Isa, V};
use crate::filter::gaussian::{INPUT_WEIGHT, SECTION_FLOATS};

/// One axis's recursive filter, every coefficient splatted across the lanes, for sections
/// run as their all-pole part followed by their two-tap numerator (see `Sections`).
#[derive(Clone, Copy)]
pub(crate) struct Coef {
    /// Causal output weights of the all-pole state: `n0 + n1` on w, `−n1` on d.
    cw: [V; 2],
    cd: [V; 2],
    /// Anticausal output weights: `m1 + m2` on w, `−m2` on d.
    aw: [V; 2],
    ad: [V; 2],
    neps: [V; 2],
    /// r² = 1 − q, the decay of the delta d.
    r2: [V; 2],
    /// 1 / eps: the all-pole state of a constant unit input.
    steady: [V; 2],
    /// The weight of the input itself in a difference-form output (`INPUT_WEIGHT`): 1 for
    /// the Gaussian, 0 for its derivatives.
    pub(crate) input: V,
}

impl Coef {
    pub(super) fn new(c: &[f32; 2 * SECTION_FLOATS]) -> Self {
        // Each section's f32 coefficients as f64; every derived one is rounded to f32 once.
        let sections: [[f64; SECTION_FLOATS]; 2] =
            std::array::from_fn(|k| std::array::from_fn(|i| c[k * SECTION_FLOATS + i] as f64));
        let f = |f: fn(&[f64; SECTION_FLOATS]) -> f64| sections.map(|s| V::splat(f(&s) as f32));
        Coef {
            cw: f(|s| s[0] + s[1]),
            cd: f(|s| -s[1]),
            aw: f(|s| s[2] + s[3]),
            ad: f(|s| -s[3]),
            neps: f(|s| -s[4]),
            r2: f(|s| 1.0 - s[5]),
            steady: f(|s| 1.0 / s[4]),
            input: V::splat(1.0),
        }
    }

    /// Coefficients that nothing steps: the stand-in where an axis is left alone, so that the
    /// rows pass keeps one shape (its sweeps are skipped then).
    pub(super) fn identity() -> Self {
        let zero = [V::ZERO; 2];
        Coef {
            cw: zero,
            cd: zero,
            aw: zero,
            ad: zero,
            neps: zero,
            r2: zero,
            steady: zero,
            input: V::ZERO,
        }
    }

    /// The coefficients of block `c` in the form samples of `T` are filtered in: the
    /// difference form where `Sample::EXACT`, else the direct form.
    pub(super) fn of<T: Sample>(c: &[f32; 2 * SECTION_FLOATS]) -> Self {
        match T::EXACT {
            true => Coef::differences(c),
            false => Coef::new(c),
        }
    }

    /// A difference-form block (`RecursiveGaussian::to_f32_difference_block`), which holds the
    /// output weights themselves.
    pub(crate) fn differences(c: &[f32; 2 * SECTION_FLOATS]) -> Self {
        let f = |i: usize| [0, 1].map(|k| V::splat(c[k * SECTION_FLOATS + i]));
        let sections: [[f64; 2]; 2] =
            std::array::from_fn(|k| [4, 5].map(|i| c[k * SECTION_FLOATS + i] as f64));
        let g = |f: fn(&[f64; 2]) -> f64| sections.map(|s| V::splat(f(&s) as f32));
        Coef {
            cw: f(0),
            cd: f(1),
            aw: f(2),
            ad: f(3),
            neps: g(|s| -s[0]),
            r2: g(|s| 1.0 - s[1]),
            steady: g(|s| 1.0 / s[0]),
            input: V::splat(c[INPUT_WEIGHT]),
        }
    }

    #[inline(always)]
    pub(crate) fn causal(&self) -> (&[V; 2], &[V; 2]) {
        (&self.cw, &self.cd)
    }

    #[inline(always)]
    pub(crate) fn anticausal(&self) -> (&[V; 2], &[V; 2]) {
        (&self.aw, &self.ad)
    }
}

/// The state of both 2nd-order sections for 16 lines, as all-pole states. A section is
/// `N(z) / D(z)` with a two-tap numerator (`n0 + n1 z⁻¹` causally, `m1 z + m2 z²`
/// anticausally); the two factors commute, so the input runs through `1 / D` alone (the
/// reference's delta form: w and its step d) and the numerator acts on w at the output:
/// `n0 w[n] + n1 w[n−1] = (n0 + n1) w − n1 d`. That takes 3 operations per section and
/// sample where feeding `n0 x + n1 x'` in takes 5, and the same 4 FMAs that weigh both
/// sections' outputs also add them up.
#[derive(Clone, Copy)]
pub(crate) struct Sections {
    pub(crate) w: [V; 2],
    pub(crate) d: [V; 2],
}

impl Sections {
    pub(crate) const ZERO: Sections = Sections {
        w: [V::ZERO; 2],
        d: [V::ZERO; 2],
    };

    /// The state of a constant input `xl` for ever: the clamp edge's start.
    #[inline(always)]
    pub(super) fn steady(k: &Coef, xl: V) -> Self {
        Sections {
            w: [k.steady[0] * xl, k.steady[1] * xl],
            d: [V::ZERO; 2],
        }
    }

    /// Advances both sections by one input.
    #[inline(always)]
    pub(crate) fn step<I: Isa>(&mut self, k: &Coef, x: V) {
        for s in 0..2 {
            // d·r² where the reference has d − q·d: one operation fewer, and the two differ
            // by the rounding of r² (6e-8 relative) on the small per-step delta d.
            let t = V::madd::<I>(k.neps[s], self.w[s], V::madd::<I>(k.r2[s], self.d[s], x));
            self.d[s] = t;
            self.w[s] = self.w[s] + t;
        }
    }

    /// `acc` plus both sections' outputs, for the output weights of one direction.
    #[inline(always)]
    pub(crate) fn output<I: Isa>(&self, (ow, od): (&[V; 2], &[V; 2]), acc: V) -> V {
        let mut acc = acc;
        for s in 0..2 {
            acc = V::madd::<I>(ow[s], self.w[s], acc);
            acc = V::madd::<I>(od[s], self.d[s], acc);
        }
        acc
    }

    #[inline(always)]
    pub(super) fn save(&self, out: &mut [V], v: usize) {
        for f in 0..2 {
            out[f * VECS + v] = self.w[f];
            out[(2 + f) * VECS + v] = self.d[f];
        }
    }

    #[inline(always)]
    pub(super) fn restore(from: &[V], v: usize) -> Self {
        Sections {
            w: [from[v], from[VECS + v]],
            d: [from[2 * VECS + v], from[3 * VECS + v]],
        }
    }
}

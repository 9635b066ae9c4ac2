//! The Gaussian's first and second derivatives as recursive filters, and as scipy samples them.
//!
//! A derivative of the Gaussian is a sum of damped cosines and sines, like the Gaussian itself,
//! so it runs as the same causal and anticausal 2nd-order sections with other poles and
//! numerators (Deriche, "Recursively implementing the Gaussian and its derivatives", 1993).
//! Here each derivative is an 8th-order filter, two of the smoothing filter's 4th-order forms
//! on the same input with their outputs added: poles fitted once (minimax, in the limit of
//! large sigma), numerators fitted for each sigma by least squares to the kernel scipy samples
//! (the derivative of the Gaussian at the integers, scaled by the sampled Gaussian's
//! normalisation), under two constraints that make the filter exact where users check it
//! first: a constant gives exactly 0, a ramp of slope 1 gives 1 (first derivative), and `x²`
//! gives 2 (second). The fit has eight unknowns and weighs at most 20,000 samples: about a
//! millisecond per axis and call at most.

// The small systems below index several arrays in step (rows, columns, constraints); written
// with indices they read as the algebra does.
#![allow(clippy::needless_range_loop)]

use super::gaussian::{sampled_gaussian, RecursiveGaussian, Section};

/// Derivative orders the filters implement: the smoothing Gaussian, its first and its second
/// derivative.
pub const MAX_ORDER: u8 = 2;

/// The samples the fit weighs, at most: beyond this many, the fit takes every k-th sample
/// (the kernel is smooth on that scale, so the fit does not change).
const MOST_FIT_SAMPLES: f64 = 20_000.0;

/// The poles `(b, omega)` of each pair (a pair is `r e^(±i omega / sigma)` with `r = e^(-b /
/// sigma)`), fitted once by minimax in the limit of large sigma, with the numerators refitted
/// for every sigma. Each derivative is an 8th-order filter: two 4th-order filters (the
/// smoothing filter's form) on the same input, added. A 4th-order fit comes no closer than
/// 7e-4 (first) and 2.3e-3 (second) of the kernel's range, and mixed derivatives (d²/dxdy)
/// compound it past 1e-3; these are within 7e-6 (first) and 3e-5 (second) from sigma 2 up,
/// under the fit's constraints (`fit`).
const FIRST_POLES: [(f64, f64); 4] = [
    (1.430_032_891, 0.469_273_085),
    (1.382_935_587, 1.015_922_499),
    (1.649_523_693, 1.938_081_440),
    (1.698_721_393, 3.122_682_729),
];
const SECOND_POLES: [(f64, f64); 4] = [
    (1.271_254_135, 0.408_061_969),
    (1.407_907_501, 1.104_338_286),
    (1.657_036_640, 2.060_135_813),
    (1.739_158_832, 3.187_642_052),
];

/// How far a derivative's filter reaches, in samples: where the sum of its pole pairs'
/// envelopes (`|alpha + i beta| r^n` each, an upper bound of the response) has fallen below
/// 5e-5 of the kernel's peak (`recursive_reach`'s bound for the smoothing filter), plus 3.
pub fn reach(sigma: f64, order: u8) -> usize {
    reach_within(sigma, order, 5e-5)
}

/// `reach` to `fraction` of the kernel's peak.
pub fn reach_within(sigma: f64, order: u8, fraction: f64) -> usize {
    let (poles, numerators) = fitted(sigma, order);
    let end = (4.0 * sigma).ceil();
    let step = (end / MOST_FIT_SAMPLES).ceil().max(1.0);
    let peak = (0..=(end / step) as usize)
        .map(|j| (unnormalised(sigma, order, j as f64 * step)).abs())
        .fold(0.0, f64::max)
        / gaussian_sum(sigma);
    let pairs = poles.len() as f64;
    poles
        .iter()
        .zip(&numerators)
        .map(|(p, &(alpha, beta))| {
            let amplitude = alpha.hypot(beta);
            // r^n <= fraction peak / (pairs amplitude), with ln r = -b / sigma.
            let n = (pairs * amplitude / (fraction * peak)).ln() / -p.r.ln();
            n.max(0.0).ceil() as usize
        })
        .max()
        .unwrap_or(0)
        + 3
}

/// The poles of `order`'s design at `sigma` and their fitted numerators `(alpha, beta)`.
fn fitted(sigma: f64, order: u8) -> (Vec<Pole>, Vec<(f64, f64)>) {
    assert!((1..=MAX_ORDER).contains(&order), "derivative order 1 or 2");
    let poles: Vec<Pole> = match order {
        1 => FIRST_POLES.to_vec(),
        _ => SECOND_POLES.to_vec(),
    }
    .into_iter()
    .map(|(b, omega)| Pole::new(b, omega, sigma))
    .collect();
    let numerators = fit(sigma, order, &poles);
    (poles, numerators)
}

/// The recursive filters of the derivative of `order` (1 or 2) at `sigma`, to run on the same
/// input and add: one 4th-order filter for the first derivative, two for the second.
pub(super) fn design(sigma: f64, order: u8) -> Vec<RecursiveGaussian> {
    let (poles, numerators) = fitted(sigma, order);
    let odd = order % 2 == 1;
    let sections: Vec<Section> = poles
        .iter()
        .zip(numerators)
        .map(|(p, (alpha, beta))| {
            let (s, c) = p.angle.sin_cos();
            // The anticausal half mirrors the causal one: h(-n) = h(n) for an even kernel and
            // -h(n) for an odd one.
            let sign = if odd { -1.0 } else { 1.0 };
            Section {
                n0: alpha,
                n1: p.r * (beta * s - alpha * c),
                m1: sign * p.r * (beta * s + alpha * c),
                m2: -sign * alpha * p.r * p.r,
                eps: p.eps,
                q: p.q,
            }
        })
        .collect();
    sections
        .chunks_exact(2)
        .map(|pair| RecursiveGaussian {
            sigma,
            order,
            sections: [pair[0], pair[1]],
        })
        .collect()
}

/// One pole pair `r e^(±i angle)` of the design at a sigma, with the difference form's `eps`
/// and `q` computed free of cancellation (as `RecursiveGaussian::new` computes them).
#[derive(Clone, Copy)]
struct Pole {
    r: f64,
    angle: f64,
    eps: f64,
    q: f64,
}

impl Pole {
    fn new(b: f64, omega: f64, sigma: f64) -> Pole {
        let one_minus_r = -(-b / sigma).exp_m1();
        let r = 1.0 - one_minus_r;
        let half = (omega / sigma / 2.0).sin();
        Pole {
            r,
            angle: omega / sigma,
            eps: one_minus_r * one_minus_r + 4.0 * r * half * half,
            q: -(-2.0 * b / sigma).exp_m1(),
        }
    }

    /// The causal half's two basis responses at `n >= 0`: `r^n cos(n angle)`, `r^n sin(..)`.
    fn basis(&self, n: f64) -> [f64; 2] {
        let (s, c) = (n * self.angle).sin_cos();
        let m = (n * self.r.ln()).exp();
        [m * c, m * s]
    }
}

/// scipy's kernel of `order` at offset `m` (in the convolution's orientation: the weight of
/// the input `m` samples before the output), before the normalisation by the sampled
/// Gaussian's sum: the derivative of `exp(-m² / 2σ²)`.
fn unnormalised(sigma: f64, order: u8, m: f64) -> f64 {
    let u = m / sigma;
    factor(sigma, order, m) * (-0.5 * u * u).exp()
}

/// What the derivative of `order` multiplies the Gaussian by at offset `m`: 1, `-m/σ²`,
/// `(m² − σ²)/σ⁴` (scipy's polynomial `q`).
fn factor(sigma: f64, order: u8, m: f64) -> f64 {
    let u = m / sigma;
    match order {
        0 => 1.0,
        1 => -u / sigma,
        _ => (u * u - 1.0) / (sigma * sigma),
    }
}

/// The sum of the sampled Gaussian `exp(-m² / 2σ²)` over every integer `m`.
fn gaussian_sum(sigma: f64) -> f64 {
    let reach = (12.0 * sigma).ceil() as i64 + 1;
    (-reach..=reach)
        .map(|m| unnormalised(sigma, 0, m as f64))
        .sum()
}

/// scipy's derivative kernel (`scipy.ndimage._gaussian_kernel1d`) for offsets `-radius ..=
/// radius`, in the convolution's orientation; order 0 is the normalised sampled Gaussian.
pub fn sampled_derivative(sigma: f64, radius: usize, order: u8) -> Vec<f64> {
    let r = radius as i64;
    (-r..=r)
        .zip(sampled_gaussian(sigma, radius))
        .map(|(m, g)| factor(sigma, order, m as f64) * g)
        .collect()
}

/// The numerators `(alpha, beta)` of every pair: the weighted least-squares fit of the causal
/// half `h(n) = sum_k alpha_k r_k^n cos(n angle_k) + beta_k r_k^n sin(n angle_k)` to the
/// derivative at `n >= 0` (each `n > 0` weighed twice, for the mirrored half), under two
/// constraints on the whole kernel, solved through its KKT system:
/// - it sums to 0 (`h(0) = 0` for the odd first derivative, `h(0) + 2 sum_{n>0} h(n) = 0` for
///   the second), so that the difference form, which leaves the input itself out, runs the
///   filter as designed;
/// - its moment of its order is the derivative's (`sum n h(n) = -1`, `sum n² h(n) = 2`): a
///   ramp's slope and a parabola's curvature come out exact, where the tail's small errors,
///   weighed by `n` or `n²`, would otherwise miss them by up to 4e-3 (scipy's kernel, cut at
///   4 sigma, misses the curvature by 7e-3).
fn fit(sigma: f64, order: u8, poles: &[Pole]) -> Vec<(f64, f64)> {
    const MOST: usize = 10;
    let k = 2 * poles.len();
    assert!(k + 2 <= MOST, "at most four pole pairs");
    let norm = gaussian_sum(sigma);
    // The poles decay at least as exp(-1.12 n / sigma): 1e-12 by 25 sigma.
    let end = (25.0 * sigma).ceil() + 8.0;
    let step = (end / MOST_FIT_SAMPLES).ceil().max(1.0);
    let mut system = [[0.0f64; MOST]; MOST];
    let mut rhs = [0.0f64; MOST];
    // The constraints' rows: the kernel's sum and its moment of `order`, from the causal half.
    let mut sum = [0.0f64; MOST];
    let mut moment = [0.0f64; MOST];
    let odd = order % 2 == 1;
    let mut n = 0.0;
    let mut row = [0.0f64; MOST];
    while n <= end {
        for (p, pole) in poles.iter().enumerate() {
            [row[2 * p], row[2 * p + 1]] = pole.basis(n);
        }
        // Sums over every `step`-th sample stand for sums over all of them (the trapezoid rule
        // on the mirrored kernel: the centre weighs `step`, each side `step` per sample).
        let weight = if n == 0.0 { step } else { 2.0 * step };
        let target = unnormalised(sigma, order, n) / norm;
        for i in 0..k {
            for j in 0..k {
                system[i][j] += weight * row[i] * row[j];
            }
            rhs[i] += weight * row[i] * target;
            // n > 0 counts on both sides: twice in an even kernel's sum and in both moments
            // (n h(n) of an odd kernel, n² h(n) of an even one), never in an odd kernel's sum.
            sum[i] += match (n == 0.0, odd) {
                (true, true) => row[i],
                (true, false) => step * row[i],
                (false, true) => 0.0,
                (false, false) => 2.0 * step * row[i],
            };
            moment[i] += 2.0 * step * n.powi(order as i32) * row[i];
        }
        n += step;
    }
    let want_moment = if odd { -1.0 } else { 2.0 };
    for i in 0..k {
        (system[k][i], system[i][k]) = (sum[i], sum[i]);
        (system[k + 1][i], system[i][k + 1]) = (moment[i], moment[i]);
    }
    rhs[k + 1] = want_moment;
    // The unused rows stay the identity, so the padded system solves as the small one.
    for i in k + 2..MOST {
        system[i][i] = 1.0;
    }
    let u = solve(system, rhs);
    (0..poles.len()).map(|p| (u[2 * p], u[2 * p + 1])).collect()
}

/// `a x = b` by Gaussian elimination with partial pivoting (a small, well-posed system).
fn solve<const N: usize>(mut a: [[f64; N]; N], mut b: [f64; N]) -> [f64; N] {
    for col in 0..N {
        let pivot = (col..N)
            .max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))
            .expect("rows left");
        a.swap(col, pivot);
        b.swap(col, pivot);
        for row in col + 1..N {
            let f = a[row][col] / a[col][col];
            for k in col..N {
                a[row][k] -= f * a[col][k];
            }
            b[row] -= f * b[col];
        }
    }
    let mut x = [0.0; N];
    for row in (0..N).rev() {
        let tail: f64 = (row + 1..N).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - tail) / a[row][row];
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The designed filter's whole impulse response at offsets `-reach ..= reach`, from its
    /// sections (causal for n >= 0, anticausal for n < 0), walked in f64.
    fn impulse(designs: &[RecursiveGaussian], reach: usize) -> Vec<f64> {
        let mut causal = vec![0.0; reach + 1];
        let mut anticausal = vec![0.0; reach + 1];
        for s in designs.iter().flat_map(|g| &g.sections) {
            let r2 = 1.0 - s.q;
            // 1 + d1 + d2 = eps, d2 = r² → d1 = eps - 1 - r².
            let d1 = s.eps - 1.0 - r2;
            let (mut y1, mut y2) = (0.0, 0.0);
            for n in 0..=reach {
                let x = |k: usize| if k == 0 { 1.0 } else { 0.0 };
                let xn1 = if n >= 1 { x(n - 1) } else { 0.0 };
                let y = s.n0 * x(n) + s.n1 * xn1 - d1 * y1 - r2 * y2;
                causal[n] += y;
                (y2, y1) = (y1, y);
            }
            let (mut y1, mut y2) = (0.0, 0.0);
            for n in 0..=reach {
                // The anticausal output n samples before the impulse: m1 x[+1] + m2 x[+2].
                let x = |k: usize| if k == 0 { 1.0 } else { 0.0 };
                let (xa, xb) = (
                    if n >= 1 { x(n - 1) } else { 0.0 },
                    if n >= 2 { x(n - 2) } else { 0.0 },
                );
                let y = s.m1 * xa + s.m2 * xb - d1 * y1 - r2 * y2;
                anticausal[n] += y;
                (y2, y1) = (y1, y);
            }
        }
        // Offset m (the weight of the input m before the output): causal for m >= 0.
        let mut out: Vec<f64> = anticausal[1..].iter().rev().copied().collect();
        out.extend(causal);
        out
    }

    /// The largest error of the design against scipy's kernel, relative to the kernel's
    /// range.
    fn design_error(sigma: f64, order: u8) -> f64 {
        let reach = (25.0 * sigma).ceil() as usize + 8;
        let got = impulse(&design(sigma, order), reach);
        let want = sampled_derivative(sigma, reach, order);
        let (lo, hi) = want
            .iter()
            .fold((f64::MAX, f64::MIN), |(l, h), &v| (l.min(v), h.max(v)));
        got.iter()
            .zip(&want)
            .fold(0.0f64, |m, (g, w)| m.max((g - w).abs()))
            / (hi - lo)
    }

    #[test]
    fn derivatives_follow_the_sampled_kernel() {
        for (order, bound) in [(1, 7e-6), (2, 3e-5)] {
            for sigma in [2.0, 3.0, 5.0, 10.0, 40.0, 200.0, 3000.0] {
                let e = design_error(sigma, order);
                assert!(
                    e <= bound,
                    "order {order} sigma {sigma}: {e:.2e} of the range"
                );
            }
        }
    }

    #[test]
    fn the_reach_covers_the_slowest_pole() {
        for order in [1, 2] {
            let sigma = 20.0;
            let r = reach(sigma, order);
            let h = impulse(&design(sigma, order), r + 40);
            let peak = h.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let tail = h[..40].iter().fold(0.0f64, |m, v| m.max(v.abs()));
            assert!(
                tail < 5e-5 * peak,
                "order {order}: {:.2e} beyond the reach",
                tail / peak
            );
        }
    }
}

//! Gaussian filter coefficients from sigma: the 4th-order Deriche recursive filter as two
//! parallel 2nd-order sections, and sampled FIR taps. Pure f64 math, no I/O.
//!
//! Sources: R. Deriche, "Recursively implementing the Gaussian and its derivatives", INRIA
//! RR-1893 (1993), for the fitted constants; G. Farnebäck & C.-F. Westin, "Improving
//! Deriche-style recursive Gaussian filters", JMIV 2006, and P. Getreuer, "A Survey of Gaussian
//! Convolution Algorithms", IPOL 2013, for the anticausal coefficients and the normalisation.

/// Deriche's fitted constants for the 4th-order Gaussian: each term is
/// `(alpha cos(omega n / sigma) + beta sin(omega n / sigma)) exp(-b n / sigma)`.
pub(super) const TERMS: [(f64, f64, f64, f64); 2] = [
    // (alpha, beta, b, omega)
    (
        1.679_729_223_236_110_7,
        3.734_829_826_910_358,
        1.783_190_654_451_510_4,
        0.631_811_317_456_949_3,
    ),
    (
        -0.680_278_350_180_689_7,
        -0.259_830_047_895_962_5,
        1.722_829_766_333_802_8,
        1.996_927_683_248_777,
    ),
];

/// Sigma below which `Method::Auto` uses the sampled FIR: the recursion's fit to the Gaussian
/// degrades as sigma shrinks (relative L1 error 6e-4 at sigma 2, 9e-4 at 1, 1.5e-2 at 0.5),
/// while a FIR of radius `ceil(5 sigma)` is exact to the sampled Gaussian and costs at most 21
/// taps here.
pub const FIR_BELOW_SIGMA: f64 = 2.0;

/// How many samples the recursive filter at `sigma` needs beyond an edge: the least K with
/// the weights beyond K under 5e-5 (`edges::RECURSIVE_TAIL`). Deriche's response decays as exp(-1.72 n /
/// sigma), so K grows as 5.43 sigma for large sigma (5.5 sigma at 10, 6 at 2, 8 at 0.5: see
/// the test); ceil(5.5 sigma) + 3 covers every sigma.
pub fn recursive_reach(sigma: f64) -> usize {
    (5.5 * sigma).ceil() as usize + 3
}

/// How far the FIR reaches, in sigmas: the Gaussian mass left outside is 6e-7.
const FIR_RADIUS_SIGMAS: f64 = 5.0;

/// One 2nd-order section of the causal + anticausal pair, in the "delta" form the kernels run:
///
/// ```text
/// causal:     d[n] = n0 x[n]   + n1 x[n-1] - eps y[n-1] + (d[n-1] - q d[n-1]);  y[n] = y[n-1] + d[n]
/// anticausal: d[n] = m1 x[n+1] + m2 x[n+2] - eps y[n+1] + (d[n+1] - q d[n+1]);  y[n] = y[n+1] + d[n]
/// ```
///
/// This is the direct form `y = .. + 2 r cos(w) y[n-1] - r^2 y[n-2]` rewritten so that no
/// coefficient sits next to 2 or 1: in f32 the direct form's `2 r cos(w)` loses the pole
/// position once sigma reaches a few tens (its `1 - d1 - d2` is ~1e-5 at sigma 400), while
/// `eps = 1 - 2 r cos(w) + r^2` and `q = 1 - r^2`, computed in f64, keep full relative
/// precision for any sigma (r^2 itself rounds to 1.0f beyond sigma ~ 1e7).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Section {
    pub n0: f64,
    pub n1: f64,
    pub m1: f64,
    pub m2: f64,
    pub eps: f64,
    pub q: f64,
}

impl Section {
    /// DC gain of the anticausal half: the steady state for a constant input.
    pub fn anticausal_gain(&self) -> f64 {
        (self.m1 + self.m2) / self.eps
    }

    pub fn causal_gain(&self) -> f64 {
        (self.n0 + self.n1) / self.eps
    }
}

/// The normalised recursive Gaussian for one sigma.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RecursiveGaussian {
    pub sigma: f64,
    /// The derivative it takes: 0 smooths, 1 and 2 are the first and second derivatives
    /// (`derivative`).
    pub order: u8,
    pub sections: [Section; 2],
}

/// Number of f32 values per section in the coefficient block the kernels read.
pub const SECTION_FLOATS: usize = 8;

/// Where a difference-form block holds the weight of the input itself in the output
/// (`RecursiveGaussian::input_weight`).
pub const INPUT_WEIGHT: usize = 6;

impl RecursiveGaussian {
    pub fn new(sigma: f64) -> Self {
        assert!(
            sigma.is_finite() && sigma > 0.0,
            "sigma must be finite and > 0"
        );
        let mut sections = TERMS.map(|(alpha, beta, b, omega)| {
            let (s, c) = (omega / sigma).sin_cos();
            let one_minus_r = -(-b / sigma).exp_m1();
            let r = 1.0 - one_minus_r;
            let half_angle = (omega / sigma / 2.0).sin();
            // 1 - 2 r cos w + r^2 = (1 - r)^2 + 2 r (1 - cos w), free of cancellation.
            let eps = one_minus_r * one_minus_r + 4.0 * r * half_angle * half_angle;
            Section {
                n0: alpha,
                n1: r * (beta * s - alpha * c),
                m1: r * (beta * s + alpha * c),
                m2: -alpha * r * r,
                eps,
                q: -(-2.0 * b / sigma).exp_m1(),
            }
        });
        // Farnebäck–Westin: scale so that causal + anticausal has DC gain exactly 1.
        let dc: f64 = sections
            .iter()
            .map(|s| s.causal_gain() + s.anticausal_gain())
            .sum();
        for s in &mut sections {
            s.n0 /= dc;
            s.n1 /= dc;
            s.m1 /= dc;
            s.m2 /= dc;
        }
        Self {
            sigma,
            order: 0,
            sections,
        }
    }

    /// The weight of the input itself in the difference form's output: the whole filter's DC
    /// gain, 1 for the Gaussian and 0 for a derivative. A derivative's design is fitted to
    /// sum to 0 (the `derivative` module); where it is two filters added (both derivatives), the
    /// two gains sum to 0, each runs with weight 0, and the output is still the whole filter.
    pub fn input_weight(&self) -> f32 {
        match self.order {
            0 => 1.0,
            _ => 0.0,
        }
    }

    /// The coefficient block uploaded to the kernels, rounded to f32 only here:
    /// per section `n0 n1 m1 m2 eps q anticausal_gain 0`.
    pub fn to_f32_block(self) -> [f32; 2 * SECTION_FLOATS] {
        let mut out = [0f32; 2 * SECTION_FLOATS];
        for (chunk, s) in out.chunks_exact_mut(SECTION_FLOATS).zip(&self.sections) {
            chunk[..7].copy_from_slice(&[
                s.n0 as f32,
                s.n1 as f32,
                s.m1 as f32,
                s.m2 as f32,
                s.eps as f32,
                s.q as f32,
                s.anticausal_gain() as f32,
            ]);
        }
        out
    }

    /// The coefficient block of the difference form, laid out as `to_f32_block`'s: per section
    /// `cw cd aw ad eps q 0 0`, except that section a's 7th value is the input's own weight
    /// (`input_weight`: 1, or 0 for a derivative). The sections run their poles alone on the
    /// first differences `x[n] − x[n−1]` (the all-pole state `w` and its step `d`, the delta
    /// form with a numerator of 1) and their numerators on that state at the output:
    /// causally `cw w + cd d`, anticausally `aw w + ad d`; the filter's output is the input
    /// (times its weight) plus the four.
    ///
    /// A section `N(z) / D(z)` with DC gain `G = N(1) / D(1)` is `G + (1 − z⁻¹) P(z) / D(z)`,
    /// since `N − G D` vanishes at `z = 1`: causally `N = n0 + n1 z⁻¹` gives `P = p0 + p1 z⁻¹`
    /// with `p0 = n0 − G`, `p1 = G r²`, and `p0 w[n] + p1 w[n−1] = (p0 + p1) w − p1 d`;
    /// anticausally `N = m1 z + m2 z²` gives `z P = q0 z + q1 z²` with `q0 = G`, `q1 = m2 − G
    /// r²`, output `(q0 + q1) w − q1 d`. The gains of all four halves sum to 1 (the
    /// normalisation), so they leave the input itself: where it is constant every difference
    /// is exactly 0, a clamped edge feeds only zeros (both halves start from a zero state), and
    /// what the sections add there has decayed away. The numerators act on the state, not on
    /// the input: `p0` and `p1` are about `∓G` and nearly cancel, and fed into the poles their
    /// products' rounding would be amplified by `1 / eps` (up to σ²/3: 2.5× the design's error
    /// at σ = 200), while at the output it is not. Computed in f64, rounded once.
    pub fn to_f32_difference_block(self) -> [f32; 2 * SECTION_FLOATS] {
        let mut out = [0f32; 2 * SECTION_FLOATS];
        for (chunk, s) in out.chunks_exact_mut(SECTION_FLOATS).zip(&self.sections) {
            let (gc, ga) = (s.causal_gain(), s.anticausal_gain());
            // r² = 1 − q.
            let r2 = 1.0 - s.q;
            let (p0, p1) = (s.n0 - gc, gc * r2);
            let (q0, q1) = (ga, s.m2 - ga * r2);
            chunk[..6].copy_from_slice(&[
                (p0 + p1) as f32,
                -p1 as f32,
                (q0 + q1) as f32,
                -q1 as f32,
                s.eps as f32,
                s.q as f32,
            ]);
        }
        out[INPUT_WEIGHT] = self.input_weight();
        out
    }

    /// Per section, the homogeneous (zero-input) transition of the state `(y, d)` over `n`
    /// samples, row-major 2×2: what block-parallel filtering (Nehab et al. 2011) needs to
    /// carry a chunk's incoming state across the chunk. Built from the f32-rounded `eps` and
    /// `q` the kernels use, so that it describes their recursion, not the f64 design.
    #[cfg(test)]
    pub fn transition(&self, n: usize) -> [[f64; 4]; 2] {
        block_transition(&self.to_f32_block(), n)
    }

    /// Exact impulse response of the designed filter at offset `n` (f64, closed form).
    #[cfg(test)]
    pub fn impulse_response(&self, n: i64) -> f64 {
        let m = n.unsigned_abs() as f64;
        let scale = {
            let s = &self.sections[0];
            s.n0 / TERMS[0].0
        };
        TERMS
            .iter()
            .map(|&(alpha, beta, b, omega)| {
                let t = omega * m / self.sigma;
                (alpha * t.cos() + beta * t.sin()) * (-b * m / self.sigma).exp()
            })
            .sum::<f64>()
            * scale
    }
}

/// A block's poles with a numerator of 1 (`n0 = m1 = 1`, `n1 = m2 = 0`): what the shares and
/// the reach of the difference form are computed from, whose sections feed the differences to
/// their poles alone (`RecursiveGaussian::to_f32_difference_block`).
pub fn pole_block(block: &[f32; 2 * SECTION_FLOATS]) -> [f32; 2 * SECTION_FLOATS] {
    let mut out = *block;
    for chunk in out.chunks_exact_mut(SECTION_FLOATS) {
        chunk[..4].copy_from_slice(&[1.0, 0.0, 1.0, 0.0]);
        chunk[6] = 0.0;
    }
    out
}

/// The largest output weight of a difference-form block (`|cw| + |cd|` or `|aw| + |ad|`): how
/// much an error of the all-pole state can weigh in the output.
pub fn largest_output_weight(block: &[f32; 2 * SECTION_FLOATS]) -> f64 {
    block
        .chunks_exact(SECTION_FLOATS)
        .flat_map(|c| [c[0].abs() + c[1].abs(), c[2].abs() + c[3].abs()])
        .fold(0.0, f32::max) as f64
}

/// `RecursiveGaussian::transition` of the f32 coefficient block itself.
pub fn block_transition(block: &[f32; 2 * SECTION_FLOATS], n: usize) -> [[f64; 4]; 2] {
    [0, 1].map(|s| {
        let (eps, q) = (
            block[s * SECTION_FLOATS + 4] as f64,
            block[s * SECTION_FLOATS + 5] as f64,
        );
        // d' = -eps y + (1 - q) d;  y' = y + d'
        let step = [1.0 - eps, 1.0 - q, -eps, 1.0 - q];
        mat_pow(step, n)
    })
}

/// What each input of a chunk contributes to the anticausal state the chunk hands on, so
/// that a summary is a weighted sum instead of a walk backwards (a sum has no chain of
/// dependent steps). Walking rows `n - 1 .. 0` from a zero state, where the step of row `j`
/// takes `w_j = m1 x[j+1] + m2 x[j+2]`, leaves `sum_j T^j e w_j` at row 0 (`T` a section's
/// `(y, d)` transition, `e = (1, 1)`), so input `x[i]` weighs `m1 g[i-1] + m2 g[i-2]` with
/// `g[j] = T^j e` (and `g` of a negative index 0). Each weight is `(y, d)` of section a, then
/// of section b; computed in f64 from the f32 block.
pub struct AnticausalShares {
    /// The weight of `x[i]` for `i = 0 ..= n`.
    pub full: Vec<[f64; 4]>,
    /// `m2 g[j]` for `j < n`: the weight of `x[j + 2]` when the chunk is `j + 1` long (its
    /// last input feeds only through `m2`).
    pub tail: Vec<[f64; 4]>,
}

pub fn anticausal_shares(block: &[f32; 2 * SECTION_FLOATS], n: usize) -> AnticausalShares {
    let ((m1a, m2a), (m1b, m2b)) = (pair(block, 0, 2), pair(block, 1, 2));
    let g = unit_responses(block, n);
    let g_of = |j: isize| if j < 0 { [0.0; 4] } else { g[j as usize] };
    let full = (0..=n as isize)
        .map(|i| weigh(((m1a, m2a), (m1b, m2b)), g_of(i - 1), g_of(i - 2)))
        .collect();
    let tail = g[..n].iter().map(|gj| scale((m2a, m2b), gj)).collect();
    AnticausalShares { full, tail }
}

/// What each input of a chunk contributes to the causal state the chunk hands on: the causal
/// zero-state summary as a weighted sum, like `anticausal_shares`. Walking rows `0 .. n - 1`
/// from a zero state, where the step of row `i` takes `u_i = n0 x[i] + n1 x[i-1]`, leaves
/// `sum_i T^(n-1-i) e u_i` at row `n - 1`, so the input `r` rows before the chunk's end,
/// `x[n-1-r]`, weighs `n0 g[r] + n1 g[r-1]`, and the input before the chunk, `x[-1]`, weighs
/// `n1 g[n-1]`. Indexed by the distance from the chunk's end, one table serves every chunk
/// length up to `n`. Each weight is `(y, d)` of section a, then of section b; f64 from the f32
/// block.
pub struct CausalShares {
    /// The weight of `x[len-1-r]` for `r = 0 .. n`, whatever the chunk's length `len <= n`.
    pub full: Vec<[f64; 4]>,
    /// `n1 g[j]` for `j < n`: the weight of `x[-1]` when the chunk is `j + 1` long.
    pub head: Vec<[f64; 4]>,
}

pub fn causal_shares(block: &[f32; 2 * SECTION_FLOATS], n: usize) -> CausalShares {
    let ((n0a, n1a), (n0b, n1b)) = (pair(block, 0, 0), pair(block, 1, 0));
    let g = unit_responses(block, n);
    let full = (0..n)
        .map(|r| {
            let before = if r == 0 { [0.0; 4] } else { g[r - 1] };
            weigh(((n0a, n1a), (n0b, n1b)), g[r], before)
        })
        .collect();
    let head = g[..n].iter().map(|gj| scale((n1a, n1b), gj)).collect();
    CausalShares { full, head }
}

/// `c0 g + c1 h` per section: `(y, d)` of section a from its pair of coefficients, then b's.
fn weigh(((a0, a1), (b0, b1)): ((f64, f64), (f64, f64)), g: [f64; 4], h: [f64; 4]) -> [f64; 4] {
    [
        a0 * g[0] + a1 * h[0],
        a0 * g[1] + a1 * h[1],
        b0 * g[2] + b1 * h[2],
        b0 * g[3] + b1 * h[3],
    ]
}

/// `g` with section a's `(y, d)` times `a` and section b's times `b`.
fn scale((a, b): (f64, f64), g: &[f64; 4]) -> [f64; 4] {
    [a * g[0], a * g[1], b * g[2], b * g[3]]
}

/// Coefficients `at` and `at + 1` of section `s` of the block, as f64.
fn pair(block: &[f32; 2 * SECTION_FLOATS], s: usize, at: usize) -> (f64, f64) {
    (
        block[s * SECTION_FLOATS + at] as f64,
        block[s * SECTION_FLOATS + at + 1] as f64,
    )
}

/// `g[j] = T^j e` for `j = 0 ..= n`, per section (`T` the `(y, d)` transition, `e = (1, 1)`):
/// the state `j` steps after a unit input, which every share is made of. Alone, they are the
/// shares of a section's poles without its numerator (the CPU blur's form).
pub fn unit_responses(block: &[f32; 2 * SECTION_FLOATS], n: usize) -> Vec<[f64; 4]> {
    let steps = block_transition(block, 1);
    let mut g = Vec::with_capacity(n + 1);
    let mut v: [[f64; 2]; 2] = [[1.0, 1.0], [1.0, 1.0]];
    for _ in 0..=n {
        g.push([v[0][0], v[0][1], v[1][0], v[1][1]]);
        if v.iter().flatten().all(|x| x.abs() < NEGLIGIBLE) {
            // What is left is zero to any precision the filter has; walking on into
            // subnormal numbers costs some CPUs a hundred times a normal step.
            g.resize(n + 1, [0.0; 4]);
            break;
        }
        v = [0, 1].map(|s| {
            let t = steps[s];
            [
                t[0] * v[s][0] + t[1] * v[s][1],
                t[2] * v[s][0] + t[3] * v[s][1],
            ]
        });
    }
    g
}

/// A response this small, relative to a unit start, is taken as zero: far below anything an
/// f32 image or an f64 bound can tell apart from it, and far above the subnormal numbers
/// (below 2.2e-308) whose arithmetic takes microcode assists on many x86 CPUs (measured on
/// an H200 host: the overlap reach of a 3000-row column took 3.6 ms walking into them,
/// against 0.1 ms for a 1500-row one).
const NEGLIGIBLE: f64 = 1e-200;

fn mat_mul(a: [f64; 4], b: [f64; 4]) -> [f64; 4] {
    [
        a[0] * b[0] + a[1] * b[2],
        a[0] * b[1] + a[1] * b[3],
        a[2] * b[0] + a[3] * b[2],
        a[2] * b[1] + a[3] * b[3],
    ]
}

pub(crate) fn mat_pow(mut m: [f64; 4], mut n: usize) -> [f64; 4] {
    let mut out = [1.0, 0.0, 0.0, 1.0];
    while n > 0 {
        if n & 1 == 1 {
            out = mat_mul(out, m);
        }
        m = mat_mul(m, m);
        n >>= 1;
    }
    out
}

/// How far outside a stretch of a line a walk must start, from a zero state, for the stretch
/// to come out as if the walk had started at the line's end: the overlapped chunks of
/// kernels/recursive_blocks.cl (`block_overlap`) sum this many rows before and after their
/// chunk (a zero-state summary, the same as such a walk) instead of reading carried states.
///
/// Starting from zero instead of the true state is an error `D` of each section's `(y, d)`,
/// the response to the rows before the start: per component at most `V c sum_i |g[i]|`,
/// where `V` bounds the inputs (less the walk's offset), `c` is the larger of `|n0| + |n1|`
/// and `|m1| + |m2|`, and `g[i] = T^i e` (`unit_responses`). `m` rows later it reaches the
/// output as the `y` row of `T^m D`. The reach is the least `m` from which that bound, summed
/// over both sections and taken over every later row, stays within `tolerance × V`. `None`
/// when it is more than `limit` rows (poles too close to 1: large sigmas).
pub fn settle_rows(
    block: &[f32; 2 * SECTION_FLOATS],
    tolerance: f64,
    limit: usize,
) -> Option<usize> {
    // The walks below run until the poles' response is below 1e-18 of where it started; past
    // `limit` that cannot settle within it anyway.
    let span = 4 * limit + 64;
    let g = unit_responses(block, span);
    let steps = block_transition(block, 1);
    let mut bound = vec![0.0; span];
    for s in 0..2 {
        let c = |k: usize| block[s * SECTION_FLOATS + k].abs() as f64;
        let numerator = (c(0) + c(1)).max(c(2) + c(3));
        let (size_y, size_d) = g.iter().fold((0.0, 0.0), |(y, d), gi| {
            (y + gi[2 * s].abs(), d + gi[2 * s + 1].abs())
        });
        // The y row of T^m, walked one step at a time: (a, b) <- (a, b) T.
        let t = steps[s];
        let (mut a, mut b) = (1.0f64, 0.0f64);
        for slot in bound.iter_mut() {
            if a.abs() + b.abs() < NEGLIGIBLE {
                // The rest adds nothing (see `unit_responses`).
                break;
            }
            *slot += numerator * (a.abs() * size_y + b.abs() * size_d);
            (a, b) = (a * t[0] + b * t[2], a * t[1] + b * t[3]);
        }
    }
    if bound[span - 1] > tolerance * 1e-6 {
        return None;
    }
    // The least m after which every row's bound is within the tolerance.
    let mut m = span;
    while m > 0 && bound[m - 1] <= tolerance {
        m -= 1;
    }
    (m <= limit).then_some(m)
}

/// Normalised sampled Gaussian taps `g[-r..=r]`: the reference every accuracy figure is
/// measured against, and the FIR kernel's taps.
pub fn sampled_gaussian(sigma: f64, radius: usize) -> Vec<f64> {
    let r = radius as i64;
    // (k / sigma)^2 rather than k^2 / sigma^2: for sigma below ~1e-154, sigma^2 is 0 and the
    // centre tap would be 0/0 = NaN, blurring every image to black (the `filter` fuzz target
    // checks it). This way the centre is exactly 1 and the others 0: the identity.
    let raw: Vec<f64> = (-r..=r)
        .map(|k| (-0.5 * (k as f64 / sigma).powi(2)).exp())
        .collect();
    let sum: f64 = raw.iter().sum();
    raw.into_iter().map(|v| v / sum).collect()
}

/// FIR radius used for `sigma`.
pub fn fir_radius(sigma: f64) -> usize {
    (FIR_RADIUS_SIGMAS * sigma).ceil().max(1.0) as usize
}

/// FIR radius for `sigma` cut at `truncate` sigmas, rounded as scipy.ndimage's
/// `gaussian_filter(truncate=..)` rounds it (`int(truncate * sigma + 0.5)`), at least 1.
pub fn truncated_radius(sigma: f64, truncate: f64) -> usize {
    (truncate * sigma + 0.5).floor().max(1.0) as usize
}

/// f32 FIR taps for `sigma`, length `2 * fir_radius(sigma) + 1`.
pub fn fir_taps(sigma: f64) -> Vec<f32> {
    fir_taps_radius(sigma, fir_radius(sigma))
}

/// f32 FIR taps for `sigma` reaching `radius` samples each side.
pub fn fir_taps_radius(sigma: f64, radius: usize) -> Vec<f32> {
    sampled_gaussian(sigma, radius)
        .into_iter()
        .map(|v| v as f32)
        .collect()
}

/// Relative L1 distance between the designed recursive filter's impulse response and the
/// normalised sampled Gaussian: the worst-case relative error of any output.
#[cfg(test)]
pub fn design_error(sigma: f64) -> f64 {
    let g = RecursiveGaussian::new(sigma);
    let radius = (12.0 * sigma).ceil() as usize + 8;
    let reference = sampled_gaussian(sigma, radius);
    let r = radius as i64;
    (-r..=r)
        .zip(&reference)
        .map(|(n, want)| (g.impulse_response(n) - want).abs())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dc_gain_is_one() {
        for sigma in [0.5, 1.0, 3.0, 50.0, 400.0, 5000.0] {
            let g = RecursiveGaussian::new(sigma);
            let dc: f64 = g
                .sections
                .iter()
                .map(|s| s.causal_gain() + s.anticausal_gain())
                .sum();
            assert!((dc - 1.0).abs() < 1e-12, "sigma {sigma}: dc {dc}");
        }
    }

    #[test]
    fn impulse_response_sums_to_one() {
        for sigma in [1.0, 7.5, 60.0] {
            let g = RecursiveGaussian::new(sigma);
            let r = (20.0 * sigma) as i64;
            let sum: f64 = (-r..=r).map(|n| g.impulse_response(n)).sum();
            assert!((sum - 1.0).abs() < 1e-9, "sigma {sigma}: sum {sum}");
        }
    }

    #[test]
    fn design_matches_sampled_gaussian() {
        // Deriche's 4th-order fit: about 5.5e-4 relative L1 for sigma >= 2 (Getreuer 2013).
        for sigma in [2.0, 5.0, 30.0, 400.0] {
            let e = design_error(sigma);
            assert!(e < 7e-4, "sigma {sigma}: {e}");
        }
        assert!(design_error(1.0) < 1e-3);
    }

    #[test]
    fn coefficients_match_the_direct_form() {
        // eps must equal 1 - d1 - d2 of the textbook form with d1 = 2 r cos w, d2 = -r^2.
        let sigma = 3.0;
        let g = RecursiveGaussian::new(sigma);
        for (s, &(_, _, b, omega)) in g.sections.iter().zip(&TERMS) {
            let r = (-b / sigma).exp();
            let d1 = 2.0 * r * (omega / sigma).cos();
            assert!((s.eps - (1.0 - d1 + r * r)).abs() < 1e-14);
            assert!((s.q - (1.0 - r * r)).abs() < 1e-15);
        }
    }

    #[test]
    fn transition_is_the_zero_input_recursion() {
        let g = RecursiveGaussian::new(4.0);
        let t = g.transition(7);
        for (s, m) in g.sections.iter().zip(t) {
            let (eps, q) = (s.eps as f32 as f64, s.q as f32 as f64);
            let (mut y, mut d) = (0.3, -0.2);
            for _ in 0..7 {
                d = -eps * y + (d - q * d);
                y += d;
            }
            assert!((m[0] * 0.3 + m[1] * -0.2 - y).abs() < 1e-12);
            assert!((m[2] * 0.3 + m[3] * -0.2 - d).abs() < 1e-12);
        }
    }

    /// A few inputs that are not smooth, so that a weight shifted by one row shows.
    fn wiggle(i: isize) -> f64 {
        ((i * 7919) % 23) as f64 / 11.0 - 1.0 + 0.01 * i as f64
    }

    /// Both zero-state summaries of a chunk of `len` rows, walked step by step in f64 with
    /// the block's coefficients: causal at its last row, anticausal at its first; inputs
    /// `wiggle(-1 ..= len + 1)`.
    fn walked_summaries(block: &[f32; 2 * SECTION_FLOATS], len: usize) -> [[f64; 4]; 2] {
        let x = |i: isize| wiggle(i);
        let mut out = [[0.0; 4]; 2];
        for s in 0..2 {
            let c = |k: usize| block[s * SECTION_FLOATS + k] as f64;
            let (n0, n1, m1, m2, eps, q) = (c(0), c(1), c(2), c(3), c(4), c(5));
            let (mut y, mut d) = (0.0, 0.0);
            for i in 0..len as isize {
                d = n0 * x(i) + n1 * x(i - 1) - eps * y + (d - q * d);
                y += d;
            }
            out[0][2 * s..2 * s + 2].copy_from_slice(&[y, d]);
            let (mut y, mut d) = (0.0, 0.0);
            for i in (0..len as isize).rev() {
                d = m1 * x(i + 1) + m2 * x(i + 2) - eps * y + (d - q * d);
                y += d;
            }
            out[1][2 * s..2 * s + 2].copy_from_slice(&[y, d]);
        }
        out
    }

    #[test]
    fn shares_are_the_walked_summaries() {
        // Every chunk length up to the tables' own, from the same tables: the causal weights
        // counted from the chunk's end, the anticausal ones from its start.
        for (sigma, n) in [(1.5, 32), (5.0, 64), (250.0, 128)] {
            let block = RecursiveGaussian::new(sigma).to_f32_block();
            let (c, a) = (causal_shares(&block, n), anticausal_shares(&block, n));
            for len in [1, 2, 3, n / 2 + 1, n - 1, n] {
                let want = walked_summaries(&block, len);
                let causal = |e: usize| {
                    (0..len)
                        .map(|i| c.full[len - 1 - i][e] * wiggle(i as isize))
                        .sum::<f64>()
                        + c.head[len - 1][e] * wiggle(-1)
                };
                let anticausal = |e: usize| {
                    (0..=len)
                        .map(|i| a.full[i][e] * wiggle(i as isize))
                        .sum::<f64>()
                        + a.tail[len - 1][e] * wiggle(len as isize + 1)
                };
                let got = [
                    std::array::from_fn::<f64, 4, _>(causal),
                    std::array::from_fn(anticausal),
                ];
                for (g, w) in got.iter().flatten().zip(want.iter().flatten()) {
                    let scale = w.abs().max(1.0);
                    assert!(
                        (g - w).abs() < 1e-9 * scale,
                        "sigma {sigma}, chunk {n}, len {len}: {got:?} vs {want:?}"
                    );
                }
            }
        }
    }

    /// Walks started `settle_rows` rows early from a zero state agree with walks from the
    /// line's start to the tolerance, on inputs that swing over the whole range (offset by the
    /// first, as the kernels do); and the reach grows with sigma as the poles do.
    #[test]
    fn walks_settle_within_the_reach() {
        let tolerance = 2f64.powi(-24);
        let mut last = 0;
        for sigma in [0.7, 2.0, 5.0, 11.0, 30.0] {
            let block = RecursiveGaussian::new(sigma).to_f32_block();
            let m = settle_rows(&block, tolerance, 4096).expect("settles");
            assert!(m > last, "sigma {sigma}: reach {m} after {last}");
            last = m;
            let x = |i: usize| if (i * 7919) % 5 < 2 { 1.0 } else { 0.0 };
            let len = 3 * m + 50;
            for s in 0..2 {
                let c = |k: usize| block[s * SECTION_FLOATS + k] as f64;
                let (n0, n1, eps, q) = (c(0), c(1), c(4), c(5));
                // Causal, from the line's start (x[-1] = x[0], the offset) and from a zero
                // state m rows before row 2m, with the true input before it.
                let u = |i: usize| x(i) - x(0);
                let walk = |from: usize| {
                    let (mut y, mut d) = (0.0, 0.0);
                    let mut xp = u(from.max(1) - 1);
                    (from..len)
                        .map(|i| {
                            d = n0 * u(i) + n1 * xp - eps * y + (d - q * d);
                            y += d;
                            xp = u(i);
                            y
                        })
                        .collect::<Vec<f64>>()
                };
                let (whole, late) = (walk(0), walk(m));
                let worst = (2 * m..len)
                    .map(|i| (whole[i] - late[i - m]).abs())
                    .fold(0.0, f64::max);
                assert!(worst <= tolerance, "sigma {sigma}, section {s}: {worst:e}");
            }
        }
        assert!(
            settle_rows(&RecursiveGaussian::new(5.0).to_f32_block(), tolerance, 4096)
                .is_some_and(|m| m < 80)
        );
        assert_eq!(
            settle_rows(
                &RecursiveGaussian::new(400.0).to_f32_block(),
                tolerance,
                256
            ),
            None
        );
    }

    /// Both forms of a line, in f64 with each block's own coefficients: the direct form on
    /// `x − x[0]` (causal from zero, anticausal from its steady state) plus `x[0]`, and the
    /// difference form (poles on the differences, numerators on the poles' state) plus `x`.
    #[allow(clippy::needless_range_loop)] // both walks index the input and the outputs
    fn both_forms(sigma: f64, x: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let g = RecursiveGaussian::new(sigma);
        let (direct, diff) = (g.to_f32_block(), g.to_f32_difference_block());
        let n = x.len();
        let (mut a, mut b) = (vec![x[0]; n], x.to_vec());
        for s in 0..2 {
            let c = |blk: &[f32; 16], k: usize| blk[s * SECTION_FLOATS + k] as f64;
            let (eps, q) = (c(&direct, 4), c(&direct, 5));
            let u = |i: isize| x[i.clamp(0, n as isize - 1) as usize] - x[0];
            let (mut y, mut d) = (0.0, 0.0);
            for i in 0..n {
                d = c(&direct, 0) * u(i as isize) + c(&direct, 1) * u(i as isize - 1) - eps * y
                    + (d - q * d);
                y += d;
                a[i] += y;
            }
            let (mut y, mut d) = (c(&direct, 6) * u(n as isize), 0.0);
            for i in (0..n).rev() {
                let i = i as isize;
                d = c(&direct, 2) * u(i + 1) + c(&direct, 3) * u(i + 2) - eps * y + (d - q * d);
                y += d;
                a[i as usize] += y;
            }
            let dx = |i: isize| u(i) - u(i - 1);
            let (mut w, mut d) = (0.0, 0.0);
            for i in 0..n {
                d = dx(i as isize) - eps * w + (d - q * d);
                w += d;
                b[i] += c(&diff, 0) * w + c(&diff, 1) * d;
            }
            let (mut w, mut d) = (0.0, 0.0);
            for i in (0..n).rev() {
                d = dx(i as isize + 1) - eps * w + (d - q * d);
                w += d;
                b[i] += c(&diff, 2) * w + c(&diff, 3) * d;
            }
        }
        (a, b)
    }

    #[test]
    fn the_difference_form_is_the_same_filter() {
        for sigma in [0.5, 3.0, 40.0, 400.0] {
            let x: Vec<f64> = (0..3000)
                .map(|i| wiggle(i) + 5.0 * ((i / 700) % 2) as f64)
                .collect();
            let (a, b) = both_forms(sigma, &x);
            let worst = a
                .iter()
                .zip(&b)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            // The blocks' f32 rounding, through poles whose gain grows as sigma squared.
            assert!(
                worst < 1e-5 * (1.0 + sigma * sigma / 100.0),
                "sigma {sigma}: {worst:e}"
            );
        }
    }

    #[test]
    fn fir_taps_are_normalised_and_symmetric() {
        let taps = fir_taps(1.5);
        assert_eq!(taps.len(), 2 * 8 + 1);
        let sum: f32 = taps.iter().sum();
        assert!((sum - 1.0).abs() < 1e-6);
        for i in 0..taps.len() / 2 {
            assert_eq!(taps[i], taps[taps.len() - 1 - i]);
        }
    }
}

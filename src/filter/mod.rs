//! What to run along one axis: the recursive Gaussian or the sampled FIR, chosen from sigma,
//! with the f32 data (coefficient block or taps) that the Rust and OpenCL paths both consume.

pub mod derivative;
mod edge;
pub mod gaussian;

pub use edge::EdgeMode;

use gaussian::RecursiveGaussian;
use serde::Serialize;

/// Which filter runs along an axis.
///
/// ```
/// use gblur::{Gaussian, Method};
///
/// // Small sigmas take the exactly sampled kernel by default; the recursive filter can be
/// // forced, at the same cost for any sigma.
/// assert_eq!(Gaussian::new(1.0)?.method_name(), "fir");
/// let g = Gaussian::builder().sigma(1.0).method(Method::Recursive).build()?;
/// assert_eq!(g.method_name(), "recursive");
/// # Ok::<(), gblur::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// The recursive filter from sigma 2 up, the FIR below it, where the FIR is the more
    /// accurate of the two (the recursive filter's error grows as sigma shrinks: 8e-4 at 1,
    /// 1.5e-2 at 0.5).
    Auto,
    /// Deriche's 4th-order recursive Gaussian at every sigma: the same cost per sample at
    /// any sigma, within 5.7e-4 of the sampled Gaussian from sigma 2 to 3000.
    Recursive,
    /// The exactly sampled Gaussian as a finite kernel (radius ⌈5σ⌉ unless truncated): exact
    /// to f32 rounding, at a cost that grows with sigma (up to sigma 1000).
    Fir,
}

/// A resolved 1D filter for one axis.
#[derive(Clone, Debug, PartialEq)]
pub enum LineFilter {
    Recursive {
        sigma: f64,
        /// The sections on the input itself (`RecursiveGaussian::to_f32_block`): the banded
        /// blur's for 8- and 16-bit samples, where the output's rounding absorbs a few ulps.
        /// Only for order 0: the image paths that read it take the Gaussian alone.
        coefficients: [f32; 2 * gaussian::SECTION_FLOATS],
        /// The sections on the input's first differences
        /// (`RecursiveGaussian::to_f32_difference_block`): every path with f32 output, which
        /// keeps a constant region bit for bit.
        differences: [f32; 2 * gaussian::SECTION_FLOATS],
        /// The Gaussian's derivative it takes: 0 (the Gaussian), 1 or 2 (`nd::Filter`
        /// only; the image paths take 0).
        order: u8,
        /// A second pair of sections run on the same input, whose output is added: the second
        /// derivative's 8th-order design. None for the others.
        second: Option<[f32; 2 * gaussian::SECTION_FLOATS]>,
    },
    Fir {
        sigma: f64,
        /// Taps in the order the kernels weigh the samples, from `radius` before the output to
        /// `radius` after (the sampled kernel reversed: the same, but for the odd first
        /// derivative).
        taps: Vec<f32>,
        /// As for `Recursive`.
        order: u8,
    },
}

impl LineFilter {
    /// The filter for `sigma` (0: `identity`).
    pub fn new(method: Method, sigma: f64) -> Self {
        if sigma == 0.0 {
            return LineFilter::identity();
        }
        let recursive = match method {
            Method::Auto => sigma >= gaussian::FIR_BELOW_SIGMA,
            Method::Recursive => true,
            Method::Fir => false,
        };
        if recursive {
            LineFilter::recursive(sigma, 0)
        } else {
            LineFilter::Fir {
                sigma,
                taps: gaussian::fir_taps(sigma),
                order: 0,
            }
        }
    }

    /// The recursive filter of the Gaussian's derivative of `order` (0, 1 or 2) at `sigma`.
    pub fn recursive(sigma: f64, order: u8) -> Self {
        // The Gaussian itself, or the derivative's two filters, run on the same input and added.
        let designs = match order {
            0 => vec![RecursiveGaussian::new(sigma)],
            _ => derivative::design(sigma, order),
        };
        LineFilter::Recursive {
            sigma,
            coefficients: designs[0].to_f32_block(),
            differences: designs[0].to_f32_difference_block(),
            order,
            second: designs.get(1).map(|d| d.to_f32_difference_block()),
        }
    }

    /// scipy's sampled kernel of the Gaussian's derivative of `order` at `sigma`, reaching
    /// `radius` samples each side.
    pub fn fir(sigma: f64, radius: usize, order: u8) -> Self {
        let taps = derivative::sampled_derivative(sigma, radius, order)
            .into_iter()
            .rev()
            .map(|v| v as f32)
            .collect();
        LineFilter::Fir { sigma, taps, order }
    }

    /// The filter that keeps every sample (sigma 0): an FIR of one tap.
    pub fn identity() -> Self {
        LineFilter::Fir {
            sigma: 0.0,
            taps: vec![1.0],
            order: 0,
        }
    }

    /// The derivative this filter takes (0: the Gaussian itself).
    pub fn order(&self) -> u8 {
        match self {
            LineFilter::Recursive { order, .. } | LineFilter::Fir { order, .. } => *order,
        }
    }

    /// The weight of the input sample itself in the output, where the kernels weigh
    /// differences from it (`reference::fir_line`, the recursive difference form): the
    /// kernel's sum, 1 for the Gaussian, 0 for its odd first derivative and for the recursive
    /// second derivative, the small sum of scipy's sampled second derivative for its FIR.
    pub fn input_weight(&self) -> f32 {
        match self {
            LineFilter::Recursive { differences, .. } => differences[gaussian::INPUT_WEIGHT],
            LineFilter::Fir { order: 0, .. } => 1.0,
            LineFilter::Fir { order: 1, .. } => 0.0,
            LineFilter::Fir { taps, .. } => taps.iter().map(|&t| t as f64).sum::<f64>() as f32,
        }
    }

    /// How far the filter reaches beyond an output, in samples: the FIR's radius, or where the
    /// recursive filter's weights have fallen below 5e-5.
    pub fn reach(&self) -> usize {
        match self {
            LineFilter::Fir { taps, .. } => taps.len() / 2,
            LineFilter::Recursive {
                sigma, order: 0, ..
            } => gaussian::recursive_reach(*sigma),
            LineFilter::Recursive { sigma, order, .. } => derivative::reach(*sigma, *order),
        }
    }

    /// Whether this filter keeps every sample as it is (`identity`).
    pub fn is_identity(&self) -> bool {
        matches!(self, LineFilter::Fir { taps, .. } if taps.len() == 1)
    }

    pub fn is_recursive(&self) -> bool {
        matches!(self, LineFilter::Recursive { .. })
    }

    pub fn sigma(&self) -> f64 {
        match self {
            LineFilter::Recursive { sigma, .. } | LineFilter::Fir { sigma, .. } => *sigma,
        }
    }

    /// Short human description, e.g. `recursive`, `fir r=8` or `recursive, order 2`.
    pub fn describe(&self) -> String {
        let name = match self {
            LineFilter::Recursive { .. } => "recursive".to_string(),
            LineFilter::Fir { taps, .. } => format!("fir r={}", taps.len() / 2),
        };
        match self.order() {
            0 => name,
            order => format!("{name}, order {order}"),
        }
    }
}

/// The separable 2D blur: one filter per axis.
#[derive(Clone, Debug, PartialEq)]
pub struct Blur2d {
    /// The filter along rows.
    pub x: LineFilter,
    /// The filter along columns.
    pub y: LineFilter,
    /// How the filters were asked for, so that `subsampled` can ask again.
    pub method: Method,
    /// The FIR's radius in sigmas (None: the default).
    pub truncate: Option<f64>,
}

/// Largest sigma `--method fir` runs at. The FIR's radius is 5 sigma, so its cost per sample
/// grows with sigma (10 001 taps here) where the recursive filter's does not; above this a
/// FIR is only a way to make a run last for hours, or, at sigma 1e18, to ask for more taps
/// than memory holds (the `filter` fuzz target tries such sigmas).
pub const FIR_MAX_SIGMA: f64 = 1000.0;

impl Blur2d {
    /// The blur `method` with these sigmas, unchecked (`check_sigma` checks them).
    pub fn new(method: Method, sigma_x: f64, sigma_y: f64) -> Self {
        Self {
            x: LineFilter::new(method, sigma_x),
            y: LineFilter::new(method, sigma_y),
            method,
            truncate: None,
        }
    }

    /// The same blur for a plane sampled every `h` pixels across and `v` down (a JPEG's
    /// chroma): sigma divided by each, the filter family chosen again for the new sigmas.
    pub fn subsampled(&self, (h, v): (u32, u32)) -> Blur2d {
        Blur2d::new(
            self.method,
            self.x.sigma() / h as f64,
            self.y.sigma() / v as f64,
        )
        .with_truncate(self.truncate)
    }

    /// `new` for user input: refuses a FIR wider than `FIR_MAX_SIGMA`.
    pub fn checked(method: Method, sigma_x: f64, sigma_y: f64) -> Result<Self, String> {
        if method == Method::Fir && sigma_x.max(sigma_y) > FIR_MAX_SIGMA {
            return Err(format!(
                "--method fir supports sigma up to {FIR_MAX_SIGMA} (got {}); use --method recursive or auto",
                sigma_x.max(sigma_y)
            ));
        }
        Ok(Self::new(method, sigma_x, sigma_y))
    }

    /// The FIRs reaching `truncate` sigmas (rounded as scipy.ndimage rounds its `truncate`:
    /// radius `floor(truncate * sigma + 0.5)`, at least 1) instead of the default
    /// `gaussian::fir_radius`; None keeps the default. The recursive filter has no radius.
    pub fn with_truncate(mut self, truncate: Option<f64>) -> Self {
        self.truncate = truncate;
        if let Some(t) = truncate {
            for f in [&mut self.x, &mut self.y] {
                if let LineFilter::Fir { sigma, taps, .. } = f {
                    if *sigma == 0.0 {
                        continue;
                    }
                    *taps =
                        gaussian::fir_taps_radius(*sigma, gaussian::truncated_radius(*sigma, t));
                }
            }
        }
        self
    }

    /// `recursive`, `fir`, `recursive (x), fir (y)` or `recursive (x), none (y)` (an axis left
    /// alone) — which method actually ran.
    pub fn method_name(&self) -> String {
        let name = |f: &LineFilter| match f {
            f if f.is_identity() => "none",
            f if f.is_recursive() => "recursive",
            _ => "fir",
        };
        if name(&self.x) == name(&self.y) {
            name(&self.x).to_string()
        } else {
            format!("{} (x), {} (y)", name(&self.x), name(&self.y))
        }
    }
}

/// Largest sigma accepted: far wider than any image (the blur is already a near-constant
/// there), and far from where the recursive design degenerates (`r` rounds to 1.0 in f64 near
/// 1e17; `eps`, 3.6e-12 at 1e6, leaves f32's normal range near 1e19).
pub const MAX_SIGMA: f64 = 1e6;

/// Smallest sigma accepted: already the identity (the FIR's neighbour taps are e^-500000).
/// Far below it the recursive design breaks down: at sigma 1.4e-315 (subnormal), omega/sigma
/// overflows, the coefficients are NaN and `--method recursive` would blur to black (the
/// `filter` fuzz target covers it).
pub const MIN_SIGMA: f64 = 1e-3;

/// Largest `--truncate`: the sampled Gaussian at 20 sigma is e^-200, far below f32's
/// smallest normal value, so wider FIRs only add zero taps.
pub const MAX_TRUNCATE: f64 = 20.0;

/// The `--truncate` rule: finite, above 0, at most `MAX_TRUNCATE`.
pub fn check_truncate(v: f64) -> Result<f64, String> {
    if v.is_finite() && v > 0.0 && v <= MAX_TRUNCATE {
        Ok(v)
    } else {
        Err(format!("truncate must be a number above 0 and at most {MAX_TRUNCATE} (the FIR's radius in sigmas)"))
    }
}

/// The sigma rule every command applies: finite, from `MIN_SIGMA` to `MAX_SIGMA`.
pub fn check_sigma(v: f64) -> Result<f64, String> {
    if v.is_finite() && (MIN_SIGMA..=MAX_SIGMA).contains(&v) {
        Ok(v)
    } else {
        Err("sigma must be a number from 0.001 to 1000000".into())
    }
}

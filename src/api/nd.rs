//! The Gaussian over N-D arrays, with scipy.ndimage's contract: a sigma per axis (0 leaves
//! that axis alone), an edge mode per axis, a constant for the constant mode, and `truncate`
//! or `radius` for where scipy cuts its kernel.
//!
//! ```
//! use gblur::nd::Filter;
//! use gblur::EdgeMode;
//!
//! // A 3-D volume (z, y, x), blurred with sigma 2 along z and 4 along y and x.
//! let shape = [16, 64, 64];
//! let mut volume = vec![0f32; 16 * 64 * 64];
//! volume[8 * 64 * 64 + 32 * 64 + 32] = 1.0;
//! Filter::new(&[2.0, 4.0, 4.0])?
//!     .mode(EdgeMode::Reflect)
//!     .apply(&mut volume, &shape)?;
//! let total: f32 = volume.iter().sum();
//! assert!((total - 1.0).abs() < 1e-4);
//! # Ok::<(), gblur::Error>(())
//! ```
//!
//! Which filter runs along an axis: the recursive Gaussian (cost independent of sigma, within
//! 1e-3 of scipy's result relative to the data's range at scipy's default `truncate` of 4 and
//! beyond) wherever scipy's kernel reaches at least 4 sigma; the exactly sampled FIR, cut and
//! normalised as scipy cuts it, below sigma 2 and wherever `truncate` or `radius` cut it
//! shorter, since a kernel cut that short is no longer close to a Gaussian.

pub mod carry;
mod derived;

use super::gaussian::check_sigma;
use super::Error;
use crate::cpu::axis::steps::Step;
use crate::cpu::axis::{self, AxisFilter};
use crate::filter::derivative::MAX_ORDER;
use crate::filter::gaussian::FIR_BELOW_SIGMA;
use crate::filter::{EdgeMode, LineFilter, Method, FIR_MAX_SIGMA, MAX_TRUNCATE};
use rayon::prelude::*;

mod private {
    /// Keeps `Element` to the types the engine implements.
    pub trait Sealed: crate::cpu::axis::Element {}
    impl Sealed for u8 {}
    impl Sealed for u16 {}
    impl Sealed for i16 {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// A sample type of an array: `u8`, `u16`, `i16`, `f32` or `f64`. The filter runs in f32;
/// integer results are rounded to the nearest value and clamped to the type's range.
///
/// ```
/// use gblur::nd::{Element, Filter};
///
/// // Code generic over the array types the filter takes.
/// fn smooth<T: Element>(data: &mut [T], shape: &[usize]) -> Result<(), gblur::Error> {
///     Filter::new(&vec![2.0; shape.len()])?.apply(data, shape)
/// }
/// smooth(&mut vec![0u16; 64 * 64], &[64, 64])?;
/// smooth(&mut vec![0f64; 8 * 8 * 8], &[8, 8, 8])?;
/// # Ok::<(), gblur::Error>(())
/// ```
pub trait Element: private::Sealed {}
impl Element for u8 {}
impl Element for u16 {}
impl Element for i16 {}
impl Element for f32 {}
impl Element for f64 {}

/// The largest sigma at which an array filtered into 16-bit integers (`u16`, `i16`) runs
/// scipy's sampled kernel under [`Method::Auto`]: its results are then within 1 level of
/// scipy's float64 result rounded, where the recursive filter's error (up to ~1e-4 of the
/// range at sharp edges, plus scipy's cut at 4 sigma, which it does not make) shows as up to
/// 10–17 levels. The kernel's cost grows with sigma: at 50, about 9 times the recursive
/// filter's on 2 cores (still far under scipy's). Above it the recursive filter runs.
///
/// ```
/// use gblur::nd::{Filter, EXACT_16_BIT_SIGMA};
///
/// // A step of full range: within a level of the exact result at sigma 20.
/// let mut step: Vec<u16> = (0..400).map(|i| if i < 200 { 0 } else { 65535 }).collect();
/// Filter::new(&[20.0])?.apply(&mut step, &[400])?;
/// assert!(EXACT_16_BIT_SIGMA >= 50.0);
/// assert!(step[200].abs_diff(33421) <= 1); // scipy: 33421.2 rounded
/// # Ok::<(), gblur::Error>(())
/// ```
pub const EXACT_16_BIT_SIGMA: f64 = 50.0;

/// scipy's default `truncate`: its kernels reach 4 sigma.
///
/// ```
/// use gblur::nd::{Filter, SCIPY_TRUNCATE};
///
/// // scipy's default, spelled out: the same filter as Filter::new alone.
/// let f = Filter::new(&[1.0])?.truncate(SCIPY_TRUNCATE);
/// assert_eq!(f, Filter::new(&[1.0])?);
/// # Ok::<(), gblur::Error>(())
/// ```
pub const SCIPY_TRUNCATE: f64 = 4.0;

/// The Gaussian over an N-D array: one sigma per axis, checked when made; the edge modes,
/// constant and kernel cut set after.
///
/// ```
/// use gblur::{nd::Filter, EdgeMode};
///
/// // A time series of 2-D frames (t, y, x): blurred in space only, with a constant border.
/// let shape = [4, 64, 64];
/// let mut frames = vec![1f32; 4 * 64 * 64];
/// Filter::new(&[0.0, 2.0, 2.0])?
///     .mode(EdgeMode::Constant(0.0))
///     .cval(0.0)
///     .apply(&mut frames, &shape)?;
/// assert!(frames[0] < 1.0); // a corner, next to the zero border
/// assert!((frames[32 * 64 + 32] - 1.0).abs() < 1e-4); // the middle of a frame
/// # Ok::<(), gblur::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Filter {
    sigma: Vec<f64>,
    modes: Vec<EdgeMode>,
    cval: f64,
    truncate: f64,
    radius: Option<Vec<usize>>,
    method: Method,
    orders: Vec<u8>,
}

impl Filter {
    /// One sigma per axis of the arrays it will blur, in samples; 0 leaves an axis alone.
    /// The defaults are scipy's: mode reflect, constant 0, truncate 4.
    ///
    /// ```
    /// let filter = gblur::nd::Filter::new(&[1.0, 3.0, 3.0])?; // (z, y, x)
    /// assert_eq!(filter.describe()?.len(), 3);
    /// assert!(gblur::nd::Filter::new(&[f64::NAN]).is_err());
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn new(sigma: &[f64]) -> Result<Filter, Error> {
        for (i, &s) in sigma.iter().enumerate() {
            check_sigma(s, &format!("axis {i}"))?;
        }
        Ok(Filter {
            sigma: sigma.to_vec(),
            modes: vec![EdgeMode::Reflect; sigma.len()],
            cval: 0.0,
            truncate: SCIPY_TRUNCATE,
            radius: None,
            method: Method::Auto,
            orders: vec![0; sigma.len()],
        })
    }

    /// The same edge mode on every axis.
    ///
    /// ```
    /// use gblur::{nd::Filter, EdgeMode};
    ///
    /// let mut line = vec![0f32, 0.0, 0.0, 0.0, 9.0];
    /// Filter::new(&[1.0])?.mode(EdgeMode::Wrap).apply(&mut line, &[5])?;
    /// assert!(line[0] > line[2]); // the peak at the end wraps around to the start
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn mode(mut self, mode: EdgeMode) -> Self {
        self.modes = vec![mode; self.sigma.len()];
        self
    }

    /// One edge mode per axis (checked against the rank when applied).
    ///
    /// ```
    /// use gblur::{nd::Filter, EdgeMode};
    ///
    /// let mut image = vec![0f32; 32 * 48];
    /// Filter::new(&[2.0, 2.0])?
    ///     .modes(&[EdgeMode::Reflect, EdgeMode::Wrap]) // (y, x)
    ///     .apply(&mut image, &[32, 48])?;
    /// let wrong_rank = Filter::new(&[2.0, 2.0])?.modes(&[EdgeMode::Reflect]);
    /// assert!(wrong_rank.apply(&mut image, &[32, 48]).is_err());
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn modes(mut self, modes: &[EdgeMode]) -> Self {
        self.modes = modes.to_vec();
        self
    }

    /// The value beyond the edges of an axis whose mode is [`EdgeMode::Constant`], in the
    /// array's own units (the mode's own value is not used here).
    ///
    /// ```
    /// use gblur::{nd::Filter, EdgeMode};
    ///
    /// let mut line = vec![10f32; 16];
    /// Filter::new(&[2.0])?.mode(EdgeMode::Constant(0.0)).cval(10.0).apply(&mut line, &[16])?;
    /// assert!(line.iter().all(|v| (v - 10.0).abs() < 1e-3)); // 10 beyond the edges too
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn cval(mut self, cval: f64) -> Self {
        self.cval = cval;
        self
    }

    /// Where scipy cuts its kernel, in sigmas (default 4): at 4 or more the recursive
    /// filter runs; below, the FIR cut there, as scipy computes it.
    ///
    /// ```
    /// use gblur::nd::Filter;
    ///
    /// // Below 4 sigmas scipy's cut kernel runs, as scipy computes it.
    /// let cut = Filter::new(&[2.0])?.truncate(2.0);
    /// assert_eq!(cut.describe()?, vec![Some("fir r=4".to_string())]);
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn truncate(mut self, truncate: f64) -> Self {
        self.truncate = truncate;
        self
    }

    /// scipy's `radius`: the kernel's half-width per axis, overriding `truncate`.
    ///
    /// ```
    /// use gblur::nd::Filter;
    ///
    /// let f = Filter::new(&[3.0])?.radius(&[5]);
    /// assert_eq!(f.reach()?, vec![5]);
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn radius(mut self, radius: &[usize]) -> Self {
        self.radius = Some(radius.to_vec());
        self
    }

    /// Forces a filter family: [`Method::Fir`] runs scipy's own kernel at every sigma (its
    /// cost grows with sigma), [`Method::Recursive`] the recursive filter even where scipy's
    /// kernel is cut short.
    ///
    /// ```
    /// use gblur::{nd::Filter, Method};
    ///
    /// let f = Filter::new(&[2.0])?.method(Method::Fir);
    /// assert_eq!(f.describe()?, vec![Some("fir r=8".to_string())]);
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn method(mut self, method: Method) -> Self {
        self.method = method;
        self
    }

    /// The Gaussian's derivative to take along each axis, as scipy's `order`: 0 smooths, 1 is
    /// the first derivative, 2 the second (checked against the rank when applied). A
    /// derivative is of the sampled, normalised Gaussian, as scipy computes it; its recursive
    /// filter (sigma 2 and up) is an 8th-order fit within 7e-6 (first) and 3e-5 (second) of
    /// the kernel's range, exact on a constant (0), a ramp (its slope) and a parabola (its
    /// curvature), at twice the smoothing filter's cost along that axis, for any sigma.
    ///
    /// ```
    /// use gblur::{nd::Filter, EdgeMode};
    ///
    /// // The slope of a ramp along x: d/dx of 3x is 3, wherever the Gaussian reaches.
    /// let shape = [8, 64];
    /// let mut ramp: Vec<f32> = (0..8 * 64).map(|i| 3.0 * (i % 64) as f32).collect();
    /// Filter::new(&[0.0, 4.0])?.order(&[0, 1]).mode(EdgeMode::Reflect).apply(&mut ramp, &shape)?;
    /// assert!((ramp[3 * 64 + 32] - 3.0).abs() < 1e-2);
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn order(mut self, orders: &[u8]) -> Self {
        self.orders = orders.to_vec();
        self
    }

    /// Which filter runs along each axis: `None` where sigma is 0, else `recursive` or
    /// `fir r=R` (with `, order N` for a derivative).
    ///
    /// ```
    /// let f = gblur::nd::Filter::new(&[0.0, 5.0])?;
    /// assert_eq!(f.describe()?, vec![None, Some("recursive".to_string())]);
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn describe(&self) -> Result<Vec<Option<String>>, Error> {
        Ok(self
            .axis_filters(false)?
            .iter()
            .map(|f| f.as_ref().map(|f| f.filter.describe()))
            .collect())
    }

    /// How far each axis's filter reaches, in samples: beyond it an input moves no output
    /// by more than 5e-5 of its range (the recursive filter's tail), or by nothing (the
    /// FIR's radius); 0 where sigma is 0. Chunks of an array blurred apart, each with this
    /// much of its neighbours around it, agree with the whole array's blur within that.
    ///
    /// ```
    /// // Blurring a large array in overlapping tiles: each tile needs this much margin.
    /// let reach = gblur::nd::Filter::new(&[0.0, 4.0])?.reach()?;
    /// assert_eq!(reach[0], 0);
    /// assert!(reach[1] > 4 * 4);
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn reach(&self) -> Result<Vec<usize>, Error> {
        Ok(self
            .axis_filters(false)?
            .iter()
            .map(|f| f.as_ref().map_or(0, |f| f.filter.reach()))
            .collect())
    }

    /// Blurs `data`, a contiguous (C-order) array of `shape`, in place. Integer arrays
    /// blurred along more than one axis take an f32 copy, so that they are rounded once.
    ///
    /// ```
    /// use gblur::{nd::Filter, EdgeMode};
    ///
    /// // A 6 × 10 × 12 volume blurred along z only (scipy's sigma=(3, 0, 0), mode 'reflect').
    /// let shape = [6, 10, 12];
    /// let mut volume: Vec<u16> = (0..6 * 10 * 12).map(|i| if i < 120 { 1000 } else { 0 }).collect();
    /// Filter::new(&[3.0, 0.0, 0.0])?.mode(EdgeMode::Reflect).apply(&mut volume, &shape)?;
    /// assert!(volume[0] < 1000 && volume[5 * 120] > 0);
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn apply<T: Element>(&self, data: &mut [T], shape: &[usize]) -> Result<(), Error> {
        let filters = self.checked::<T>(data.len(), data.len(), shape)?;
        let steps = steps::<T>(&filters, shape);
        if T::FLOAT || matches!(steps[..], [] | [Step::Axis(_)]) {
            for step in steps {
                step.in_place(data, shape, &filters);
            }
            return Ok(());
        }
        // Integers: the steps in f32, rounded once into `data` by the last.
        let mut work: Vec<f32> = data.par_iter().map(|&v| v.load()).collect();
        let (last, rest) = steps.split_last().expect("a step at least");
        for step in rest {
            step.in_place(&mut work, shape, &filters);
        }
        last.out_of(&mut work, data, shape, &filters);
        Ok(())
    }

    /// Blurs `input` into `output` (the same shape, any two element types): the input is
    /// left as it is. The result is rounded once, where `output` holds integers.
    ///
    /// ```
    /// use gblur::nd::Filter;
    ///
    /// let input = vec![7.0f64; 20 * 20];
    /// let mut output = vec![0u8; 20 * 20];
    /// Filter::new(&[1.5, 1.5])?.apply_into(&input, &mut output, &[20, 20])?;
    /// assert!(output.iter().all(|&v| v == 7));
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn apply_into<S: Element, D: Element>(
        &self,
        input: &[S],
        output: &mut [D],
        shape: &[usize],
    ) -> Result<(), Error> {
        let filters = self.checked::<D>(input.len(), output.len(), shape)?;
        let steps = steps::<D>(&filters, shape);
        let Some((first, rest)) = steps.split_first() else {
            for (o, &i) in output.iter_mut().zip(input) {
                *o = D::store(i.load());
            }
            return Ok(());
        };
        if D::FLOAT || rest.is_empty() {
            // The first step from the input, the rest in place.
            first.run(input, output, shape, &filters);
            for step in rest {
                step.in_place(output, shape, &filters);
            }
            return Ok(());
        }
        // Integers: the steps in f32, rounded once into `output` by the last.
        let mut work = vec![0f32; input.len()];
        first.run(input, &mut work, shape, &filters);
        let (last, middle) = rest.split_last().expect("rest is not empty");
        for step in middle {
            step.in_place(&mut work, shape, &filters);
        }
        last.out_of(&mut work, output, shape, &filters);
        Ok(())
    }

    /// Each axis's filter (None: left alone), for an array of `len` elements and `shape`
    /// filtered into `D`.
    pub(crate) fn checked_axes<D: Element>(
        &self,
        len: usize,
        shape: &[usize],
    ) -> Result<Vec<Option<AxisFilter>>, Error> {
        self.checked::<D>(len, len, shape)
    }

    /// Checks the sizes and the per-axis settings against `shape`, and makes each axis's
    /// filter (None: left alone) for an output of `D`.
    fn checked<D: Element>(
        &self,
        input: usize,
        output: usize,
        shape: &[usize],
    ) -> Result<Vec<Option<AxisFilter>>, Error> {
        if shape.len() != self.sigma.len() {
            return Err(Error::Shape(format!(
                "{} sigmas for an array of {} axes",
                self.sigma.len(),
                shape.len()
            )));
        }
        let len = shape
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .ok_or_else(|| {
                Error::Shape(format!(
                    "the shape {shape:?} holds more elements than memory can"
                ))
            })?;
        for (what, got) in [("input", input), ("output", output)] {
            if got != len {
                return Err(Error::Buffer(format!(
                    "the {what} has {got} elements where the shape {shape:?} has {len}"
                )));
            }
        }
        self.axis_filters(D::SIXTEEN_BIT)
    }

    /// Each axis's filter; `sixteen_bit`: the output holds 16-bit integers, which `Auto`
    /// gives scipy's own kernel up to `EXACT_16_BIT_SIGMA`.
    fn axis_filters(&self, sixteen_bit: bool) -> Result<Vec<Option<AxisFilter>>, Error> {
        self.check_settings()?;
        (0..self.sigma.len())
            .map(|a| self.axis_filter(a, sixteen_bit))
            .collect()
    }

    /// The settings checked against each other: one edge mode, derivative order and radius
    /// per axis, orders up to `MAX_ORDER`, a truncation and a constant that are numbers.
    fn check_settings(&self) -> Result<(), Error> {
        let rank = self.sigma.len();
        if self.modes.len() != rank {
            return Err(Error::Shape(format!(
                "{} edge modes for {rank} axes",
                self.modes.len()
            )));
        }
        if self.orders.len() != rank {
            return Err(Error::Shape(format!(
                "{} derivative orders for {rank} axes",
                self.orders.len()
            )));
        }
        if let Some(o) = self.orders.iter().find(|&&o| o > MAX_ORDER) {
            return Err(Error::Order(*o));
        }
        if let Some(r) = &self.radius {
            if r.len() != rank {
                return Err(Error::Shape(format!("{} radii for {rank} axes", r.len())));
            }
        }
        if !(self.truncate.is_finite() && self.truncate > 0.0 && self.truncate <= MAX_TRUNCATE) {
            return Err(Error::Truncate(format!(
                "truncate must be a number above 0 and at most {MAX_TRUNCATE} (got {})",
                self.truncate
            )));
        }
        if !self.cval.is_finite() {
            return Err(Error::Constant(self.cval));
        }
        Ok(())
    }

    /// Axis `a`'s filter (None where its sigma is 0), as `axis_filters` says.
    fn axis_filter(&self, a: usize, sixteen_bit: bool) -> Result<Option<AxisFilter>, Error> {
        let (sigma, order) = (self.sigma[a], self.orders[a]);
        if sigma == 0.0 {
            return Ok(None);
        }
        let radius = match &self.radius {
            Some(r) if r[a] == 0 => {
                return Err(Error::Truncate(format!(
                    "radius 0 on axis {a}: use sigma 0 to leave an axis alone"
                )))
            }
            Some(r) => r[a],
            None => (self.truncate * sigma + 0.5).floor().max(1.0) as usize,
        };
        let cut_short = (radius as f64) < SCIPY_TRUNCATE * sigma - 0.5;
        let fir = match self.method {
            Method::Fir => true,
            Method::Recursive => false,
            Method::Auto => {
                sigma < FIR_BELOW_SIGMA || cut_short || (sixteen_bit && sigma <= EXACT_16_BIT_SIGMA)
            }
        };
        if fir && sigma > FIR_MAX_SIGMA {
            return Err(Error::FirTooWide {
                sigma,
                max: FIR_MAX_SIGMA,
            });
        }
        let filter = match fir {
            true => LineFilter::fir(sigma, radius, order),
            false => LineFilter::recursive(sigma, order),
        };
        Ok(Some(AxisFilter {
            filter,
            edge: self.modes[a],
            cvals: vec![self.cval as f32],
            footprint: Some(radius),
        }))
    }
}

/// `data` (of `shape`) as f32, extended by `pads[k]` samples at both ends of each axis k as
/// that axis's edge mode says, and the extended shape: what a device's staged upload makes
/// of an array (`gpu::host_array`), whole, for its tests.
#[cfg(test)]
pub(crate) fn extend<T: Element>(
    data: &[T],
    shape: &[usize],
    axes: &[Option<AxisFilter>],
    pads: &[usize],
) -> (Vec<f32>, Vec<usize>) {
    let mut work: Vec<f32> = data.par_iter().map(|&v| v.load()).collect();
    let mut shape = shape.to_vec();
    for (k, (a, &pad)) in axes.iter().zip(pads).enumerate() {
        let Some(a) = a.as_ref().filter(|_| pad > 0) else {
            continue;
        };
        let (n, inner): (usize, usize) = (shape[k], shape[k + 1..].iter().product());
        let m = n + 2 * pad;
        let mut out = vec![0f32; work.len() / n.max(1) * m];
        if inner > 0 {
            // One outer index at a time: its m lines of `inner` samples, each a copy of a
            // source line or the constant.
            out.par_chunks_mut(m * inner)
                .zip(work.par_chunks(n * inner))
                .for_each(|(dst, src)| {
                    for (j, line) in dst.chunks_mut(inner).enumerate() {
                        match a.edge.source(j as i64 - pad as i64, n as i64) {
                            Some(s) => line.copy_from_slice(&src[s * inner..(s + 1) * inner]),
                            None => line.fill(a.cvals[0]),
                        }
                    }
                });
        }
        work = out;
        shape[k] = m;
    }
    (work, shape)
}

/// Writes the inner region of `padded` (of shape `shape`, extended by `pads`) into `out`,
/// rounded as the host rounds it (the staged download's crop, whole, for its tests).
#[cfg(test)]
pub(crate) fn crop_into<D: Element>(
    padded: &[f32],
    shape: &[usize],
    pads: &[usize],
    out: &mut [D],
) {
    let r = shape.len();
    let inner: Vec<usize> = shape.iter().zip(pads).map(|(&n, &p)| n - 2 * p).collect();
    let row = inner[r - 1];
    if row == 0 || out.is_empty() {
        return;
    }
    let mut strides = vec![1usize; r];
    for k in (0..r - 1).rev() {
        strides[k] = strides[k + 1] * shape[k + 1];
    }
    out.par_chunks_exact_mut(row)
        .enumerate()
        .for_each(|(i, dst)| {
            // Row i of the result: its index along every axis but the last, last axis fastest.
            let (mut rest, mut start) = (i, pads[r - 1]);
            for k in (0..r - 1).rev() {
                start += (rest % inner[k] + pads[k]) * strides[k];
                rest /= inner[k];
            }
            for (o, &v) in dst.iter_mut().zip(&padded[start..start + row]) {
                *o = D::store(v);
            }
        });
}

/// The steps that filter the axes `filters` names (None: left alone) through an array of
/// `shape` written in `T`, on the current pool's threads: held between steps in `T` where it
/// is a float, else in f32.
pub(crate) fn steps<T: Element>(filters: &[Option<AxisFilter>], shape: &[usize]) -> Vec<Step> {
    let between = match T::FLOAT {
        true => size_of::<T>(),
        false => size_of::<f32>(),
    };
    let active: Vec<usize> = (0..filters.len())
        .filter(|&a| filters[a].is_some())
        .collect();
    let mut steps = axis::steps::steps(&active, shape, between, rayon::current_num_threads());
    // A plane's rows before its columns: the first step is the one that writes another array
    // (a new one, or the caller's), and rows write it in order, each thread its own run of
    // memory, where a walk down columns writes a line of every row it passes; the columns
    // then run in place. f32 8192² σ 5 on 16 threads of a Xeon: into a new array 0.87 times
    // the time, into the caller's 0.9 (docs/BENCHMARKS.md). Not where an axis extends by a
    // constant: a derivative's pass does not keep that constant, so scipy's order decides.
    let constant = filters
        .iter()
        .flatten()
        .any(|f| matches!(f.edge, EdgeMode::Constant(_)));
    if shape.len() == 2 && steps == [Step::Axis(0), Step::Axis(1)] && !constant {
        steps.reverse();
    }
    steps
}

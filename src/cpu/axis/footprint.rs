//! The non-finite inputs of a whole array and the outputs they spoil, for a path that filters
//! the array with them taken as 0 and sets the spoiled outputs afterwards (an OpenCL device,
//! whose kernels would carry one NaN along every line). The outcome is the host engine's
//! (`non_finite`, item by item): each output within scipy's radius of a non-finite input
//! along every filtered axis (the footprint's box) is what scipy's sum leaves there. Found
//! once over the array, as a dilation of the kinds of non-finite value along each axis.

use super::{AxisFilter, Element, Lines};
use rayon::prelude::*;

const NAN: u8 = 1;
const POSITIVE: u8 = 2;
const NEGATIVE: u8 = 4;

fn kind(v: f32) -> u8 {
    match v {
        v if v.is_finite() => 0,
        v if v.is_nan() => NAN,
        v if v > 0.0 => POSITIVE,
        _ => NEGATIVE,
    }
}

/// Whether every sample is finite: one pass in pieces on every core, each piece's test without
/// a branch a sample (so that it runs at the speed of memory).
pub(crate) fn all_finite<S: Element>(input: &[S]) -> bool {
    input.par_chunks(1 << 14).all(piece_finite)
}

/// Whether every sample of one piece is finite.
pub(crate) fn piece_finite<S: Element>(piece: &[S]) -> bool {
    piece
        .iter()
        .fold(true, |finite, s| finite & s.load().is_finite())
}

/// Whether some axis is filtered and every filtered axis has a footprint: the filters whose
/// outputs non-finite inputs spoil only near them.
fn footprints_everywhere(axes: &[Option<AxisFilter>]) -> bool {
    let mut active = axes.iter().flatten().peekable();
    active.peek().is_some() && active.all(|a| a.footprint.is_some())
}

/// Whether the constants of every active axis's edges are finite.
fn edges_finite(axes: &[Option<AxisFilter>]) -> bool {
    axes.iter()
        .flatten()
        .all(|a| a.cvals.iter().all(|c| c.is_finite()))
}

/// The outputs an array's non-finite inputs spoil, and the input to filter in their place.
pub(crate) struct Spoiled {
    /// Per sample, the kinds of non-finite value within its footprint (0: none).
    kinds: Vec<u8>,
    /// Whether an infinity keeps its sign (every filtered axis takes the Gaussian itself,
    /// whose weights are all positive).
    signed: bool,
}

impl Spoiled {
    /// The spoiled outputs of `input` of `shape` filtered along `axes`; None where every
    /// input (and every constant of the edges) is finite, or where an axis lets non-finite
    /// values run through its filter (`AxisFilter::footprint` None).
    pub fn find<S: Element>(
        input: &[S],
        shape: &[usize],
        axes: &[Option<AxisFilter>],
    ) -> Option<Spoiled> {
        let active: Vec<(usize, &AxisFilter)> = axes
            .iter()
            .enumerate()
            .filter_map(|(k, a)| a.as_ref().map(|a| (k, a)))
            .collect();
        if !footprints_everywhere(axes) {
            return None;
        }
        if edges_finite(axes) && (!S::FLOAT || all_finite(input)) {
            return None;
        }
        let mut kinds: Vec<u8> = input.par_iter().map(|s| kind(s.load())).collect();
        for &(k, a) in &active {
            dilate(&mut kinds, Lines::along(shape, k), a);
        }
        let signed = active.iter().all(|(_, a)| a.filter.order() == 0);
        Some(Spoiled { kinds, signed })
    }

    /// Whether only `input`'s samples can spoil outputs of a filter along `axes`: every
    /// active axis has a footprint and finite edge constants, and `S` holds floats. Then the
    /// samples may be looked at as they are read for another purpose (an OpenCL device's
    /// staging), `find` called only where one is not finite.
    pub fn from_samples_alone<S: Element>(axes: &[Option<AxisFilter>]) -> bool {
        S::FLOAT && footprints_everywhere(axes) && edges_finite(axes)
    }

    /// `input` with its non-finite samples as 0.
    pub fn zeroed<S: Element>(input: &[S]) -> Vec<S> {
        input
            .par_iter()
            .map(|&s| match s.load().is_finite() {
                true => s,
                false => S::store(0.0),
            })
            .collect()
    }

    /// `axes` with the non-finite constants of their edges as 0.
    pub fn zeroed_axes(axes: &[Option<AxisFilter>]) -> Vec<Option<AxisFilter>> {
        let mut axes = axes.to_vec();
        for a in axes.iter_mut().flatten() {
            a.cvals
                .iter_mut()
                .filter(|c| !c.is_finite())
                .for_each(|c| *c = 0.0);
            if let crate::filter::EdgeMode::Constant(c) = &mut a.edge {
                if !c.is_finite() {
                    *c = 0.0;
                }
            }
        }
        axes
    }

    /// Sets each spoiled output as scipy's sum leaves it: NaN near a NaN or near infinities
    /// of both signs (or near any infinity for a derivative, whose weights take both signs),
    /// else the infinity's sign.
    pub fn apply<D: Element>(&self, output: &mut [D]) {
        let signed = self.signed;
        output
            .par_iter_mut()
            .zip(&self.kinds)
            .filter(|(_, &k)| k != 0)
            .for_each(|(o, &k)| {
                *o = D::store(match k {
                    POSITIVE if signed => f32::INFINITY,
                    NEGATIVE if signed => f32::NEG_INFINITY,
                    _ => f32::NAN,
                });
            });
    }
}

/// Each sample's kinds become those of every sample within the axis's footprint of it along
/// the axis, the line extended as its edge mode says (the constant's kind beyond the ends).
fn dilate(kinds: &mut [u8], lines: Lines, axis: &AxisFilter) {
    let Lines { n, inner, .. } = lines;
    if n == 0 || inner == 0 {
        return;
    }
    let r = axis.footprint.unwrap_or(0) as i64;
    let outside = kind(axis.cvals.first().copied().unwrap_or(0.0));
    kinds.par_chunks_mut(n * inner).for_each(|block| {
        let (mut line, mut extended) = (vec![0u8; n], Vec::with_capacity(n + 2 * r as usize));
        for c in 0..inner {
            line.iter_mut()
                .enumerate()
                .for_each(|(i, v)| *v = block[i * inner + c]);
            if outside == 0 && line.iter().all(|&v| v == 0) {
                continue;
            }
            extended.clear();
            extended.extend(
                (-r..n as i64 + r)
                    .map(|j| axis.edge.source(j, n as i64).map_or(outside, |s| line[s])),
            );
            // A sliding window of 2r + 1 samples: a count per kind.
            let mut count = [0usize; 3];
            let tally = |count: &mut [usize; 3], v: u8, add: bool| {
                for (b, c) in count.iter_mut().enumerate() {
                    if v & (1 << b) != 0 {
                        *c = if add { *c + 1 } else { *c - 1 };
                    }
                }
            };
            let width = 2 * r as usize + 1;
            for &v in &extended[..width - 1] {
                tally(&mut count, v, true);
            }
            for i in 0..n {
                tally(&mut count, extended[i + width - 1], true);
                block[i * inner + c] =
                    count
                        .iter()
                        .enumerate()
                        .fold(0, |k, (b, &c)| if c > 0 { k | (1 << b) } else { k });
                tally(&mut count, extended[i], false);
            }
        }
    });
}

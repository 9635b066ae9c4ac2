//! The strip engine's blur: the banded blur over a window of rows that slides down the image,
//! so that an image streams from a decoder to an encoder through bounded memory.
//!
//! The window holds `strip + reach` rows of the input's own samples. Each step fills it with
//! the next rows, blurs its first `strip` rows in place and hands them on, then moves the
//! `reach` rows below them to its top. The blur of a strip is `blur_in_place`'s, band by band:
//!
//! - the causal column filter runs from the state carried out of the strip above, exactly as
//!   on the whole image;
//! - the anticausal column filter's band states come from pass 1's summaries over the whole
//!   window, started at the window's last row: in the difference form from a zero state (past
//!   a clamped edge every difference is 0), in the direct form from the steady state of that
//!   row. Where the window reaches the image's bottom edge this is the whole-image start;
//!   elsewhere it treats the rows below the window as repeats of its last row, and what that
//!   changes in a strip's output is the filter's weights more than `reach` rows away times
//!   the samples' range: under 5e-5 of full scale with `reach = ceil(5.5 σ) + 3`
//!   (`gaussian::recursive_reach`, whose test in `work::edges` bounds the tail; `truncation_stays_in_budget`
//!   measures it here);
//! - the rows pass is untouched.
//!
//! Memory (`StripPlan::bytes`): the window, `(strip + reach) × width × channels × bytes per
//! sample`, plus the band scratch of f32 column results, `128 × width × channels × 4` (rounded
//! up to 64 samples), plus 16 bytes per sample column for each band boundary of the window and
//! 80 for the carry.

use super::columns::{band_columns, start_carries, strip_chunks, Strips};
use super::exact::{boundaries, ColumnStates};
use super::rows::{band_rows, BandScratch};
use super::samples::{Pixels, Rows, Sample};
use super::sections::Coef;
use super::summaries::{band_states, BandSums};
use super::{ms, Axis, BAND_ROWS, BOUNDARY, CARRY, CHUNK, VECS};
use crate::cpu::lanes::V;
use crate::cpu::reference::CpuPass;
use std::time::Instant;

/// Rows per strip and rows of lookahead below it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StripPlan {
    /// Rows blurred and handed on per step: a multiple of 16, and of 128 from 128 up, so that
    /// every band of a strip but the image's last is whole.
    pub strip: usize,
    /// Rows below a strip the anticausal filter starts from (`gaussian::recursive_reach`).
    pub reach: usize,
}

impl StripPlan {
    /// The plan for rows of `row_samples` samples of `sample_bytes` each, blurred vertically
    /// by a filter that needs `reach` rows below a strip, in at most `budget` bytes where that can be had: strips of
    /// `max(256, reach)` rows (rounded up to 128), so that the window's summaries cost at most
    /// about twice the strip's own, made shorter (down to 16 rows) to fit the budget. `rows`
    /// forces the strip (rounded up to 16, or to 128 from 128 up).
    pub fn new(
        (row_samples, sample_bytes): (usize, usize),
        reach: usize,
        budget: u64,
        rows: Option<usize>,
    ) -> StripPlan {
        if let Some(rows) = rows {
            return StripPlan {
                strip: round_strip(rows.max(1)),
                reach,
            };
        }
        // The image's height is not known here: the window as if it were taller than it.
        let bytes = |strip| StripPlan { strip, reach }.bytes(row_samples, sample_bytes, usize::MAX);
        let fits = |strip| bytes(strip) <= budget;
        let strip = longest_fitting(round_strip(reach.max(2 * BAND_ROWS)), fits);
        StripPlan { strip, reach }
    }

    /// The blur's memory for an image `height` rows of `row_samples` samples of
    /// `sample_bytes` each: the window (no more rows than the image), the band scratch, the
    /// boundary states and the carry (module doc).
    pub fn bytes(&self, row_samples: usize, sample_bytes: usize, height: usize) -> u64 {
        let rows = (self.strip + self.reach).min(height) as u64;
        let padded = row_samples.div_ceil(CHUNK) as u64 * CHUNK as u64;
        let band = self.strip.min(BAND_ROWS) as u64;
        let boundaries = rows.div_ceil(band);
        let window = rows * row_samples as u64 * sample_bytes as u64;
        window + band * padded * 4 + padded * (16 * boundaries + 80)
    }
}

/// The longest strip from `start` down (128 rows at a time, 16 at a time below 128) that
/// `fits`; 16 rows where none does.
fn longest_fitting(start: usize, fits: impl Fn(usize) -> bool) -> usize {
    let mut strip = start;
    while strip > 16 && !fits(strip) {
        strip = round_strip(if strip > BAND_ROWS {
            strip - BAND_ROWS
        } else {
            strip - 16
        });
    }
    strip
}

/// A strip length the bands divide: a multiple of 16 below 128, of 128 from there up.
fn round_strip(rows: usize) -> usize {
    if rows > 112 {
        rows.next_multiple_of(BAND_ROWS)
    } else {
        rows.next_multiple_of(16)
    }
}

/// The bytes of the stored states for rows of `row_samples` samples.
fn states_bytes(row_samples: usize, height: usize, strip: usize) -> u64 {
    let padded = row_samples.div_ceil(CHUNK) * CHUNK;
    (boundaries(height, strip) * padded * 16) as u64
}

/// The method's memory for an image `height` rows of `row_samples` samples of
/// `sample_bytes` each, in strips of `plan.strip` (`exact`'s module doc).
pub fn two_pass_bytes(
    plan: StripPlan,
    (row_samples, sample_bytes): (usize, usize),
    height: usize,
) -> u64 {
    plan.bytes(row_samples, sample_bytes, height) + states_bytes(row_samples, height, plan.strip)
}

/// The two-pass plan for an image `height` rows of `row_samples` samples of `sample_bytes`:
/// the multiple of 128 rows that needs the least memory; `rows` forces the strip (rounded up
/// to 16, or to 128 from 128 up).
pub fn two_pass_plan(
    (row_samples, sample_bytes): (usize, usize),
    height: usize,
    rows: Option<usize>,
) -> StripPlan {
    let plan = |strip| StripPlan { strip, reach: 1 };
    if let Some(rows) = rows {
        return plan(round_strip(rows.max(1)));
    }
    let bytes = |strip| two_pass_bytes(plan(strip), (row_samples, sample_bytes), height);
    let tallest = height.next_multiple_of(BAND_ROWS).max(BAND_ROWS);
    let strip = (BAND_ROWS..=tallest)
        .step_by(BAND_ROWS)
        .min_by_key(|&s| bytes(s))
        .expect("one strip at least");
    plan(strip)
}

/// Where the states do not fit `budget` beside the window: the plan whose window (with its
/// scratch and boundary states) fits it, strips as long as `two_pass_plan`'s at most (fewer
/// states to write) and down to 16 rows, its states then kept in a temporary file. None where
/// not even 16 rows fit.
pub fn spilled_plan(
    (row_samples, sample_bytes): (usize, usize),
    height: usize,
    budget: u64,
) -> Option<StripPlan> {
    let longest = two_pass_plan((row_samples, sample_bytes), height, None).strip;
    let fits = |strip: usize| {
        let plan = StripPlan { strip, reach: 1 };
        plan.bytes(row_samples, sample_bytes, height) <= budget
    };
    let strip = longest_fitting(longest, fits);
    fits(strip).then_some(StripPlan { strip, reach: 1 })
}

/// Time spent in each part of the window's blur, summed over the strips.
#[derive(Default)]
struct Timing {
    summaries: f64,
    columns: f64,
    rows: f64,
    moves: f64,
}

/// Blurs a `width`×`height` image of interleaved samples that `fill` hands over row by row,
/// top to bottom (it fills whole rows of the slice it is given), and hands the blurred rows
/// to `emit` in the same order, holding `plan.strip + plan.reach` rows at a time. Where
/// `exact` holds the first pass's states (`exact::summarise_streamed`, for strips of
/// `plan.strip` and a reach of 1), each strip's anticausal filter starts from them instead of
/// from its window's last row. Stops at the first error of either. Returns the time of each
/// pass, as `blur_in_place` does.
pub fn blur_streamed<T: Sample, E: From<std::io::Error>>(
    (width, height): (usize, usize),
    px: &Pixels,
    (kx, ky): (Axis, Axis),
    (plan, mut exact): (StripPlan, Option<&mut ColumnStates>),
    mut fill: impl FnMut(&mut [T]) -> Result<(), E>,
    mut emit: impl FnMut(&[T]) -> Result<(), E>,
) -> Result<Vec<CpuPass>, E> {
    let stride = width * px.channels;
    if stride == 0 || height == 0 {
        return Ok(Vec::new());
    }
    let (strip, band) = (plan.strip, plan.strip.min(BAND_ROWS));
    assert!(
        exact
            .as_ref()
            .is_none_or(|e| e.strip() == strip && plan.reach == 1),
        "the states are for this plan's strips"
    );
    let (kx, ky) = (kx.form::<T>(), ky.form::<T>());
    let sums = BandSums::new(ky, band);
    let (kx, ky) = (Coef::of::<T>(kx), Coef::of::<T>(ky));
    let chunks = stride.div_ceil(CHUNK);
    let rows_held = (strip + plan.reach).min(height);
    let mut data = vec![T::from_f32(0.0); rows_held * stride];
    let mut carry = vec![V::ZERO; chunks * CARRY];
    let mut scratch = vec![V::ZERO; chunks * band * VECS];
    let mut time = Timing::default();
    let (mut top, mut held) = (0, 0);
    while top < height {
        let want = (strip + plan.reach).min(height - top);
        fill(&mut data[held * stride..want * stride])?;
        let n = strip.min(height - top);
        let window = Rows {
            data: &data[..want * stride],
            stride,
            height: want,
        };
        if top == 0 {
            start_carries(window, px, &mut carry);
        }
        let strips = Strips {
            chunks,
            strip: strip_chunks(chunks),
            boundaries: (want.div_ceil(band) - 1) * BOUNDARY,
        };
        let below = match exact.as_mut() {
            Some(states) if top + want < height => states.at(top + strip)?,
            _ => &[],
        };
        let t = Instant::now();
        let states = band_states(window, band, strips, px, (&ky, &sums), (&carry, below));
        time.summaries += ms(t);
        let (blocks, buffers) = ((&kx, &ky), (&mut carry[..], &mut scratch[..]));
        let rows = &mut data[..want * stride];
        blur_bands(
            rows,
            (width, n, band),
            strips,
            px,
            blocks,
            &states,
            buffers,
            &mut time,
        );
        emit(&data[..n * stride])?;
        let t = Instant::now();
        data.copy_within(n * stride..want * stride, 0);
        time.moves += ms(t);
        (top, held) = (top + n, want - n);
    }
    let pass = |name, ms| CpuPass { name, ms };
    Ok(vec![
        pass("column summaries (y, window)", time.summaries),
        pass("columns (y)", time.columns),
        pass("rows (x)", time.rows),
        pass("window moves", time.moves),
    ])
}

/// The first `n` rows of the window `data` (`width` pixels a row) blurred in place, band by
/// band, as `blur_in_place` blurs them: columns from the carried causal state and the
/// window's band `states`, then rows.
#[allow(clippy::too_many_arguments)]
fn blur_bands<T: Sample>(
    data: &mut [T],
    (width, n, band): (usize, usize, usize),
    strips: Strips,
    px: &Pixels,
    (kx, ky): (&Coef, &Coef),
    states: &[V],
    (carry, scratch): (&mut [V], &mut [V]),
    time: &mut Timing,
) {
    let stride = width * px.channels;
    let height = data.len() / stride;
    for b in 0..n.div_ceil(band) {
        let (r0, r1) = (b * band, ((b + 1) * band).min(n));
        let t = Instant::now();
        let window = Rows {
            data: &*data,
            stride,
            height,
        };
        band_columns(
            window,
            (r0, r1, false),
            strips,
            px,
            Some(ky),
            (states, &mut *carry),
            scratch,
        );
        time.columns += ms(t);
        let t = Instant::now();
        let bs = BandScratch {
            data: scratch,
            chunks: strips.chunks,
        };
        band_rows(bs, &mut data[r0 * stride..r1 * stride], width, px, Some(kx));
        time.rows += ms(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::{Blur2d, Method};

    /// `blur_streamed` over `src` (one channel, `w` wide) at strips of `rows`.
    fn streamed<T: Sample>(src: &[T], w: usize, sigma: f64, rows: usize) -> Vec<T> {
        run_streamed(src, w, sigma, rows, false, false)
    }

    /// `blur_streamed` over `src` by the exact two-pass method at strips of `rows`, its states
    /// in a temporary file where `spill`.
    fn two_pass<T: Sample>(src: &[T], w: usize, sigma: f64, rows: usize, spill: bool) -> Vec<T> {
        run_streamed(src, w, sigma, rows, true, spill)
    }

    fn run_streamed<T: Sample>(
        src: &[T],
        w: usize,
        sigma: f64,
        rows: usize,
        exact: bool,
        spill: bool,
    ) -> Vec<T> {
        let blur = Blur2d::new(Method::Recursive, sigma, sigma);
        let axes = (Axis::of(&blur.x).unwrap(), Axis::of(&blur.y).unwrap());
        let px = Pixels::ONE_CHANNEL;
        let h = src.len() / w;
        let reach = crate::filter::gaussian::recursive_reach(sigma);
        let plan = match exact {
            true => super::super::two_pass_plan((w, 4), h, Some(rows)),
            false => StripPlan::new((w, 4), reach, u64::MAX, Some(rows)),
        };
        let reader = |mut next: usize| {
            move |dst: &mut [T]| -> std::io::Result<()> {
                dst.copy_from_slice(&src[next..next + dst.len()]);
                next += dst.len();
                Ok(())
            }
        };
        let spill = spill.then(|| tempfile::tempfile().unwrap());
        let mut states = exact.then(|| {
            super::super::summarise_streamed((w, h), &px, axes.1, plan.strip, spill, reader(0))
                .unwrap()
                .0
        });
        let mut out = Vec::new();
        let emit = |rows: &[T]| -> std::io::Result<()> {
            out.extend_from_slice(rows);
            Ok(())
        };
        let plan = (plan, states.as_mut());
        blur_streamed((w, h), &px, axes, plan, reader(0), emit).unwrap();
        out
    }

    fn whole<T: Sample>(src: &[T], w: usize, sigma: f64) -> Vec<T> {
        let blur = Blur2d::new(Method::Recursive, sigma, sigma);
        let axes = (Axis::of(&blur.x).unwrap(), Axis::of(&blur.y).unwrap());
        let px = Pixels::ONE_CHANNEL;
        let mut out = src.to_vec();
        super::super::blur_in_place(&mut out, (w, src.len() / w), &px, axes.0, axes.1);
        out
    }

    #[test]
    fn truncation_stays_in_budget() {
        // The worst case for the window's start: a full-scale step just beyond the reach of
        // the strip's last row, in float samples (no rounding to hide behind). Bound: the
        // tail of 5e-5 plus f32 rounding.
        // Up to sigma 1000, where the reach is 5503 rows.
        for sigma in [0.5, 1.0, 2.0, 5.0, 13.0, 40.0, 100.0, 300.0, 1000.0] {
            let reach = crate::filter::gaussian::recursive_reach(sigma);
            let (w, strip) = (16, 16);
            let h = strip + reach + 1 + 4 * reach;
            let src: Vec<f32> = (0..w * h)
                .map(|i| if i / w > strip + reach { 1.0 } else { 0.0 })
                .collect();
            let (a, b) = (streamed(&src, w, sigma, strip), whole(&src, w, sigma));
            let d = a
                .iter()
                .zip(&b)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f32::max);
            assert!(d < 1e-4, "sigma {sigma}: {d}");
        }
    }

    #[test]
    fn strips_match_the_whole_image() {
        // Edges of strips and bands, reach past the image, odd sizes; 8-bit within one step.
        let noise = |n: usize| -> Vec<u8> {
            let mut s = 12345u64;
            (0..n)
                .map(|_| {
                    s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (s >> 56) as u8
                })
                .collect()
        };
        for (w, h) in [(1, 1), (7, 300), (130, 57), (33, 700)] {
            let src = noise(w * h);
            for sigma in [0.7, 3.0, 30.0] {
                for rows in [16, 48, 256] {
                    let (a, b) = (streamed(&src, w, sigma, rows), whole(&src, w, sigma));
                    let d = a.iter().zip(&b).map(|(x, y)| x.abs_diff(*y)).max();
                    assert!(d <= Some(1), "{w}x{h} sigma {sigma} rows {rows}: {d:?}");
                }
            }
        }
    }

    #[test]
    fn two_pass_matches_the_whole_image() {
        // The exact method has no truncation: float samples agree with the whole-image blur to
        // f32 rounding at every sigma, across strips of 16 to 256 rows, on images shorter than
        // a strip, one row taller than one, and of odd sizes, its states in memory and in a
        // file; 8-bit within one step.
        let noise = |n: usize, seed: u64| -> Vec<f32> {
            let mut s = seed;
            (0..n)
                .map(|_| {
                    s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (s >> 56) as f32 / 255.0
                })
                .collect()
        };
        for (w, h) in [(1, 1), (7, 300), (130, 57), (33, 700), (5, 129), (3, 257)] {
            let src = noise(w * h, (w * h) as u64);
            for sigma in [0.7, 3.0, 30.0, 300.0, 1000.0] {
                for (case, rows) in [16, 48, 128, 256].into_iter().enumerate() {
                    let spill = case % 2 == 1;
                    let (a, b) = (two_pass(&src, w, sigma, rows, spill), whole(&src, w, sigma));
                    let d = a
                        .iter()
                        .zip(&b)
                        .map(|(x, y)| (x - y).abs())
                        .fold(0.0, f32::max);
                    assert!(d < 2e-5, "{w}x{h} sigma {sigma} rows {rows}: {d}");
                    let bytes: Vec<u8> = src.iter().map(|v| (v * 255.0) as u8).collect();
                    let (a, b) = (
                        two_pass(&bytes, w, sigma, rows, spill),
                        whole(&bytes, w, sigma),
                    );
                    let d = a.iter().zip(&b).map(|(x, y)| x.abs_diff(*y)).max();
                    assert!(
                        d <= Some(1),
                        "8-bit {w}x{h} sigma {sigma} rows {rows}: {d:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn two_pass_plans_take_the_least_memory() {
        // 32768² RGB at 8 bits: about 4 √height rows a strip, in about 200 MiB at any sigma.
        let (row, h) = (3 * 32768, 32768);
        let p = super::super::two_pass_plan((row, 1), h, None);
        let bytes = super::super::two_pass_bytes(p, (row, 1), h);
        assert_eq!(p.reach, 1);
        assert!((512..=896).contains(&p.strip), "{p:?}");
        assert!(bytes < 210 << 20, "{bytes}");
        for s in [p.strip - 128, p.strip + 128] {
            let q = StripPlan { strip: s, reach: 1 };
            assert!(super::super::two_pass_bytes(q, (row, 1), h) >= bytes);
        }
    }

    #[test]
    fn plans_fit_the_budget_and_divide_into_bands() {
        let reach = crate::filter::gaussian::recursive_reach;
        let p = StripPlan::new((3 * 32768, 1), reach(10.0), 256 << 20, None);
        assert_eq!(p.strip, 256);
        let p = StripPlan::new((3 * 32768, 1), reach(10.0), 64 << 20, None);
        assert!(
            p.strip < 256 && p.bytes(3 * 32768, 1, usize::MAX) <= 64 << 20,
            "{p:?}"
        );
        let p = StripPlan::new((3 * 32768, 1), reach(100.0), 64 << 20, None);
        // Shortened to fit, or to the shortest strip where nothing fits.
        let fits = p.bytes(3 * 32768, 1, usize::MAX) <= 64 << 20;
        assert!(
            p.strip.is_multiple_of(16) && (fits || p.strip == 16),
            "{p:?}"
        );
        assert!(p.strip < 640, "{p:?}");
        assert_eq!(
            StripPlan::new((10, 1), reach(1.0), u64::MAX, Some(130)).strip,
            256
        );
        assert_eq!(
            StripPlan::new((10, 1), reach(1.0), u64::MAX, Some(5)).strip,
            16
        );
    }
}

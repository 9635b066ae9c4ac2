//! NaN and infinity in an N-D array's lines, as scipy.ndimage treats them: a non-finite input
//! spoils the outputs whose kernel holds it (within the axis's `footprint`, scipy's radius),
//! and no others. A recursive filter on its own would carry one NaN to every later sample of
//! its line and, axis after axis, to the whole array.
//!
//! An item whose scratch holds a non-finite value (found by one multiply-add per vector, which
//! turns any of them into NaN) is filtered with those values taken as 0; then each output of
//! an affected lane within the footprint of one of them is set as scipy's sum would leave it:
//! NaN near a NaN or near infinities of both signs, the infinity's sign near infinities of one
//! sign (for the Gaussian itself, whose weights are all positive), NaN near any infinity for a
//! derivative (whose weights take both signs, and 0 at its centre).

use crate::cpu::lanes::{Isa, LANES, V};

/// Whether any value of the scratch `x` is NaN or infinite.
#[inline(always)]
pub(super) fn any_non_finite<I: Isa>(x: &[V]) -> bool {
    let mut acc = V::ZERO;
    for &v in x {
        // 0 × v is 0 for every finite v, NaN for NaN and for ±infinity.
        acc = V::madd::<I>(v, V::ZERO, acc);
    }
    acc.0.iter().any(|a| a.is_nan())
}

/// What each affected lane of an item holds beyond the finite: the rows of the non-finite
/// values, by kind. Empty for a lane with none.
#[derive(Default)]
pub(super) struct Spoilers {
    /// Per vector of a scratch row (`G` of them) and lane: the rows of NaN, +inf and -inf.
    lanes: Vec<[Vec<usize>; 3]>,
}

impl Spoilers {
    /// Finds the non-finite values of the scratch `x` (rows of `g` vectors), remembers where
    /// they are, and replaces them by 0 for the filter.
    pub(super) fn take(x: &mut [V], g: usize) -> Spoilers {
        let mut lanes: Vec<[Vec<usize>; 3]> = (0..g * LANES).map(|_| Default::default()).collect();
        for (k, row) in x.chunks_exact_mut(g).enumerate() {
            for (b, v) in row.iter_mut().enumerate() {
                for (l, s) in v.0.iter_mut().enumerate() {
                    if s.is_finite() {
                        continue;
                    }
                    let kind = match *s {
                        s if s.is_nan() => 0,
                        s if s > 0.0 => 1,
                        _ => 2,
                    };
                    lanes[b * LANES + l][kind].push(k);
                    *s = 0.0;
                }
            }
        }
        Spoilers { lanes }
    }

    /// Sets the outputs in `out` (rows `0..n` of `g` vectors, which are scratch rows
    /// `pad..pad + n`) within `footprint` rows of a non-finite input to what scipy's sum gives
    /// there; `signed` where the weights are all positive (the Gaussian itself).
    pub(super) fn spoil(
        &self,
        out: &mut [V],
        g: usize,
        pad: usize,
        footprint: usize,
        signed: bool,
    ) {
        let n = out.len() / g;
        for (lane, kinds) in self.lanes.iter().enumerate() {
            if kinds.iter().all(Vec::is_empty) {
                continue;
            }
            let (b, l) = (lane / LANES, lane % LANES);
            let near = |rows: &Vec<usize>| within(rows, n, pad, footprint);
            let [nan, pos, neg] = [near(&kinds[0]), near(&kinds[1]), near(&kinds[2])];
            for i in 0..n {
                let value = match (nan[i], pos[i], neg[i]) {
                    (false, false, false) => continue,
                    (false, true, false) if signed => f32::INFINITY,
                    (false, false, true) if signed => f32::NEG_INFINITY,
                    _ => f32::NAN,
                };
                out[i * g + b].0[l] = value;
            }
        }
    }
}

/// For each output `i` in `0..n` (scratch row `i + pad`), whether a row of `rows` lies within
/// `footprint` of it.
fn within(rows: &[usize], n: usize, pad: usize, footprint: usize) -> Vec<bool> {
    let mut hit = vec![false; n];
    for &k in rows {
        // Outputs i with |i + pad - k| <= footprint: k - footprint - pad ..= k + footprint - pad.
        let (k, f, p) = (k as i64, footprint as i64, pad as i64);
        let lo = (k - f - p).max(0);
        let hi = (k + f - p).min(n as i64 - 1);
        for i in lo..=hi {
            hit[i as usize] = true;
        }
    }
    hit
}

#[cfg(test)]
mod tests {
    use super::within;

    #[test]
    fn the_footprint_of_a_row_is_its_neighbourhood() {
        // Scratch rows 0..12 with 2 rows of extension each side: outputs are rows 2..10.
        let hit = within(&[5], 8, 2, 1);
        assert_eq!(hit, [false, false, true, true, true, false, false, false]);
        // A row in the extension before the line reaches the first outputs only.
        assert_eq!(within(&[0], 8, 2, 3)[..3], [true, true, false]);
        // A row past the line's end.
        assert_eq!(within(&[11], 8, 2, 2)[5..], [false, false, true]);
        // One too far away reaches nothing.
        assert!(within(&[0], 8, 2, 1).iter().all(|&h| !h));
    }
}

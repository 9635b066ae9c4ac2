//! Pass 2 of the banded blur over the whole image: the bands' columns and rows, several
//! bands at once.
//!
//! The columns' state is carried from band to band; their rows need no state from another
//! band. A band holds `BAND_ROWS / LANES` work items of rows (8), too few for many threads:
//! `at_once` bands' columns run into a scratch each (every strip down the bands in turn, the
//! strips in parallel), then all their rows together. Each parallel loop waits on its slowest
//! item, so fewer, fuller loops: on 16 threads, 12 MP RGB8, 0.57–0.95 times the time of a loop
//! per band in paired rounds (docs/BENCHMARKS.md). Where one band has work enough (4 threads
//! or fewer), one band's scratch. Where several bands go at once and the image is read from
//! another buffer than the one written, the next group's columns run beside this group's rows
//! (`overlapped`, two scratches), so that the threads that finish one loop's items early take
//! the other's: 12 MP RGB8 into another buffer, 16-core Xeon, four alternating rounds, 0.93
//! times the time on 16 threads and 0.86 on 8; on 2 threads (one band at a time) it took 1.2
//! times as long, the second scratch past the cache.

use super::columns::{group_columns, Strips};
use super::rows::{band_rows, BandScratch};
use super::samples::Rows;
use super::sections::Coef;
use super::{ms, Pixels, Sample, BAND_ROWS, VECS};
use crate::cpu::lanes::V;
use rayon::prelude::*;
use std::time::Instant;

/// The bands of an image and how many are filtered at once.
pub(super) struct Groups {
    pub bands: usize,
    pub at_once: usize,
    /// Vectors of scratch a band's columns fill.
    pub per_band: usize,
    pub strips: Strips,
    pub width: usize,
}

/// Each axis's coefficients, None for an axis left alone: (x, y).
type Both<'a> = (Option<&'a Coef>, Option<&'a Coef>);

impl Groups {
    /// The first band of each group.
    fn firsts(&self) -> impl Iterator<Item = usize> {
        (0..self.bands).step_by(self.at_once)
    }

    /// Bands in the group that starts at band `first`.
    fn count(&self, first: usize) -> usize {
        (first + self.at_once).min(self.bands) - first
    }

    /// The group starting at band `first`: its columns read from `img` into `scratch`.
    fn columns<T: Sample>(
        &self,
        img: Rows<T>,
        first: usize,
        (px, ky): (&Pixels, Option<&Coef>),
        (states, carry): (&[V], &mut [V]),
        scratch: &mut [V],
    ) {
        let band = BAND_ROWS;
        let rows = ((first * band, (first + 1) * band), self.count(first));
        let scratch = &mut scratch[..self.count(first) * self.per_band];
        group_columns(
            img,
            rows,
            self.strips,
            px,
            ky,
            (states, carry),
            scratch,
            first == 0,
        );
    }

    /// The group starting at band `first`: its rows from `scratch` into `data` (the image).
    fn rows<T: Sample>(
        &self,
        data: &mut [T],
        first: usize,
        px: &Pixels,
        kx: Option<&Coef>,
        scratch: &[V],
    ) {
        let stride = self.width * px.channels;
        let (band, end) = (BAND_ROWS, (first + self.count(first)) * BAND_ROWS);
        let len = data.len();
        let rows = &mut data[first * band * stride..(end * stride).min(len)];
        let bands = BandScratch {
            data: &scratch[..self.count(first) * self.per_band],
            chunks: self.strips.chunks,
        };
        rows_of_bands(rows, bands, (first * band, self.width), px, kx);
    }

    /// Rows in `data`.
    fn height<T>(&self, data: &[T], px: &Pixels) -> usize {
        data.len() / (self.width * px.channels)
    }

    /// Every group in turn, its columns and then its rows, from `src` (where given) or `data`
    /// itself into `data`; the time of the columns and of the rows.
    pub fn in_turn<T: Sample>(
        &self,
        src: Option<&[T]>,
        data: &mut [T],
        px: &Pixels,
        (kx, ky): Both<'_>,
        states: &[V],
    ) -> (f64, f64) {
        let (stride, height) = (self.width * px.channels, self.height(data, px));
        let mut carry = vec![V::ZERO; self.strips.chunks * super::CARRY];
        let mut kept = crate::memory::scratch_vec(self.at_once * self.per_band, V::ZERO);
        let scratch = &mut kept[..self.at_once * self.per_band];
        let (mut columns_ms, mut rows_ms) = (0.0, 0.0);
        for first in self.firsts() {
            let t = Instant::now();
            let img = Rows {
                data: src.unwrap_or(&*data),
                stride,
                height,
            };
            self.columns(img, first, (px, ky), (states, &mut carry), scratch);
            columns_ms += ms(t);
            let t = Instant::now();
            self.rows(data, first, px, kx, scratch);
            rows_ms += ms(t);
        }
        crate::memory::give_back_scratch(kept);
        (columns_ms, rows_ms)
    }

    /// Every group from `img` into `data`, each group's rows beside the next group's columns
    /// (two scratches, in turn); the time of the first group's columns and of the rest.
    pub fn overlapped<T: Sample>(
        &self,
        img: Rows<T>,
        data: &mut [T],
        px: &Pixels,
        (kx, ky): Both<'_>,
        states: &[V],
    ) -> (f64, f64) {
        let mut carry = vec![V::ZERO; self.strips.chunks * super::CARRY];
        let mut kept = crate::memory::scratch_vec(2 * self.at_once * self.per_band, V::ZERO);
        let scratch = &mut kept[..2 * self.at_once * self.per_band];
        let (mut this, mut next) = scratch.split_at_mut(self.at_once * self.per_band);
        let t = Instant::now();
        self.columns(img, 0, (px, ky), (states, &mut carry), this);
        let columns_ms = ms(t);
        let t = Instant::now();
        let firsts: Vec<usize> = self.firsts().collect();
        for (i, &first) in firsts.iter().enumerate() {
            let (rows_from, columns_into) = (&*this, &mut *next);
            let carry = &mut carry;
            rayon::join(
                || self.rows(data, first, px, kx, rows_from),
                || {
                    if let Some(&after) = firsts.get(i + 1) {
                        self.columns(img, after, (px, ky), (states, carry), columns_into);
                    }
                },
            );
            std::mem::swap(&mut this, &mut next);
        }
        crate::memory::give_back_scratch(kept);
        (columns_ms, ms(t))
    }
}

/// The rows pass of consecutive bands at once, each band (`BAND_ROWS` rows of `rows`, which
/// start at image row `r0`) from its own part of `scratch`.
pub(super) fn rows_of_bands<T: Sample>(
    rows: &mut [T],
    scratch: BandScratch,
    (r0, width): (usize, usize),
    px: &Pixels,
    kx: Option<&Coef>,
) {
    let stride = width * px.channels;
    let per_band = scratch.chunks * BAND_ROWS * VECS;
    rows.par_chunks_mut(BAND_ROWS * stride)
        .zip(scratch.data.par_chunks(per_band))
        .enumerate()
        .for_each(|(i, (rows, data))| {
            let first = r0 + i * BAND_ROWS;
            let last = first + rows.len() / stride;
            let bs = BandScratch {
                data,
                chunks: scratch.chunks,
            };
            let px = &Pixels {
                mix: px.mix.map(|s| &s[first * width..last * width]),
                ..*px
            };
            band_rows(bs, rows, width, px, kx);
        });
}

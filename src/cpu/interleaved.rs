//! Interleaved images blurred axis by axis through the N-D engine (`axis`): what the banded
//! blur does not take, an image with one axis left alone (sigma 0) and an edge mode or FIR
//! on raw buffers. Where nothing needs converting (no alpha, no linear light) and one axis is
//! filtered, the samples are filtered in place, rounded once; otherwise a premultiplied (and
//! linear, where asked) f32 copy in the banded blur's units is filtered and written back.

use super::axis::{self, AxisFilter, Element};
use super::banded::{self, Sample};
use super::reference::CpuPass;
use crate::filter::{Blur2d, EdgeMode, LineFilter};
use crate::pixels;
use crate::pixels::dispatch::{each_buffer, each_buffer_pair};
use image::DynamicImage;
use std::time::Instant;

/// One axis's filter and edge mode; the constant of `EdgeMode::Constant` is a fraction of
/// full scale, as on images.
pub(crate) type AxisSpec<'a> = (&'a LineFilter, EdgeMode);

/// The constant of `mode`, if it is `Constant`.
pub(crate) fn constant(mode: EdgeMode) -> Option<f32> {
    match mode {
        EdgeMode::Constant(v) => Some(v),
        _ => None,
    }
}

/// How an interleaved image's colour is treated while it is blurred.
#[derive(Clone, Copy)]
pub(crate) struct ColourHandling {
    /// The last channel is alpha, and colour is blurred premultiplied by it.
    pub alpha: bool,
    /// 8- and 16-bit colour is blurred in linear light.
    pub linear: bool,
}

/// Blurs `data` (`width`×`height` pixels of `channels` samples, rows without gaps) along y,
/// then x, where their filters are not the identity. Returns the passes' times.
pub(crate) fn blur_by_axes<T: Sample + Element>(
    data: &mut [T],
    (width, height, channels): (usize, usize, usize),
    ColourHandling { alpha, linear }: ColourHandling,
    [y, x]: [AxisSpec; 2],
) -> Vec<CpuPass> {
    let c = channels;
    let shape = [height, width, c];
    let alpha = alpha.then_some(c - 1);
    let linear = linear && T::FULL > 1.0;
    let active: Vec<(usize, AxisSpec)> = [(0, y), (1, x)]
        .into_iter()
        .filter(|(_, (f, _))| !f.is_identity())
        .collect();
    let cvals = |mode: EdgeMode| -> Vec<f32> {
        // The constant colour, opaque where there is alpha.
        (0..c)
            .map(|i| match (Some(i) == alpha, constant(mode)) {
                (true, _) => T::FULL,
                (false, v) => v.unwrap_or(0.0) * T::FULL,
            })
            .collect()
    };
    let name = |a: usize| if a == 0 { "columns (y)" } else { "rows (x)" };
    let mut passes = Vec::new();
    if active.is_empty() {
        return passes;
    }
    let timed = |a: usize, t: Instant| CpuPass {
        name: name(a),
        ms: t.elapsed().as_secs_f64() * 1e3,
    };
    if active.len() == 1 && alpha.is_none() && !linear {
        let (a, (f, mode)) = active[0];
        let t = Instant::now();
        let af = axis_filter(f, mode, cvals(mode));
        axis::filter_axis_in_place(data, &shape, a, &af);
        passes.push(timed(a, t));
        return passes;
    }
    let to_linear = |v: f32| pixels::srgb_to_linear(v / T::FULL) * T::FULL;
    let to_srgb = |v: f32| pixels::linear_to_srgb(v / T::FULL) * T::FULL;
    let t = Instant::now();
    let mut work: Vec<f32> = data.iter().map(|&v| Sample::to_f32(v)).collect();
    for px in work.chunks_exact_mut(c) {
        let a = alpha.map_or(1.0, |a| px[a] / T::FULL);
        for (i, v) in px.iter_mut().enumerate() {
            if Some(i) != alpha {
                *v = if linear { to_linear(*v) } else { *v } * a;
            }
        }
    }
    passes.push(CpuPass {
        name: "to premultiplied f32",
        ms: t.elapsed().as_secs_f64() * 1e3,
    });
    for (a, (f, mode)) in active {
        let t = Instant::now();
        axis::filter_axis_in_place(&mut work, &shape, a, &axis_filter(f, mode, cvals(mode)));
        passes.push(timed(a, t));
    }
    let t = Instant::now();
    for (px, out) in work.chunks_exact_mut(c).zip(data.chunks_exact_mut(c)) {
        let a = alpha.map_or(1.0, |a| px[a] / T::FULL);
        for (i, (v, o)) in px.iter().zip(out.iter_mut()).enumerate() {
            let mut v = *v;
            if Some(i) != alpha {
                v = if a > 1e-7 { v / a } else { 0.0 };
                if linear {
                    v = to_srgb(v);
                }
            }
            *o = Sample::from_f32(v);
        }
    }
    passes.push(CpuPass {
        name: "from premultiplied f32",
        ms: t.elapsed().as_secs_f64() * 1e3,
    });
    passes
}

/// `input` mixed towards `blurred` by one selection value per pixel (`Sample::mix`).
fn mix<T: Sample>(input: &mut [T], blurred: &[T], select: &[f32], channels: usize) {
    for ((px, b), &m) in input
        .chunks_exact_mut(channels)
        .zip(blurred.chunks_exact(channels))
        .zip(select)
    {
        for (v, &w) in px.iter_mut().zip(b) {
            *v = T::mix(*v, w, m);
        }
    }
}

fn axis_filter(f: &LineFilter, edge: EdgeMode, cvals: Vec<f32>) -> AxisFilter {
    AxisFilter {
        filter: f.clone(),
        edge,
        cvals,
        footprint: None,
    }
}

/// A decoded image with one axis left alone (sigma 0) blurred along the other, with the
/// clamped edges of the whole-image path (an edge mode's extension is already in the image):
/// in place, rounded once; mixed into the image by `select` (one value per pixel, as the
/// banded blur mixes it) where there is one. None where no axis is the identity (the banded
/// blur's work).
pub(crate) fn blur_one_axis(
    img: &mut DynamicImage,
    blur: &Blur2d,
    linear: bool,
    select: Option<&[f32]>,
) -> Option<Vec<CpuPass>> {
    if !blur.x.is_identity() && !blur.y.is_identity() {
        return None;
    }
    if let Some(m) = select {
        let mut blurred = img.clone();
        let passes = blur_one_axis(&mut blurred, blur, linear, None)?;
        let t = Instant::now();
        let c = img.color().channel_count() as usize;
        each_buffer_pair!((img, &blurred), (a, b) => mix(a, b, m, c), _ => return None);
        let mut passes = passes;
        passes.push(CpuPass {
            name: "mix the selection",
            ms: t.elapsed().as_secs_f64() * 1e3,
        });
        return Some(passes);
    }
    let (w, h) = (img.width() as usize, img.height() as usize);
    let color = img.color();
    let dims = (w, h, color.channel_count() as usize);
    let how = ColourHandling {
        alpha: color.has_alpha(),
        linear,
    };
    let axes = [(&blur.y, EdgeMode::Clamp), (&blur.x, EdgeMode::Clamp)];
    Some(each_buffer!(img, b => blur_by_axes(b, dims, how, axes), _ => return None))
}

/// A whole interleaved image's filter: both axes' filters, each axis's edge mode and whether
/// colour is blurred in linear light.
#[derive(Clone, Copy)]
pub(crate) struct WholeImage<'a> {
    pub blur: &'a Blur2d,
    pub edge_x: EdgeMode,
    pub edge_y: EdgeMode,
    pub linear: bool,
}

impl WholeImage<'_> {
    /// Blurs `data` (`width`×`height` pixels of `channels` samples, rows without gaps) in
    /// place: the banded blur where it runs this filter, otherwise axis by axis.
    pub(crate) fn blur<T: Sample + Element>(
        &self,
        data: &mut [T],
        dims: (usize, usize, usize),
        alpha: bool,
    ) {
        if self.banded(None, data, dims, alpha) {
            return;
        }
        blur_by_axes(
            data,
            dims,
            ColourHandling {
                alpha,
                linear: self.linear,
            },
            [(&self.blur.y, self.edge_y), (&self.blur.x, self.edge_x)],
        );
    }

    /// The banded blur of `src` (or of `data` itself) into `data`, rows without gaps, where
    /// it runs this filter (edges clamped, the recursive filter or nothing on each axis);
    /// false, nothing done, where it does not.
    pub(crate) fn banded<T: Sample>(
        &self,
        src: Option<&[T]>,
        data: &mut [T],
        (width, height, channels): (usize, usize, usize),
        alpha: bool,
    ) -> bool {
        let clamped = self.edge_x == EdgeMode::Clamp && self.edge_y == EdgeMode::Clamp;
        // An axis left alone (sigma 0) is skipped by the banded blur's one-axis passes.
        let (true, Some(axes)) = (clamped, banded::axis_blocks(self.blur)) else {
            return false;
        };
        let table =
            (self.linear && T::FULL > 1.0).then(|| banded::srgb_table(T::FULL as usize + 1));
        let px = banded::Pixels {
            channels,
            alpha,
            linear: table.as_deref(),
            mix: None,
            sharpen: None,
        };
        let dims = (width, height);
        match src {
            Some(src) => banded::blur_axes_into(src, data, dims, &px, axes),
            None => banded::blur_axes_in_place(data, dims, &px, axes),
        };
        true
    }
}

//! The fast CPU blur: the recursive Gaussian run in place on the decoded image's own
//! interleaved samples (8-bit, 16-bit or f32), in bands of rows, 16 columns per SIMD vector.
//!
//! A full f32 copy of a photo is four times its 8-bit size and would not fit the memory bound
//! (2× the decoded image), so no whole-image intermediate exists. Instead:
//!
//! 1. *Column summaries.* The anticausal column filter's state at every band boundary (4
//!    floats per column per boundary; a band is 128 rows, so the states stay ≤ 1/8 of an 8-bit
//!    image), from the bottom edge up: the bottom band is
//!    walked, and each band above adds a weighted sum of its inputs to the state from below
//!    carried across it (block-parallel filtering's summaries, Nehab et al. 2011), which has
//!    no chain of dependent steps to wait on.
//! 2. *Bands*, top to bottom. For each band the column filter runs anticausally from the
//!    stored state and causally from the state carried out of the band above, into an f32
//!    scratch of the band alone, each 16-row tile transposed as it is finished so that rows
//!    become lanes; then each row of the band is filtered (16 rows at a time, reading that
//!    scratch in order), transposed back (8-bit samples as bytes, after their conversion:
//!    a quarter of the shuffles) and written over the input band, which nothing needs any
//!    more.
//!
//! On f32 samples the filter is `reference::recursive_line`'s difference form (the same
//! sections with the same f32 coefficients, poles on the first differences, numerators on the
//! poles' state, the input added back; `Sample::EXACT`), with FMA where the CPU has it, and
//! subnormals flushed (`FlushSubnormals`), which keeps constant regions bit for bit. On 8- and
//! 16-bit samples it is the direct form: the first sample subtracted, a steady-state start at
//! the clamped end, each section's poles first and its two-tap numerator on their state
//! (`Sections`), three fewer operations per sample and direction than feeding the numerator
//! in; the output's rounding absorbs the few ulps by which the direct form misses a constant.
//! Integer samples are filtered with subnormals flushed too: across a wide zero region (a
//! transparent area, or the unselected part of a mask carried as alpha 0) the direct form's
//! states decay through subnormals, and their microcode assists made the rows pass 2.2 times
//! slower on a 16 MP RGBA image with a transparent disc of radius 1000. Values that small
//! change no rounded output.
//!
//! The files follow the passes: `summaries` is pass 1, `columns` and `rows` are pass 2's two
//! halves (meeting only at `BandScratch`), `groups` runs pass 2 over the image's bands several
//! at a time, `sections` is the filter all three step and
//! `samples` how all three read the image. `window` runs them over a window of rows sliding
//! down a streamed image, and `exact` gives it the true states where the window would be too
//! large.

// Lane loops index several arrays in step; written with indices they vectorise reliably (the
// submodules inherit this).
#![allow(clippy::needless_range_loop)]

mod columns;
mod columns_only;
mod exact;
mod groups;
mod rows;
mod samples;
pub(crate) mod sections;
mod summaries;
#[cfg(test)]
mod tests;
mod window;

pub use exact::{summarise_streamed, ColumnStates};
pub use samples::{luma, Pixels, Sample, Unsharp};
pub use window::{blur_streamed, spilled_plan, two_pass_bytes, two_pass_plan, StripPlan};

use crate::cpu::lanes::LANES;
use crate::cpu::reference::CpuPass;
use crate::filter::gaussian::SECTION_FLOATS;
use crate::filter::{Blur2d, LineFilter};
use crate::pixels::dispatch::each_buffer;
use crate::pixels::planar::Planar;
use crate::pixels::srgb_to_linear;
use columns::{strip_chunks, Strips};
use groups::Groups;
use image::DynamicImage;
use rayon::prelude::*;
use samples::Rows;
use sections::Coef;
use std::time::Instant;
use summaries::{band_states, BandSums};

/// Vectors per column work item: four independent recurrences per row hide the FMA latency.
const VECS: usize = 4;
const CHUNK: usize = VECS * LANES;
/// Fields of a band-boundary state: w and d of both sections.
const BOUNDARY: usize = 4 * VECS;
/// Fields carried from band to band: w, d of both sections and the offset.
const CARRY: usize = 5 * VECS;

/// Rows per band, for every sample type: the boundary states (16 bytes per column) stay ≤ 1/8
/// of an 8-bit image and 1/32 of an f32 one. Measured on one f32 channel, 16 MP: 32-row bands
/// took a third longer, 256-row bands longer still (their weighted sums spill).
const BAND_ROWS: usize = 128;

/// The most bands whose rows are filtered at once (`groups`), each with a scratch of its column
/// results (4 bytes a sample of the band; twice that where the next group's columns run beside
/// them, `Groups::overlapped`).
const MOST_BANDS_AT_ONCE: usize = 4;

/// Blurs `width`×`height` interleaved pixels in place (mixed into the input by `px.mix`,
/// `width`×`height` values, where there is one); returns the time of each pass.
pub fn blur_in_place<T: Sample>(
    data: &mut [T],
    dims: (usize, usize),
    px: &Pixels,
    kx: Axis,
    ky: Axis,
) -> Vec<CpuPass> {
    blur_axes_in_place(data, dims, px, (Some(kx), Some(ky)))
}

/// `blur_in_place` on one channel of f32 samples, compiled in this crate: a caller in another
/// crate (the benchmark suite) runs this copy of the kernels instead of compiling its own.
// `gblur bench` alone uses it (crates/bench), through the internals.
#[cfg(feature = "unstable-internals")]
pub fn blur_gray_f32_in_place(
    data: &mut [f32],
    dims: (usize, usize),
    kx: Axis,
    ky: Axis,
) -> Vec<CpuPass> {
    blur_in_place(data, dims, &Pixels::ONE_CHANNEL, kx, ky)
}

/// `blur_in_place`, where an axis given as None is left alone: a blur along x only skips the
/// column summaries and filter (the columns pass only transposes each band for the rows); one
/// along y only is a single walk down and up each chunk of columns (`columns_only`).
pub fn blur_axes_in_place<T: Sample>(
    data: &mut [T],
    dims: (usize, usize),
    px: &Pixels,
    axes: (Option<Axis>, Option<Axis>),
) -> Vec<CpuPass> {
    blur_axes(None, data, dims, px, axes)
}

/// `blur_axes_in_place` of `src`'s samples into `data` (the same size), which holds nothing
/// needed: where both axes are blurred and nothing is mixed in or sharpened, the first two
/// passes read `src` and the last writes `data`, so no copy is made; otherwise `src` is copied
/// into `data` (on every core) and blurred there.
pub fn blur_axes_into<T: Sample>(
    src: &[T],
    data: &mut [T],
    dims: (usize, usize),
    px: &Pixels,
    axes: (Option<Axis>, Option<Axis>),
) -> Vec<CpuPass> {
    assert_eq!(src.len(), data.len(), "source and image sizes");
    // The unsharp mask reads the input back from `data` as it stores, so it takes the copy.
    if axes.0.is_some() && axes.1.is_some() && px.mix.is_none() && px.sharpen.is_none() {
        return blur_axes(Some(src), data, dims, px, axes);
    }
    data.par_chunks_mut(1 << 16)
        .zip(src.par_chunks(1 << 16))
        .for_each(|(d, s)| d.copy_from_slice(s));
    blur_axes(None, data, dims, px, axes)
}

/// The banded blur of `src` (where given; both axes blurred, nothing mixed in) or of `data`
/// itself, into `data`.
fn blur_axes<T: Sample>(
    src: Option<&[T]>,
    data: &mut [T],
    (width, height): (usize, usize),
    px: &Pixels,
    (kx, ky): (Option<Axis>, Option<Axis>),
) -> Vec<CpuPass> {
    let stride = width * px.channels;
    assert_eq!(data.len(), stride * height, "image buffer size");
    if let Some(m) = px.mix {
        assert_eq!(m.len(), width * height, "selection size");
    }
    if stride == 0 || height == 0 {
        return Vec::new();
    }
    let band = BAND_ROWS;
    if let Some(pass) = one_axis(data, (width, height), px, (kx, ky)) {
        return vec![pass];
    }
    let ky_block = ky.map(Axis::form::<T>);
    let (kx, ky) = (
        kx.map(|a| Coef::of::<T>(a.form::<T>())),
        ky_block.map(Coef::of::<T>),
    );
    let bands = height.div_ceil(band);
    let chunks = stride.div_ceil(CHUNK);
    let strips = Strips {
        chunks,
        strip: strip_chunks(chunks),
        boundaries: (bands - 1) * BOUNDARY,
    };

    let t = Instant::now();
    let img = Rows {
        data: src.unwrap_or(&*data),
        stride,
        height,
    };
    let states = match (ky.as_ref(), ky_block) {
        (Some(k), Some(block)) => {
            let sums = BandSums::new(block, band);
            band_states(img, band, strips, px, (k, &sums), (&[], &[]))
        }
        _ => Vec::new(),
    };
    let summaries_ms = ms(t);

    let groups = Groups {
        bands,
        at_once: rayon::current_num_threads()
            .div_ceil(4)
            .clamp(1, MOST_BANDS_AT_ONCE)
            .min(bands),
        per_band: chunks * band * VECS,
        strips,
        width,
    };
    let k = (kx.as_ref(), ky.as_ref());
    // Several bands at once (more than 4 threads), from another buffer: each group's rows
    // beside the next group's columns (`Groups::overlapped`).
    if let (Some(src), true) = (src, groups.at_once > 1) {
        let img = Rows {
            data: src,
            stride,
            height,
        };
        let (columns_ms, rest_ms) = groups.overlapped(img, data, px, k, &states);
        return vec![
            CpuPass {
                name: "column summaries (y)",
                ms: summaries_ms,
            },
            CpuPass {
                name: "columns (y) of the first bands",
                ms: columns_ms,
            },
            CpuPass {
                name: "rows (x), the next bands' columns (y) beside them",
                ms: rest_ms,
            },
        ];
    }
    let (columns_ms, rows_ms) = groups.in_turn(src, data, px, k, &states);
    named_passes(
        ky.is_some(),
        kx.is_some(),
        [summaries_ms, columns_ms, rows_ms],
    )
}

/// The passes' times, each named for what it did: a pass that only moves samples is named
/// for that.
fn named_passes(ky: bool, kx: bool, [summaries, columns, rows]: [f64; 3]) -> Vec<CpuPass> {
    let passes = [
        (ky, "column summaries (y)", summaries),
        (
            true,
            if ky {
                "columns (y)"
            } else {
                "bands in (y left alone)"
            },
            columns,
        ),
        (
            true,
            if kx {
                "rows (x)"
            } else {
                "bands out (x left alone)"
            },
            rows,
        ),
    ];
    passes
        .into_iter()
        .filter(|(run, ..)| *run)
        .map(|(_, name, ms)| CpuPass { name, ms })
        .collect()
}

/// A blur along one axis alone, where it is one: along y a single walk down and up each chunk
/// of columns, along x the rows pass alone.
fn one_axis<T: Sample>(
    data: &mut [T],
    (width, height): (usize, usize),
    px: &Pixels,
    axes: (Option<Axis>, Option<Axis>),
) -> Option<CpuPass> {
    let t = Instant::now();
    let name = match axes {
        (None, Some(ky)) => {
            columns_only::blur_columns(data, (width, height), px, &Coef::of::<T>(ky.form::<T>()));
            "columns (y)"
        }
        (Some(kx), None) => {
            rows::rows_only(data, width, px, &Coef::of::<T>(kx.form::<T>()));
            "rows (x)"
        }
        _ => return None,
    };
    Some(CpuPass { name, ms: ms(t) })
}

/// Milliseconds since `t`: a pass's time.
fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Both axes' coefficient blocks, where both are recursive (the banded blur runs nothing else).
fn recursive_blocks(blur: &Blur2d) -> Option<(Axis<'_>, Axis<'_>)> {
    Some((Axis::of(&blur.x)?, Axis::of(&blur.y)?))
}

/// One axis's recursive coefficient block (`LineFilter::Recursive`).
type CoefficientBlock = [f32; 2 * SECTION_FLOATS];

/// One axis's recursive filter in both forms, of which the sample type picks one
/// (`Sample::EXACT`): the difference form for floats, the direct form for integer samples.
#[derive(Clone, Copy)]
pub struct Axis<'a> {
    pub direct: &'a CoefficientBlock,
    pub differences: &'a CoefficientBlock,
}

impl<'a> Axis<'a> {
    /// The blocks of a recursive filter; None for an FIR.
    pub fn of(f: &'a LineFilter) -> Option<Self> {
        match f {
            LineFilter::Recursive {
                coefficients,
                differences,
                ..
            } => Some(Axis {
                direct: coefficients,
                differences,
            }),
            LineFilter::Fir { .. } => None,
        }
    }

    fn form<T: Sample>(self) -> &'a CoefficientBlock {
        if T::EXACT {
            self.differences
        } else {
            self.direct
        }
    }
}

/// Blurs every plane of a planar f32 image in place, one plane at a time (each a one-channel
/// image, nothing premultiplied): the fast host path for planes that are not an image's own
/// samples, such as the weighted planes of a normalised convolution. Returns None (and leaves
/// the planes untouched) where an axis is an FIR; the passes are summed over the planes.
pub fn blur_planes(p: &mut Planar, blur: &Blur2d) -> Option<Vec<CpuPass>> {
    let (kx, ky) = recursive_blocks(blur)?;
    let px = Pixels::ONE_CHANNEL;
    let (dims, plane) = ((p.width, p.height), p.plane_len());
    let mut total: Vec<CpuPass> = Vec::new();
    if plane == 0 {
        return Some(total);
    }
    for data in p.data.chunks_exact_mut(plane) {
        let passes = blur_in_place(data, dims, &px, kx, ky);
        if total.is_empty() {
            total = passes;
        } else {
            for (sum, pass) in total.iter_mut().zip(passes) {
                sum.ms += pass.ms;
            }
        }
    }
    Some(total)
}

/// sRGB decoding tables for integer samples, indexed by sample value, in level units.
pub fn srgb_table(levels: usize) -> Vec<f32> {
    let max = (levels - 1) as f32;
    (0..levels)
        .map(|v| srgb_to_linear(v as f32 / max) * max)
        .collect()
}

/// Blurs a decoded image in place with the banded blur. Returns None (and leaves the image
/// untouched) where the banded blur does not apply: an FIR axis, or a colour type it does not
/// know.
pub fn blur_image(img: &mut DynamicImage, blur: &Blur2d, linear: bool) -> Option<Vec<CpuPass>> {
    blur_image_mixed(img, blur, linear, None)
}

/// `blur_image`, the blur mixed into the image by `select` (one value per pixel, `Sample::mix`)
/// as the rows pass writes it, where there is one: a mask's blend in the same passes, with no
/// copy of the input.
pub fn blur_image_mixed(
    img: &mut DynamicImage,
    blur: &Blur2d,
    linear: bool,
    select: Option<&[f32]>,
) -> Option<Vec<CpuPass>> {
    blur_image_with(img, blur, linear, select, None)
}

/// The unsharp mask of a decoded image without alpha, in place: the banded blur whose rows
/// pass stores `in + amount·(in − blur)` (`Pixels::sharpen`). None where the banded blur does
/// not apply or the image has alpha, and for luma on a blur along y alone (that pass stores
/// runs of samples that split pixels; luma needs whole ones).
pub fn sharpen_image(
    img: &mut DynamicImage,
    blur: &Blur2d,
    unsharp: Unsharp,
) -> Option<Vec<CpuPass>> {
    let colour = img.color();
    let luma_by_columns = unsharp.luminance && colour.channel_count() == 3 && blur.x.is_identity();
    if colour.has_alpha() || luma_by_columns {
        return None;
    }
    blur_image_with(img, blur, false, None, Some(unsharp))
}

/// Each axis's recursive blocks, or None for an axis left alone (sigma 0); None where an
/// axis is an FIR, which the banded blur does not run.
pub(crate) fn axis_blocks(blur: &Blur2d) -> Option<(Option<Axis<'_>>, Option<Axis<'_>>)> {
    fn axis(f: &LineFilter) -> Option<Option<Axis<'_>>> {
        match f.is_identity() {
            true => Some(None),
            false => Axis::of(f).map(Some),
        }
    }
    Some((axis(&blur.x)?, axis(&blur.y)?))
}

fn blur_image_with(
    img: &mut DynamicImage,
    blur: &Blur2d,
    linear: bool,
    select: Option<&[f32]>,
    sharpen: Option<Unsharp>,
) -> Option<Vec<CpuPass>> {
    let axes = axis_blocks(blur)?;
    let dims = (img.width() as usize, img.height() as usize);
    let color = img.color();
    let (channels, alpha) = (color.channel_count() as usize, color.has_alpha());
    let levels = match img {
        DynamicImage::ImageLuma8(_)
        | DynamicImage::ImageLumaA8(_)
        | DynamicImage::ImageRgb8(_)
        | DynamicImage::ImageRgba8(_) => 256,
        _ => 65536,
    };
    let table = (linear && crate::pixels::is_integer(color)).then(|| srgb_table(levels));
    let px = Pixels {
        channels,
        alpha,
        linear: table.as_deref(),
        mix: select,
        sharpen,
    };
    let passes = each_buffer!(img, b => blur_axes_in_place(b, dims, &px, axes), _ => return None);
    Some(passes)
}

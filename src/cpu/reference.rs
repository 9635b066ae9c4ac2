//! The planar reference blur: the same f32 operations in the same order as
//! `kernels/recursive_gaussian.cl` and `kernels/convolution.cl`, so the OpenCL kernels agree with
//! it to rounding (FMA contraction on the device aside) and the banded blur to a few roundings;
//! both are tested against it. It is also the Rust path for what the banded blur does not take
//! (FIR axes, planar working images) where no OpenCL device runs the blur.
//!
//! Rows are filtered in parallel (rayon); columns are filtered as rows of a blocked transpose,
//! which keeps every pass reading memory in order.

use crate::filter::gaussian::{INPUT_WEIGHT, SECTION_FLOATS};
use crate::filter::{Blur2d, LineFilter};
use crate::pixels::planar::Planar;
use rayon::prelude::*;
use std::time::Instant;

/// Host time of one pass of the Rust path, in milliseconds.
#[derive(Clone, Debug)]
pub struct CpuPass {
    pub name: &'static str,
    pub ms: f64,
}

/// Blurs `img` along both axes; returns the result and the time of each pass.
pub fn blur(img: &Planar, blur: &Blur2d) -> (Planar, Vec<CpuPass>) {
    let (w, h) = (img.width, img.height);
    let mut passes = Vec::new();
    let mut timed = |name, f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        passes.push(CpuPass {
            name,
            ms: t.elapsed().as_secs_f64() * 1e3,
        });
    };
    let mut a = img.data.clone();
    let mut b = vec![0f32; a.len()];
    timed("row pass (x)", &mut || filter_rows(&a, &mut b, w, &blur.x));
    timed("transpose 1", &mut || transpose_planes(&b, &mut a, w, h));
    timed("row pass (y)", &mut || filter_rows(&a, &mut b, h, &blur.y));
    timed("transpose 2", &mut || transpose_planes(&b, &mut a, h, w));
    let out = Planar {
        data: a,
        ..img.clone()
    };
    (out, passes)
}

/// The reference on a decoded image: premultiplied planar f32 through `blur`, then back to
/// the image's own colour type. What the banded blur and the benches are checked against.
pub fn blur_image(img: &image::DynamicImage, blur2d: &Blur2d, linear: bool) -> image::DynamicImage {
    let (p, layout) = crate::pixels::to_planar(img, linear);
    let (mut out, _) = blur(&p, blur2d);
    crate::pixels::finish_planar(&mut out, layout);
    crate::pixels::from_planar(&out, layout.color, img.color())
}

/// Largest difference between two images' samples, as fractions of full scale.
// `gblur bench` (crates/bench, through the internals) and the tests use it.
#[cfg(any(test, feature = "unstable-internals"))]
pub fn max_difference(a: &image::DynamicImage, b: &image::DynamicImage) -> f32 {
    let (a, b) = (a.to_rgba32f(), b.to_rgba32f());
    a.as_raw()
        .iter()
        .zip(b.as_raw())
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// Filters every line of `line_len` samples in `src` into `dst`, lines in parallel.
pub fn filter_rows(src: &[f32], dst: &mut [f32], line_len: usize, filter: &LineFilter) {
    src.par_chunks(line_len)
        .zip(dst.par_chunks_mut(line_len))
        .for_each(|(s, d)| filter_line(s, d, filter));
}

/// One line through `filter`, as the OpenCL kernels run it: a derivative's 8th-order filter is
/// its first block's output with the second block's sections added after it.
pub fn filter_line(src: &[f32], dst: &mut [f32], filter: &LineFilter) {
    match filter {
        LineFilter::Recursive {
            differences,
            second,
            ..
        } => {
            recursive_line(src, dst, differences);
            if let Some(second) = second {
                let mut more = vec![0f32; src.len()];
                recursive_line(src, &mut more, second);
                dst.iter_mut().zip(&more).for_each(|(d, m)| *d += m);
            }
        }
        LineFilter::Fir { taps, .. } => fir_line(src, dst, taps, filter.input_weight()),
    }
}

/// One line through the causal and anticausal 2nd-order sections in their difference form
/// (`RecursiveGaussian::to_f32_difference_block`): the sections' poles filter the first
/// differences `x[i] − x[i−1]`, their numerators weigh the poles' state, and each output is its
/// input (times the block's `INPUT_WEIGHT`: 1 for the Gaussian, 0 for a derivative) plus the
/// four weighted states. The clamped edges repeat the end samples, whose
/// differences are 0, so both halves start from a zero state; and where the input is constant
/// over the filter's reach every difference is exactly 0, what the sections add has decayed
/// below half an ulp of the input, and the output is the input bit for bit.
pub fn recursive_line(src: &[f32], dst: &mut [f32], coef: &[f32; 2 * SECTION_FLOATS]) {
    let n = src.len();
    if n == 0 {
        return;
    }
    let s = |k: usize, i: usize| coef[k * SECTION_FLOATS + i];
    let (cw, cd, aw, ad) = (
        [s(0, 0), s(1, 0)],
        [s(0, 1), s(1, 1)],
        [s(0, 2), s(1, 2)],
        [s(0, 3), s(1, 3)],
    );
    let (eps, q) = ([s(0, 4), s(1, 4)], [s(0, 5), s(1, 5)]);
    let input_weight = coef[INPUT_WEIGHT];

    // Causal, on the difference from the sample before (the first sample before the line).
    let (mut w, mut d) = ([0f32; 2], [0f32; 2]);
    let mut xp = src[0];
    for i in 0..n {
        let x = src[i] - xp;
        let mut sum = 0f32;
        for k in 0..2 {
            let t = x - eps[k] * w[k] + (d[k] - q[k] * d[k]);
            d[k] = t;
            w[k] += t;
            sum += cw[k] * w[k] + cd[k] * d[k];
        }
        dst[i] = sum;
        xp = src[i];
    }

    // Anticausal, on the difference after each sample (0 past the line's end).
    let (mut w, mut d) = ([0f32; 2], [0f32; 2]);
    let mut x1 = 0f32;
    for i in (0..n).rev() {
        let mut sum = 0f32;
        for k in 0..2 {
            let t = x1 - eps[k] * w[k] + (d[k] - q[k] * d[k]);
            d[k] = t;
            w[k] += t;
            sum += aw[k] * w[k] + ad[k] * d[k];
        }
        dst[i] = input_weight * src[i] + (dst[i] + sum);
        x1 = if i > 0 { src[i] - src[i - 1] } else { 0.0 };
    }
}

/// One line through the sampled-Gaussian FIR, clamping reads to the line.
///
/// Each output is its own input plus the taps' weighted differences from it: where every
/// sample under the taps equals the centre, each difference is exactly 0 and the output is the
/// input bit for bit (a constant region of 1e4 stays 1e4), whatever the f32 rounding of the
/// taps and of their sum. `input_weight` is the taps' sum (`LineFilter::input_weight`).
pub fn fir_line(src: &[f32], dst: &mut [f32], taps: &[f32], input_weight: f32) {
    let n = src.len() as isize;
    let r = (taps.len() / 2) as isize;
    for (i, out) in dst.iter_mut().enumerate() {
        let centre = src[i];
        let i = i as isize;
        let mut acc = 0f32;
        for (k, &t) in taps.iter().enumerate() {
            let j = (i + k as isize - r).clamp(0, n - 1);
            acc += t * (src[j as usize] - centre);
        }
        *out = acc + input_weight * centre;
    }
}

/// Transposes each `w`×`h` plane of `src` into an `h`×`w` plane of `dst`, in cache blocks.
pub fn transpose_planes(src: &[f32], dst: &mut [f32], w: usize, h: usize) {
    const B: usize = 32;
    let plane = w * h;
    if plane == 0 {
        return;
    }
    // Parallel over bands of B output rows (= B input columns) of every plane.
    dst.par_chunks_mut(plane)
        .zip(src.par_chunks(plane))
        .for_each(|(d, s)| {
            d.par_chunks_mut(B * h).enumerate().for_each(|(band, out)| {
                let x0 = band * B;
                let bw = (w - x0).min(B);
                for y0 in (0..h).step_by(B) {
                    for y in y0..(y0 + B).min(h) {
                        let row = &s[y * w + x0..y * w + x0 + bw];
                        for (dx, &v) in row.iter().enumerate() {
                            out[dx * h + y] = v;
                        }
                    }
                }
            });
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::Method;

    #[test]
    fn transpose_round_trips() {
        let (w, h) = (37, 5);
        let src: Vec<f32> = (0..2 * w * h).map(|i| i as f32).collect();
        let mut t = vec![0f32; src.len()];
        let mut back = vec![0f32; src.len()];
        transpose_planes(&src, &mut t, w, h);
        assert_eq!(t[3 * h + 2], src[2 * w + 3]);
        assert_eq!(t[w * h + 3 * h + 2], src[w * h + 2 * w + 3]);
        transpose_planes(&t, &mut back, h, w);
        assert_eq!(src, back);
    }

    #[test]
    fn constant_line_stays_constant() {
        for sigma in [2.0, 40.0, 3000.0] {
            let f = LineFilter::new(Method::Recursive, sigma);
            let src = vec![0.73f32; 501];
            let mut dst = vec![0f32; 501];
            filter_line(&src, &mut dst, &f);
            assert!(dst.iter().all(|&v| v == 0.73), "sigma {sigma}");
        }
    }
}

//! Normalised convolution (Knutsson & Westin 1993): every plane is blurred multiplied by its
//! weight, beside the blurred weight, and divided by it afterwards, so that a pixel of weight
//! 0 adds nothing to its neighbours. With premultiplied alpha the colour's weight becomes
//! alpha · weight, as `to_planar` already multiplies colour by alpha.

use super::{Masked, MIN_WEIGHT};
use crate::pixels::{self, planar::Planar, Layout, SAMPLE_LIMIT};
use image::DynamicImage;
use rayon::prelude::*;

/// The weighted planes of `original`: its premultiplied planar f32 planes times their weights,
/// then the weights. The weight is the selection (1 where there is none); with `--nan ignore`
/// also 0 on non-finite samples, one weight plane per channel (a colour sample counts where it
/// and its alpha are finite).
pub fn weighted(original: &DynamicImage, select: Option<&[f32]>, m: &Masked) -> (Planar, Layout) {
    if let (true, DynamicImage::ImageRgb32F(b)) = (m.nan, original) {
        let layout = Layout {
            color: image::ColorType::Rgb32F,
            linear: false,
        };
        return (nan_weighted_rgb(b, select), layout);
    }
    weighted_planes(original, select, m.nan, m.linear)
}

/// `weighted` for any image, through a planar copy (`nan`: `--nan ignore`).
fn weighted_planes(
    original: &DynamicImage,
    select: Option<&[f32]>,
    nan: bool,
    linear: bool,
) -> (Planar, Layout) {
    let (mut p, layout) = if nan {
        pixels::to_planar(&with_nan_marks(original), linear)
    } else {
        pixels::to_planar(original, linear)
    };
    let (channels, plane) = (p.channels, p.plane_len());
    let weights = if nan { channels } else { 1 };
    p.data.resize((channels + weights) * plane, 0.0);
    p.channels = channels + weights;
    if plane == 0 {
        return (p, layout);
    }
    let (values, weight_planes) = p.data.split_at_mut(channels * plane);
    let select_at = |i: usize| select.map_or(1.0, |s| s[i]);
    if nan {
        values
            .par_chunks_mut(plane)
            .zip(weight_planes.par_chunks_mut(plane))
            .for_each(|(v, w)| {
                for (i, (v, w)) in v.iter_mut().zip(w.iter_mut()).enumerate() {
                    // NaN marks every non-finite sample (with_nan_marks), also through the
                    // premultiplication.
                    let (value, weight) = if v.is_nan() { (0.0, 0.0) } else { (*v, 1.0) };
                    *w = weight * select_at(i);
                    *v = value * *w;
                }
            });
    } else {
        let w = &mut weight_planes[..plane];
        w.par_iter_mut()
            .enumerate()
            .for_each(|(i, w)| *w = select_at(i));
        let w = &*w;
        values.par_chunks_mut(plane).for_each(|v| {
            for (v, w) in v.iter_mut().zip(w) {
                *v *= *w;
            }
        });
    }
    (p, layout)
}

/// Pixels per work item of the passes over RGB f32 below: 256 KiB of each plane.
const RUN: usize = 1 << 16;

/// The planes of `data` (`plane` values each) cut into runs of `RUN` values, grouped by run:
/// item `i` holds run `i` of every plane, so that one work item fills (or reads) every plane
/// of a stretch of pixels.
fn plane_runs(data: &mut [f32], plane: usize) -> Vec<Vec<&mut [f32]>> {
    let mut planes: Vec<_> = data.chunks_mut(plane).map(|p| p.chunks_mut(RUN)).collect();
    (0..plane.div_ceil(RUN))
        .map(|_| planes.iter_mut().filter_map(Iterator::next).collect())
        .collect()
}

/// Whether each pixel's three samples are finite together or not at all, as rasters mark
/// their nodata pixels: then the three weight planes would be one plane three times. Stops at
/// the first pixel where they differ.
fn nan_by_pixel(raw: &[f32]) -> bool {
    raw.par_chunks(RUN * 3).all(|run| {
        run.chunks_exact(3).all(|px| {
            let finite = px[0].is_finite();
            px[1].is_finite() == finite && px[2].is_finite() == finite
        })
    })
}

/// An RGB f32 sample as `--nan ignore` weighs it, and its weight: as `with_nan_marks` and the
/// loop in `weighted` make them (a finite value cleaned, with weight 1; anything else 0, 0).
fn valid_sample(v: f32) -> (f32, f32) {
    if v.is_finite() {
        (v.clamp(-SAMPLE_LIMIT, SAMPLE_LIMIT), 1.0)
    } else {
        (0.0, 0.0)
    }
}

/// `weighted` for `--nan ignore` on RGB f32 (no alpha to premultiply by, linear already): the
/// same planes (value × weight, then the weights) in one pass over the samples, instead of a
/// marked copy, a planar copy, its growth and a pass over that. Where the non-finite samples
/// come by whole pixels (`nan_by_pixel`), one weight plane serves the three channels: four
/// planes to blur instead of six, the same results to the bit.
fn nan_weighted_rgb(raw: &image::Rgb32FImage, select: Option<&[f32]>) -> Planar {
    let (width, height) = (raw.width() as usize, raw.height() as usize);
    let plane = width * height;
    let shared = nan_by_pixel(raw);
    let channels = if shared { 4 } else { 6 };
    let mut data = vec![0.0f32; channels * plane];
    if plane > 0 {
        let raw: &[f32] = raw;
        plane_runs(&mut data, plane)
            .into_par_iter()
            .enumerate()
            .for_each(|(r, mut planes)| {
                let p0 = r * RUN;
                for i in 0..planes[0].len() {
                    let m = select.map_or(1.0, |s| s[p0 + i]);
                    for c in 0..3 {
                        let (value, weight) = valid_sample(raw[(p0 + i) * 3 + c]);
                        let w = weight * m;
                        planes[c][i] = value * w;
                        planes[if shared { 3 } else { 3 + c }][i] = w;
                    }
                }
            });
    }
    Planar {
        width,
        height,
        channels,
        data,
    }
}

/// `normalise`, `pixels::from_planar` and `blend::mix` at once for `--nan ignore` on RGB f32:
/// the blurred weighted planes of `nan_weighted_rgb` (three weight planes, or one for all),
/// divided by their weights, mixed into `input` in place by the selection (None: 1), a sample
/// no weight reached keeping its input.
pub fn nan_mix_rgb(input: &mut image::Rgb32FImage, p: &mut Planar, select: Option<&[f32]>) {
    let plane = p.plane_len();
    assert!(
        matches!(p.channels, 4 | 6) && plane * 3 == input.len(),
        "weighted RGB planes"
    );
    let last_weight = p.channels - 1;
    if plane == 0 {
        return;
    }
    let input: &mut [f32] = input;
    input
        .par_chunks_mut(RUN * 3)
        .zip(plane_runs(&mut p.data, plane))
        .enumerate()
        .for_each(|(r, (out, planes))| {
            let p0 = r * RUN;
            for (i, px) in out.chunks_exact_mut(3).enumerate() {
                let m = select.map_or(1.0, |s| s[p0 + i]);
                for c in 0..3 {
                    let w = planes[(3 + c).min(last_weight)][i];
                    let v = if w >= MIN_WEIGHT {
                        planes[c][i] / w
                    } else {
                        f32::NAN
                    };
                    px[c] = super::blend::mix_f32(px[c], v, m, true);
                }
            }
        });
}

/// A float image with every non-finite sample made NaN and the finite ones cleaned as
/// `pixels::sanitize_image` cleans them (|v| ≤ 1e30, alpha in [0, 1]); integer images as
/// they are.
fn with_nan_marks(image: &DynamicImage) -> DynamicImage {
    let mark = |v: &mut f32, limit: f32| {
        *v = if v.is_finite() {
            v.clamp(-limit, limit)
        } else {
            f32::NAN
        }
    };
    let mut image = image.clone();
    match &mut image {
        DynamicImage::ImageRgb32F(b) => b.iter_mut().for_each(|v| mark(v, SAMPLE_LIMIT)),
        DynamicImage::ImageRgba32F(b) => {
            for px in b.chunks_exact_mut(4) {
                px[..3].iter_mut().for_each(|v| mark(v, SAMPLE_LIMIT));
                mark(&mut px[3], SAMPLE_LIMIT);
                if !px[3].is_nan() {
                    px[3] = px[3].clamp(0.0, 1.0);
                }
            }
        }
        _ => {}
    }
    image
}

/// Divides the first `channels` planes of a blurred weighted image by their blurred weights
/// and drops the weight planes. Where a weight is below `MIN_WEIGHT` (nothing selected and
/// valid reaches the pixel) the pixel keeps its input: per channel, by a NaN that
/// `blend::mix` reads as "the input" (`per_channel`, float images only); else by clearing its
/// selection.
pub fn normalise(
    p: &mut Planar,
    channels: usize,
    per_channel: bool,
    select: Option<&mut Vec<f32>>,
) {
    let plane = p.plane_len();
    if plane > 0 {
        let (values, weights) = p.data.split_at_mut(channels * plane);
        if !per_channel {
            let w = &weights[..plane];
            if let Some(s) = select {
                s.par_iter_mut().zip(w).for_each(|(s, w)| {
                    if *w < MIN_WEIGHT {
                        *s = 0.0
                    }
                });
            }
        }
        let weights = &*weights;
        values.par_chunks_mut(plane).enumerate().for_each(|(c, v)| {
            let w = &weights[if per_channel { c * plane } else { 0 }..][..plane];
            for (v, w) in v.iter_mut().zip(w) {
                *v = if *w >= MIN_WEIGHT {
                    *v / *w
                } else if per_channel {
                    f32::NAN
                } else {
                    0.0
                };
            }
        });
    }
    p.data.truncate(channels * plane);
    p.channels = channels;
}

/// `exclude` on the banded Rust blur, for images without alpha: the selection becomes the
/// image's alpha channel, and the banded blur's premultiplied path is then the normalised
/// convolution itself (colour blur(m·c)/blur(m), alpha blur(m)), in place on the samples with
/// no f32 copy. Integer alpha holds the weight to 1/255 (8-bit) or 1/65535 (16-bit); f32
/// exactly. None for images with alpha (their weight is alpha · m: the planar path).
pub fn as_alpha(original: &DynamicImage, select: &[f32]) -> Option<DynamicImage> {
    let (w, h) = (original.width(), original.height());
    let to_u8 = |m: f32| (m * 255.0 + 0.5) as u8;
    let to_u16 = |m: f32| (m * 65535.0 + 0.5) as u16;
    Some(match original {
        DynamicImage::ImageLuma8(b) => {
            DynamicImage::ImageLumaA8(buffer(w, h, add_alpha::<_, 1>(b, select, to_u8)))
        }
        DynamicImage::ImageRgb8(b) => {
            DynamicImage::ImageRgba8(buffer(w, h, add_alpha::<_, 3>(b, select, to_u8)))
        }
        DynamicImage::ImageLuma16(b) => {
            DynamicImage::ImageLumaA16(buffer(w, h, add_alpha::<_, 1>(b, select, to_u16)))
        }
        DynamicImage::ImageRgb16(b) => {
            DynamicImage::ImageRgba16(buffer(w, h, add_alpha::<_, 3>(b, select, to_u16)))
        }
        DynamicImage::ImageRgb32F(b) => {
            DynamicImage::ImageRgba32F(buffer(w, h, add_alpha::<_, 3>(b, select, |m| m)))
        }
        _ => return None,
    })
}

/// `--nan ignore` on the Rust path for RGB f32 whose non-finite samples come by whole pixels
/// (`nan_by_pixel`): the pixels as RGBA f32 with the weight (valid, times the selection) as
/// alpha, a non-finite pixel's colour 0, so that the banded blur's premultiplied path
/// computes the normalised convolution in place over four interleaved channels, as
/// `as_alpha` does for `exclude`. None for any other image.
pub fn nan_as_alpha(original: &DynamicImage, select: Option<&[f32]>) -> Option<DynamicImage> {
    let DynamicImage::ImageRgb32F(raw) = original else {
        return None;
    };
    if !nan_by_pixel(raw) {
        return None;
    }
    let (w, h) = (raw.width(), raw.height());
    let mut out = super::pages::filled::<f32>(w as usize * h as usize * 4);
    out.par_chunks_mut(RUN * 4)
        .zip(raw.par_chunks(RUN * 3))
        .enumerate()
        .for_each(|(r, (out, raw))| {
            let p0 = r * RUN;
            for (i, (o, px)) in out.chunks_exact_mut(4).zip(raw.chunks_exact(3)).enumerate() {
                let m = select.map_or(1.0, |s| s[p0 + i]);
                // The pixel's samples are valid together or not at all (`nan_by_pixel`).
                for c in 0..3 {
                    let (value, weight) = valid_sample(px[c]);
                    o[c] = value;
                    o[3] = weight * m;
                }
            }
        });
    Some(DynamicImage::ImageRgba32F(buffer(w, h, out)))
}

fn buffer<P: image::Pixel>(
    w: u32,
    h: u32,
    data: Vec<P::Subpixel>,
) -> image::ImageBuffer<P, Vec<P::Subpixel>> {
    image::ImageBuffer::from_raw(w, h, data).expect("sizes agree")
}

/// `raw`'s pixels of `C` samples each, followed by the selection as `alpha` makes it. `C` is
/// a constant so that each pixel's copy is a few moves, not a call.
fn add_alpha<T: Copy + Send + Sync + Default, const C: usize>(
    raw: &[T],
    select: &[f32],
    alpha: impl Fn(f32) -> T + Sync,
) -> Vec<T> {
    let mut out = super::pages::filled::<T>(select.len() * (C + 1));
    out.par_chunks_mut(4096 * (C + 1))
        .zip(raw.par_chunks(4096 * C))
        .zip(select.par_chunks(4096))
        .for_each(|((out, raw), m)| {
            for ((o, r), m) in out.chunks_exact_mut(C + 1).zip(raw.chunks_exact(C)).zip(m) {
                let r: &[T; C] = r.try_into().expect("C samples");
                o[..C].copy_from_slice(r);
                o[C] = alpha(*m);
            }
        });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RGB f32 samples with NaN, ±Inf and magnitudes past `SAMPLE_LIMIT` among them, and a
    /// selection of 0, 1 and grey values, over more than one `RUN` of pixels.
    fn input() -> (image::Rgb32FImage, Vec<f32>) {
        let (w, h) = (301u32, 250u32);
        let special = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 3e31, -2e38];
        let img = image::Rgb32FImage::from_fn(w, h, |x, y| {
            image::Rgb(std::array::from_fn(|c| {
                let k = (x * 7 + y * 13 + c as u32 * 5) % 97;
                match k {
                    0..=4 => special[k as usize],
                    _ => (k as f32 - 40.0) / 37.0,
                }
            }))
        });
        let select = (0..w * h)
            .map(|i| [0.0, 1.0, 0.25, 0.8][(i % w / 9 + i / w / 5) as usize % 4])
            .collect();
        (img, select)
    }

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|v| v.to_bits()).collect()
    }

    /// NaN by whole pixels (nodata): one weight plane for the three channels, whose planes
    /// and mix are the six-plane route's to the bit.
    #[test]
    fn nan_by_whole_pixels_shares_one_weight_plane() {
        let (img, select) = input();
        let by_pixel = image::Rgb32FImage::from_fn(img.width(), img.height(), |x, y| {
            let px = *img.get_pixel(x, y);
            match px.0[0].is_finite() {
                true => image::Rgb(px.0.map(|v| if v.is_finite() { v } else { 0.5 })),
                false => image::Rgb([f32::NAN; 3]),
            }
        });
        let image = DynamicImage::ImageRgb32F(by_pixel.clone());
        for select in [None, Some(&select[..])] {
            let mut shared = nan_weighted_rgb(&by_pixel, select);
            assert_eq!(shared.channels, 4);
            let (general, _) = weighted_planes(&image, select, true, false);
            let plane = shared.plane_len();
            assert_eq!(bits(&shared.data), bits(&general.data[..4 * plane]));
            for c in 4..6 {
                let w = &general.data[c * plane..(c + 1) * plane];
                assert_eq!(bits(w), bits(&shared.data[3 * plane..]));
            }
            // Stand-ins for the blurred planes, the same on every weight plane.
            for (i, v) in shared.data.iter_mut().enumerate() {
                *v *= [1.0, 0.7, 1e-4][i % plane % 3];
            }
            let mut six = shared.clone();
            six.data.extend_from_within(3 * plane..);
            six.data.extend_from_within(3 * plane..4 * plane);
            six.channels = 6;
            let (mut want, mut got) = (by_pixel.clone(), by_pixel.clone());
            nan_mix_rgb(&mut want, &mut six, select);
            nan_mix_rgb(&mut got, &mut shared, select);
            assert_eq!(bits(&got), bits(&want));
        }
        assert!(!nan_by_pixel(&img));
    }

    #[test]
    fn rgb_nan_planes_and_their_mix_are_the_general_paths_bit_for_bit() {
        let (img, select) = input();
        let image = DynamicImage::ImageRgb32F(img.clone());
        for select in [None, Some(&select[..])] {
            let (general, layout) = weighted_planes(&image, select, true, false);
            let mut fast = nan_weighted_rgb(&img, select);
            assert_eq!(bits(&fast.data), bits(&general.data));
            // Stand-ins for the blurred planes: weights scaled down to below `MIN_WEIGHT` in
            // places, so that every branch of the normalisation runs.
            let plane = fast.plane_len();
            for (i, v) in fast.data.iter_mut().enumerate() {
                *v *= [1.0, 0.7, 1e-4][i % plane % 3];
            }
            let mut general = fast.clone();
            normalise(&mut general, 3, true, None);
            let blurred = pixels::from_planar(&general, layout.color, layout.color);
            let want = super::super::blend::mix(&image, blurred, select, true);
            let mut got = img.clone();
            nan_mix_rgb(&mut got, &mut fast, select);
            assert_eq!(bits(&got), bits(want.as_rgb32f().unwrap()));
        }
    }
}

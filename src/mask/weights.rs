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
    let (mut p, layout) = if m.nan {
        pixels::to_planar(&with_nan_marks(original), m.linear)
    } else {
        pixels::to_planar(original, m.linear)
    };
    let (channels, plane) = (p.channels, p.plane_len());
    let weights = if m.nan { channels } else { 1 };
    p.data.resize((channels + weights) * plane, 0.0);
    p.channels = channels + weights;
    if plane == 0 {
        return (p, layout);
    }
    let (values, weight_planes) = p.data.split_at_mut(channels * plane);
    let select_at = |i: usize| select.map_or(1.0, |s| s[i]);
    if m.nan {
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
    let mut out = vec![T::default(); select.len() * (C + 1)];
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

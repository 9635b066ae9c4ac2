//! Between decoded images and the planar working image: sample scaling, optional sRGB
//! linearisation, and premultiplied alpha, so that transparent pixels (whose colour is often
//! black) cannot bleed dark halos into their neighbours (image-rs#2324, Pillow#3494, sharp#211).

pub(crate) mod dispatch;
pub mod planar;
pub mod quantise;

use image::{ColorType, DynamicImage, ImageBuffer};
use planar::Planar;
use rayon::prelude::*;

/// What the working image stands for: how to turn it back into samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The input's colour type.
    pub color: ColorType,
    /// Whether colour was converted from sRGB to linear light.
    pub linear: bool,
}

impl Layout {
    pub fn has_alpha(&self) -> bool {
        self.color.has_alpha()
    }
}

/// Largest magnitude a float sample keeps. The filter subtracts a line's first sample from
/// every other and sums a few scaled copies; far below `f32::MAX`, none of that can overflow.
pub const SAMPLE_LIMIT: f32 = 1e30;

/// gblur's policy for float samples (OpenEXR, HDR, float TIFF): NaN, +Inf and -Inf become 0,
/// and finite magnitudes above `SAMPLE_LIMIT` are clamped to it. A recursive filter carries
/// every sample into all that follow it, so a single NaN would otherwise turn the rest of its
/// row and, after the second pass, most of the image into NaN. Returns how many samples
/// changed.
pub fn sanitize_samples(data: &mut [f32]) -> usize {
    data.par_iter_mut()
        .map(|v| {
            let fixed = if v.is_finite() {
                v.clamp(-SAMPLE_LIMIT, SAMPLE_LIMIT)
            } else {
                0.0
            };
            let changed = fixed.to_bits() != v.to_bits();
            *v = fixed;
            changed as usize
        })
        .sum()
}

/// Applies `sanitize_samples` to a decoded float image (integer images need nothing), and
/// clamps float alpha to [0, 1]: colour is multiplied by alpha, and 1e30 × 1e30 is +Inf
/// (found by the `decode_blur_encode` fuzz target, an OpenEXR file). Returns the note to
/// report, if any sample changed.
pub fn sanitize_image(img: &mut DynamicImage) -> Option<String> {
    let changed = match img {
        DynamicImage::ImageRgb32F(b) => sanitize_samples(b.as_mut()),
        DynamicImage::ImageRgba32F(b) => {
            let samples: &mut [f32] = b.as_mut();
            let mut changed = sanitize_samples(samples);
            for a in samples.iter_mut().skip(3).step_by(4) {
                if !(0.0..=1.0).contains(a) {
                    *a = a.clamp(0.0, 1.0);
                    changed += 1;
                }
            }
            changed
        }
        _ => 0,
    };
    (changed > 0).then(|| {
        format!("{changed} non-finite or out-of-range float samples (NaN, ±Inf, |v| > 1e30, alpha outside [0, 1]) were replaced (NaN/Inf by 0, the rest clamped) before the blur")
    })
}

pub fn is_integer(color: ColorType) -> bool {
    !matches!(color, ColorType::Rgb32F | ColorType::Rgba32F)
}

/// Converts a decoded image into premultiplied planar f32: integer samples scaled to [0, 1],
/// float samples as they are. `linear` decodes sRGB colour (integer images only: float formats
/// are linear already).
pub fn to_planar(img: &DynamicImage, linear: bool) -> (Planar, Layout) {
    let color = img.color();
    let linear = linear && is_integer(color);
    let (w, h) = (img.width() as usize, img.height() as usize);
    let mut p = match img {
        DynamicImage::ImageLuma8(b) => split(b.as_raw(), w, h, 1, u8_to_f32),
        DynamicImage::ImageLumaA8(b) => split(b.as_raw(), w, h, 2, u8_to_f32),
        DynamicImage::ImageRgb8(b) => split(b.as_raw(), w, h, 3, u8_to_f32),
        DynamicImage::ImageRgba8(b) => split(b.as_raw(), w, h, 4, u8_to_f32),
        DynamicImage::ImageLuma16(b) => split(b.as_raw(), w, h, 1, u16_to_f32),
        DynamicImage::ImageLumaA16(b) => split(b.as_raw(), w, h, 2, u16_to_f32),
        DynamicImage::ImageRgb16(b) => split(b.as_raw(), w, h, 3, u16_to_f32),
        DynamicImage::ImageRgba16(b) => split(b.as_raw(), w, h, 4, u16_to_f32),
        DynamicImage::ImageRgb32F(b) => split(b.as_raw(), w, h, 3, |v| v),
        other => split(other.to_rgba32f().as_raw(), w, h, 4, |v| v),
    };
    let color = match img {
        DynamicImage::ImageRgb32F(_) => color,
        _ if p.channels == 4 && color.channel_count() != 4 => ColorType::Rgba32F,
        _ => color,
    };
    let layout = Layout { color, linear };
    let colour_planes = if layout.has_alpha() {
        p.channels - 1
    } else {
        p.channels
    };
    let plane = p.plane_len();
    if linear {
        p.data[..colour_planes * plane]
            .par_iter_mut()
            .for_each(|v| *v = srgb_to_linear(*v));
    }
    if layout.has_alpha() {
        let (colour, alpha) = p.data.split_at_mut(colour_planes * plane);
        colour.par_chunks_mut(plane).for_each(|c| {
            for (v, a) in c.iter_mut().zip(alpha.iter()) {
                *v *= *a;
            }
        });
    }
    (p, layout)
}

/// Un-premultiplies and re-encodes colour in place (the inverse of `to_planar`'s maths).
pub fn finish_planar(p: &mut Planar, layout: Layout) {
    let plane = p.plane_len();
    let colour_planes = if layout.has_alpha() {
        p.channels - 1
    } else {
        p.channels
    };
    if layout.has_alpha() {
        let (colour, alpha) = p.data.split_at_mut(colour_planes * plane);
        colour.par_chunks_mut(plane).for_each(|c| {
            for (v, &a) in c.iter_mut().zip(alpha.iter()) {
                // Where nothing is left of any pixel's coverage the colour is undefined; 0.
                // A NaN stays: it marks a sample no weight reached (`mask::weights`).
                *v = if a > 1e-7 || v.is_nan() { *v / a } else { 0.0 };
            }
        });
    }
    if layout.linear {
        p.data[..colour_planes * plane]
            .par_iter_mut()
            .for_each(|v| *v = linear_to_srgb(*v));
    }
}

/// Builds an image of colour type `target` from a finished planar image whose channels follow
/// `source` (gray, gray+alpha, RGB or RGBA). Drops alpha or spreads gray to RGB as `target`
/// needs; integer targets are clamped to [0, 1] and rounded.
pub fn from_planar(p: &Planar, source: ColorType, target: ColorType) -> DynamicImage {
    from_planar_with(p, source, target, false).image
}

/// An image converted to its output colour type, and what the conversion did.
pub struct Converted {
    pub image: DynamicImage,
    /// Float samples outside [0, 1] clipped to an integer output's range.
    pub clipped: usize,
    /// Whether dither was added (asked for, and the output has fewer bits than the source).
    pub dithered: bool,
}

/// Bits per sample of a colour type.
pub fn sample_bits(c: ColorType) -> u32 {
    8 * (c.bytes_per_pixel() / c.channel_count()) as u32
}

/// Whether `--dither` applies: an integer output with fewer bits than the source.
fn dithers(dither: bool, source: ColorType, target: ColorType) -> bool {
    dither && is_integer(target) && sample_bits(target) < sample_bits(source)
}

/// `from_planar`, counting the float samples an integer `target` clips and, when `dither`
/// and `target` has fewer bits than `source`, dithering before rounding (`quantise`).
pub fn from_planar_with(
    p: &Planar,
    source: ColorType,
    target: ColorType,
    dither: bool,
) -> Converted {
    let map = plane_map(p.channels, source, target);
    let clipped = if !is_integer(source) && is_integer(target) {
        count_mapped_outside(p, &map)
    } else {
        0
    };
    let dithered = dithers(dither, source, target);
    let (w, h) = (p.width as u32, p.height as u32);
    let u8s = || {
        interleave(p, &map, |v, k| {
            quantise::to_steps(v, 255.0, quantise::noise(dithered, k)) as u8
        })
    };
    let u16s = || {
        interleave(p, &map, |v, k| {
            quantise::to_steps(v, 65535.0, quantise::noise(dithered, k)) as u16
        })
    };
    let f32s = || interleave(p, &map, |v, _| v);
    let image = match target {
        ColorType::L8 => DynamicImage::ImageLuma8(buf(w, h, u8s())),
        ColorType::La8 => DynamicImage::ImageLumaA8(buf(w, h, u8s())),
        ColorType::Rgb8 => DynamicImage::ImageRgb8(buf(w, h, u8s())),
        ColorType::Rgba8 => DynamicImage::ImageRgba8(buf(w, h, u8s())),
        ColorType::L16 => DynamicImage::ImageLuma16(buf(w, h, u16s())),
        ColorType::La16 => DynamicImage::ImageLumaA16(buf(w, h, u16s())),
        ColorType::Rgb16 => DynamicImage::ImageRgb16(buf(w, h, u16s())),
        ColorType::Rgba16 => DynamicImage::ImageRgba16(buf(w, h, u16s())),
        ColorType::Rgb32F => DynamicImage::ImageRgb32F(buf(w, h, f32s())),
        _ => DynamicImage::ImageRgba32F(buf(w, h, f32s())),
    };
    Converted {
        image,
        clipped,
        dithered,
    }
}

/// Which of `channels` planes (in `source`'s layout) feeds each channel of `target`: colour
/// from colour (gray repeated into RGB, RGB's first into gray), alpha from alpha, or
/// `usize::MAX` (opaque) where the source has none.
fn plane_map(channels: usize, source: ColorType, target: ColorType) -> Vec<usize> {
    let src_colour = channels - source.has_alpha() as usize;
    let tgt_colour = target.channel_count() as usize - target.has_alpha() as usize;
    let mut map: Vec<usize> = (0..tgt_colour).map(|c| c.min(src_colour - 1)).collect();
    if target.has_alpha() {
        map.push(if source.has_alpha() {
            channels - 1
        } else {
            usize::MAX
        });
    }
    map
}

/// Samples of the planes `map` names (each once) outside [0, 1].
fn count_mapped_outside(p: &Planar, map: &[usize]) -> usize {
    let plane = p.plane_len();
    let mut planes: Vec<usize> = map.iter().copied().filter(|&c| c != usize::MAX).collect();
    planes.dedup();
    planes
        .iter()
        .map(|&c| quantise::count_outside(&p.data[c * plane..(c + 1) * plane]))
        .sum()
}

/// Converts a finished image to colour type `target` the way `from_planar` would: alpha
/// dropped or made opaque, gray spread to RGB, depth changed with clamping and rounding.
#[cfg(test)]
pub fn convert(image: DynamicImage, target: ColorType) -> DynamicImage {
    convert_with(image, target, false).image
}

/// `convert`, counting the float samples an integer `target` clips and dithering as
/// `from_planar_with` does. Float sources, and integer ones being dithered, go through f32 in
/// `target`'s layout; the rest through the `image` crate's conversions.
pub fn convert_with(image: DynamicImage, target: ColorType, dither: bool) -> Converted {
    let source = image.color();
    let dithered = dithers(dither, source, target);
    if !is_integer(target) || (is_integer(source) && !dithered) {
        let image = match target {
            ColorType::L8 => image.to_luma8().into(),
            ColorType::La8 => image.to_luma_alpha8().into(),
            ColorType::Rgb8 => image.to_rgb8().into(),
            ColorType::Rgba8 => image.to_rgba8().into(),
            ColorType::L16 => image.to_luma16().into(),
            ColorType::La16 => image.to_luma_alpha16().into(),
            ColorType::Rgb16 => image.to_rgb16().into(),
            ColorType::Rgba16 => image.to_rgba16().into(),
            ColorType::Rgb32F => image.to_rgb32f().into(),
            _ => image.to_rgba32f().into(),
        };
        return Converted {
            image,
            clipped: 0,
            dithered: false,
        };
    }
    let (w, h) = (image.width(), image.height());
    let floats: Vec<f32> = match target.channel_count() {
        1 => image.to_luma32f().into_raw(),
        2 => image.to_luma_alpha32f().into_raw(),
        3 => image.to_rgb32f().into_raw(),
        _ => image.to_rgba32f().into_raw(),
    };
    drop(image);
    let clipped = if is_integer(source) {
        0
    } else {
        quantise::count_outside(&floats)
    };
    let image = if sample_bits(target) == 8 {
        let q = quantise::quantise_u8(&floats, dithered);
        match target {
            ColorType::L8 => DynamicImage::ImageLuma8(buf(w, h, q)),
            ColorType::La8 => DynamicImage::ImageLumaA8(buf(w, h, q)),
            ColorType::Rgb8 => DynamicImage::ImageRgb8(buf(w, h, q)),
            _ => DynamicImage::ImageRgba8(buf(w, h, q)),
        }
    } else {
        let q = quantise::quantise_u16(&floats, dithered);
        match target {
            ColorType::L16 => DynamicImage::ImageLuma16(buf(w, h, q)),
            ColorType::La16 => DynamicImage::ImageLumaA16(buf(w, h, q)),
            ColorType::Rgb16 => DynamicImage::ImageRgb16(buf(w, h, q)),
            _ => DynamicImage::ImageRgba16(buf(w, h, q)),
        }
    };
    Converted {
        image,
        clipped,
        dithered,
    }
}

/// Prepares an RGB float image for Radiance HDR (RGBE: one shared 8-bit exponent, 8-bit
/// mantissas, no sign): negative samples become 0, and so do magnitudes below 2^-126, whose
/// exponent the `image` crate's encoder would wrap around to a huge one. Returns how many
/// negative samples there were.
pub fn for_rgbe(image: &mut DynamicImage) -> usize {
    let DynamicImage::ImageRgb32F(b) = image else {
        return 0;
    };
    let samples: &mut [f32] = b.as_mut();
    samples
        .par_iter_mut()
        .map(|v| {
            let negative = *v < 0.0;
            if negative || *v < f32::MIN_POSITIVE {
                *v = 0.0;
            }
            negative as usize
        })
        .sum()
}

fn buf<P: image::Pixel>(
    w: u32,
    h: u32,
    data: Vec<P::Subpixel>,
) -> ImageBuffer<P, Vec<P::Subpixel>> {
    ImageBuffer::from_raw(w, h, data).expect("planar image and buffer sizes agree")
}

fn split<T: Copy + Sync>(
    raw: &[T],
    w: usize,
    h: usize,
    ch: usize,
    f: impl Fn(T) -> f32 + Sync,
) -> Planar {
    let mut p = Planar::new(w, h, ch);
    let plane = w * h;
    if plane == 0 {
        return p;
    }
    p.data
        .par_chunks_mut(plane)
        .enumerate()
        .for_each(|(c, out)| {
            out.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
                let src = &raw[y * w * ch..(y + 1) * w * ch];
                for (x, v) in row.iter_mut().enumerate() {
                    *v = f(src[x * ch + c]);
                }
            })
        });
    p
}

/// Interleaves planes per `map` (usize::MAX = opaque alpha) into samples of type `T`; `f`
/// takes each value and its index in the interleaved output.
fn interleave<T: Copy + Send + Default>(
    p: &Planar,
    map: &[usize],
    f: impl Fn(f32, usize) -> T + Sync,
) -> Vec<T> {
    let (w, ch, plane) = (p.width, map.len(), p.plane_len());
    let mut out = vec![T::default(); plane * ch];
    if plane == 0 {
        return out;
    }
    out.par_chunks_mut(w * ch).enumerate().for_each(|(y, row)| {
        for (c, &src) in map.iter().enumerate() {
            for x in 0..w {
                let v = if src == usize::MAX {
                    1.0
                } else {
                    p.data[src * plane + y * w + x]
                };
                row[x * ch + c] = f(v, (y * w + x) * ch + c);
            }
        }
    });
    out
}

/// Every 8-bit sample's f32 value, sRGB-decoded when `linear`: the table the device kernels
/// convert 8-bit images with, so that they agree with `to_planar` bit for bit.
pub fn u8_lut(linear: bool) -> [f32; 256] {
    std::array::from_fn(|k| {
        let v = u8_to_f32(k as u8);
        if linear {
            srgb_to_linear(v)
        } else {
            v
        }
    })
}

fn u8_to_f32(v: u8) -> f32 {
    v as f32 * (1.0 / 255.0)
}

fn u16_to_f32(v: u16) -> f32 {
    v as f32 * (1.0 / 65535.0)
}

/// The sRGB transfer functions (IEC 61966-2-1).
pub fn srgb_to_linear(v: f32) -> f32 {
    if v <= 0.04045 {
        v / 12.92
    } else {
        ((v + 0.055) / 1.055).powf(2.4)
    }
}

pub fn linear_to_srgb(v: f32) -> f32 {
    if v <= 0.0031308 {
        v * 12.92
    } else {
        1.055 * v.powf(1.0 / 2.4) - 0.055
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_integer_type() {
        let rgba = image::RgbaImage::from_fn(5, 3, |x, y| {
            image::Rgba([x as u8 * 50, y as u8 * 80, 7, 200])
        });
        let img = DynamicImage::ImageRgba8(rgba);
        for color in [
            ColorType::L8,
            ColorType::La8,
            ColorType::Rgb8,
            ColorType::Rgba8,
            ColorType::L16,
            ColorType::La16,
            ColorType::Rgb16,
            ColorType::Rgba16,
        ] {
            let src = match color {
                ColorType::L8 => DynamicImage::ImageLuma8(img.to_luma8()),
                ColorType::La8 => DynamicImage::ImageLumaA8(img.to_luma_alpha8()),
                ColorType::Rgb8 => DynamicImage::ImageRgb8(img.to_rgb8()),
                ColorType::Rgba8 => img.clone(),
                ColorType::L16 => DynamicImage::ImageLuma16(img.to_luma16()),
                ColorType::La16 => DynamicImage::ImageLumaA16(img.to_luma_alpha16()),
                ColorType::Rgb16 => DynamicImage::ImageRgb16(img.to_rgb16()),
                _ => DynamicImage::ImageRgba16(img.to_rgba16()),
            };
            for linear in [false, true] {
                let (mut p, layout) = to_planar(&src, linear);
                finish_planar(&mut p, layout);
                let back = from_planar(&p, layout.color, color);
                assert_eq!(back, src, "{color:?} linear={linear}");
            }
        }
    }

    #[test]
    fn alpha_is_premultiplied() {
        let img = DynamicImage::ImageRgba8(image::RgbaImage::from_pixel(
            1,
            1,
            image::Rgba([255, 0, 0, 51]),
        ));
        let (p, _) = to_planar(&img, false);
        assert!((p.data[0] - 0.2).abs() < 1e-6);
        assert!((p.data[3] - 0.2).abs() < 1e-6);
    }

    #[test]
    fn dropping_alpha_and_spreading_gray() {
        let img = DynamicImage::ImageLumaA8(image::GrayAlphaImage::from_pixel(
            2,
            1,
            image::LumaA([90, 255]),
        ));
        let (mut p, layout) = to_planar(&img, false);
        finish_planar(&mut p, layout);
        let rgb = from_planar(&p, layout.color, ColorType::Rgb8);
        assert_eq!(rgb.to_rgb8().get_pixel(1, 0).0, [90, 90, 90]);
    }
}

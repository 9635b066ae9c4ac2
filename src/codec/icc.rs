//! What gblur does with an image's ICC profile, through moxcms (the colour engine the `image`
//! crate uses): reads its transfer curve, for `--linear` to say where it is not sRGB's, and
//! converts CMYK pixels to sRGB through it: relative colorimetric, as `vips icc_transform`
//! defaults to, or, where the profile has no table for it, its perceptual table (A2B0), which
//! is where Little CMS turns in that case too. A CMYK profile describes what its inks print as; without it
//! the decoders' formula (R = (1 − C)(1 − K), ...) is what gblur falls back to, with a note.

use image::{DynamicImage, ImageBuffer, Rgb};
use moxcms::{
    CmsError, ColorProfile, DataColorSpace, Layout, ProfileText, RenderingIntent, TransformOptions,
};
use rayon::prelude::*;

/// The colour space a profile's header names (bytes 16 to 20: `RGB `, `GRAY`, `CMYK`, ...),
/// read without parsing the rest.
pub fn data_space(profile: &[u8]) -> Option<&[u8]> {
    profile.get(16..20)
}

/// How far (relative, `linear_off`) a transfer curve may be from sRGB's and count as it.
const SRGB_CURVE: f32 = 0.03;

/// A CMYK image's inks, four samples a pixel from 0 (no ink) to full ink.
pub enum Inks {
    Eight(Vec<u8>),
    Sixteen(Vec<u16>),
}

/// `inks` (`width`×`height` pixels) as sRGB through `profile`, at their own depth (8-bit
/// inks give 8-bit RGB, 16-bit inks 16-bit RGB), with the name of the rendering intent used.
/// An error names what moxcms refused.
pub fn cmyk_to_srgb(
    width: u32,
    height: u32,
    inks: &Inks,
    profile: &[u8],
) -> Result<(DynamicImage, &'static str), String> {
    let source = ColorProfile::new_from_slice(profile).map_err(|e| cms(&e))?;
    if source.color_space != DataColorSpace::Cmyk {
        return Err("the profile is not for CMYK".into());
    }
    let relative = to_srgb_as(
        width,
        height,
        inks,
        &source,
        RenderingIntent::RelativeColorimetric,
    );
    match relative {
        Ok(image) => Ok((image, "relative colorimetric")),
        Err(_) => to_srgb_as(width, height, inks, &source, RenderingIntent::Perceptual)
            .map(|image| (image, "perceptual, where relative colorimetric was refused")),
    }
}

fn to_srgb_as(
    width: u32,
    height: u32,
    inks: &Inks,
    source: &ColorProfile,
    rendering_intent: RenderingIntent,
) -> Result<DynamicImage, String> {
    let srgb = ColorProfile::new_srgb();
    let options = TransformOptions {
        rendering_intent,
        ..TransformOptions::default()
    };
    let fail = |e: CmsError| cms(&e);
    let image = match inks {
        Inks::Eight(samples) => {
            let t = source
                .create_transform_8bit(Layout::Rgba, &srgb, Layout::Rgb, options)
                .map_err(fail)?;
            let rgb = convert(samples, (4, 3), |s, d| t.transform(s, d))?;
            ImageBuffer::<Rgb<u8>, _>::from_raw(width, height, rgb).map(DynamicImage::from)
        }
        Inks::Sixteen(samples) => {
            let t = source
                .create_transform_16bit(Layout::Rgba, &srgb, Layout::Rgb, options)
                .map_err(fail)?;
            let rgb = convert(samples, (4, 3), |s, d| t.transform(s, d))?;
            ImageBuffer::<Rgb<u16>, _>::from_raw(width, height, rgb).map(DynamicImage::from)
        }
    };
    image.ok_or_else(|| "fewer ink samples than the image's size".into())
}

/// Converts `image` from its ICC profile (`icc`) to sRGB in place for `--to-srgb`, taking the
/// profile away; returns the note that says so. Nothing changes where there is no profile
/// (untagged is sRGB), it already has sRGB's colours and curves, or it is not for RGB (a gray
/// or CMYK profile over RGB samples: the decoder's notes speak of those). A gray image, a
/// float one (linear light, which a profile's curves do not describe, and values over 1 that
/// the colour engine would clip) and a profile the colour engine refuses keep the profile,
/// with a note. 8- and 16-bit RGB, with alpha (kept as it is), relative colorimetric.
pub fn to_srgb(image: &mut DynamicImage, icc: &mut Option<Vec<u8>>) -> Option<String> {
    let profile = icc.as_deref()?;
    let p = match ColorProfile::new_from_slice(profile) {
        Ok(p) => p,
        Err(e) => return Some(format!("--to-srgb: kept the ICC profile: {}", cms(&e))),
    };
    if p.color_space != DataColorSpace::Rgb || is_srgb(&p) {
        return None;
    }
    if !image.color().has_color() {
        return Some("--to-srgb converts colour images: this gray one keeps its profile".into());
    }
    if !crate::pixels::is_integer(image.color()) {
        return Some("--to-srgb converts 8- and 16-bit images: float samples are linear light, which the profile's curves do not describe, and keep the profile".into());
    }
    let name = p
        .description
        .as_ref()
        .and_then(text)
        .unwrap_or_else(|| "no name".into());
    match rgb_to_srgb(image, &p) {
        Ok(()) => {
            *icc = None;
            Some(format!(
                "--to-srgb: converted from its ICC profile ({name}) to sRGB (relative colorimetric); the output carries no profile"
            ))
        }
        Err(why) => Some(format!("--to-srgb: kept the ICC profile ({name}): {why}")),
    }
}

/// Whether `--to-srgb` converts an image of colour samples that carries `profile` (one for
/// RGB that is not sRGB's): the strip engine leaves those to the whole-image path.
pub fn converts(profile: &[u8]) -> bool {
    ColorProfile::new_from_slice(profile)
        .is_ok_and(|p| p.color_space == DataColorSpace::Rgb && !is_srgb(&p))
}

/// Whether `p` has sRGB's colorants (within 0.002) and transfer curves (`linear_off`).
fn is_srgb(p: &ColorProfile) -> bool {
    let srgb = ColorProfile::new_srgb();
    let near = |a: moxcms::Xyzd, b: moxcms::Xyzd| {
        (a.x - b.x).abs() < 2e-3 && (a.y - b.y).abs() < 2e-3 && (a.z - b.z).abs() < 2e-3
    };
    near(p.red_colorant, srgb.red_colorant)
        && near(p.green_colorant, srgb.green_colorant)
        && near(p.blue_colorant, srgb.blue_colorant)
        && [&p.red_trc, &p.green_trc, &p.blue_trc].iter().all(|c| {
            c.as_ref()
                .and_then(linear_off)
                .is_some_and(|off| off < SRGB_CURVE)
        })
}

/// `image`'s samples through `source` to sRGB, replacing them.
fn rgb_to_srgb(image: &mut DynamicImage, source: &ColorProfile) -> Result<(), String> {
    let srgb = ColorProfile::new_srgb();
    let options = TransformOptions {
        rendering_intent: RenderingIntent::RelativeColorimetric,
        ..TransformOptions::default()
    };
    let fail = |e: CmsError| cms(&e);
    let (w, h) = (image.width(), image.height());
    let layout = match image.color().has_alpha() {
        true => Layout::Rgba,
        false => Layout::Rgb,
    };
    let n = layout.channels();
    let converted = match image {
        DynamicImage::ImageRgb8(_) | DynamicImage::ImageRgba8(_) => {
            let t = source
                .create_transform_8bit(layout, &srgb, layout, options)
                .map_err(fail)?;
            let out = convert(image.as_bytes(), (n, n), |s, d| t.transform(s, d))?;
            match n {
                3 => image::RgbImage::from_raw(w, h, out).map(DynamicImage::from),
                _ => image::RgbaImage::from_raw(w, h, out).map(DynamicImage::from),
            }
        }
        DynamicImage::ImageRgb16(_) | DynamicImage::ImageRgba16(_) => {
            let t = source
                .create_transform_16bit(layout, &srgb, layout, options)
                .map_err(fail)?;
            let samples: &[u16] = match image {
                DynamicImage::ImageRgb16(b) => b,
                DynamicImage::ImageRgba16(b) => b,
                _ => unreachable!("matched above"),
            };
            let out = convert(samples, (n, n), |s, d| t.transform(s, d))?;
            match n {
                3 => ImageBuffer::<Rgb<u16>, _>::from_raw(w, h, out).map(DynamicImage::from),
                _ => {
                    ImageBuffer::<image::Rgba<u16>, _>::from_raw(w, h, out).map(DynamicImage::from)
                }
            }
        }
        _ => return Err("a sample type the colour engine does not convert".into()),
    };
    *image = converted.ok_or("the converted samples did not fill the image")?;
    Ok(())
}

/// How far a transfer curve is from sRGB's: the largest relative difference of the light it
/// gives at every 32nd of the range. None where moxcms cannot evaluate it.
fn linear_off(curve: &moxcms::ToneReprCurve) -> Option<f32> {
    let linear = curve.make_linear_evaluator().ok()?;
    let srgb = crate::pixels::srgb_to_linear;
    // Relative: gamma 2.2 is within 0.004 of sRGB's curve everywhere, but 37% darker at 10%.
    Some(
        (1..=32)
            .map(|i| i as f32 / 32.0)
            .map(|x| (linear.evaluate_value(x) / srgb(x) - 1.0).abs())
            .fold(0f32, f32::max),
    )
}

/// The note `--linear` owes an image whose ICC profile has another transfer curve than sRGB's,
/// which `--linear` decodes every integer input with. None where the profile's curve is
/// sRGB's (within 3% of its light at every 32nd of the range), where it has no curve per
/// channel (a lookup-table profile) and where moxcms cannot read it.
pub fn linear_note(profile: &[u8]) -> Option<String> {
    let p = ColorProfile::new_from_slice(profile).ok()?;
    let curve = p.red_trc.as_ref().or(p.gray_trc.as_ref())?;
    if linear_off(curve)? < SRGB_CURVE {
        return None;
    }
    let linear = curve.make_linear_evaluator().ok()?;
    let name = p
        .description
        .as_ref()
        .and_then(text)
        .unwrap_or_else(|| "no name".into());
    let gamma = linear.evaluate_value(0.5).ln() / 0.5f32.ln();
    Some(match (gamma - 1.0).abs() < 0.05 {
        true => format!(
            "--linear decoded sRGB's transfer curve from samples whose ICC profile ({name}) says they are linear light already: leave --linear out for them"
        ),
        false => format!(
            "--linear decoded the samples with sRGB's transfer curve, but their ICC profile ({name}) has another (about gamma {gamma:.1}): the light the blur averaged is approximate"
        ),
    })
}

/// A profile text's first string, where it has one.
fn text(t: &ProfileText) -> Option<String> {
    let s = match t {
        ProfileText::PlainString(s) => s.clone(),
        ProfileText::Localizable(v) => v.first()?.value.clone(),
        ProfileText::Description(d) => d.ascii_string.clone(),
    };
    let s = s.trim_matches(char::from(0)).trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn cms(e: &CmsError) -> String {
    format!("the colour engine refused the profile: {e}")
}

/// Pixels converted per work item: a few hundred kilobytes of samples each.
const BLOCK: usize = 1 << 16;

/// `from` samples a pixel to `to`, by `transform` over blocks of pixels on every core.
fn convert<T: Copy + Default + Send + Sync>(
    samples: &[T],
    (from, to): (usize, usize),
    transform: impl Fn(&[T], &mut [T]) -> Result<(), CmsError> + Sync,
) -> Result<Vec<T>, String> {
    let mut out = vec![T::default(); samples.len() / from * to];
    out.par_chunks_mut(BLOCK * to)
        .zip(samples.par_chunks(BLOCK * from))
        .try_for_each(|(out, samples)| transform(&samples[..out.len() / to * from], out))
        .map_err(|e| cms(&e))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_for_other_colours_or_none_at_all_is_an_error() {
        let inks = Inks::Eight(vec![0; 16]);
        assert!(cmyk_to_srgb(2, 2, &inks, b"not a profile").is_err());
        let rgb = ColorProfile::new_srgb().encode().unwrap();
        let why = cmyk_to_srgb(2, 2, &inks, &rgb).unwrap_err();
        assert!(why.contains("not for CMYK"), "{why}");
    }

    #[test]
    fn linear_light_is_named_where_the_profile_has_another_curve_than_srgb() {
        let srgb = ColorProfile::new_srgb().encode().unwrap();
        assert_eq!(linear_note(&srgb), None);
        let adobe = ColorProfile::new_adobe_rgb().encode().unwrap();
        let note = linear_note(&adobe).unwrap();
        assert!(note.contains("about gamma 2.2"), "{note}");
        let mut linear = ColorProfile::new_srgb();
        let one = moxcms::curve_from_gamma(1.0);
        (linear.red_trc, linear.green_trc, linear.blue_trc) =
            (Some(one.clone()), Some(one.clone()), Some(one));
        let note = linear_note(&linear.encode().unwrap()).unwrap();
        assert!(note.contains("linear light already"), "{note}");
        assert_eq!(linear_note(b"not a profile"), None);
    }
}

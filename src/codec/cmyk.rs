//! CMYK pixels to sRGB through the image's own ICC profile, with moxcms (the colour engine
//! the `image` crate uses): relative colorimetric, as `vips icc_transform` defaults to, or,
//! where the profile has no table for it, its perceptual table (A2B0), which is where Little
//! CMS turns in that case too. A CMYK profile describes what its inks print as; without it
//! the decoders' formula (R = (1 − C)(1 − K), ...) is what gblur falls back to, with a note.

use image::{DynamicImage, ImageBuffer, Rgb};
use moxcms::{CmsError, ColorProfile, DataColorSpace, Layout, RenderingIntent, TransformOptions};
use rayon::prelude::*;

/// A CMYK image's inks, four samples a pixel from 0 (no ink) to full ink.
pub enum Inks {
    Eight(Vec<u8>),
    Sixteen(Vec<u16>),
}

/// `inks` (`width`×`height` pixels) as sRGB through `profile`, at their own depth (8-bit
/// inks give 8-bit RGB, 16-bit inks 16-bit RGB), with the name of the rendering intent used.
/// An error names what moxcms refused.
pub fn to_srgb(
    width: u32,
    height: u32,
    inks: &Inks,
    profile: &[u8],
) -> Result<(DynamicImage, &'static str), String> {
    let source = ColorProfile::new_from_slice(profile).map_err(|e| cms(&e))?;
    if source.color_space != DataColorSpace::Cmyk {
        return Err("the profile is not for CMYK".into());
    }
    let relative = to_srgb_as(width, height, inks, &source, RenderingIntent::RelativeColorimetric);
    match relative {
        Ok(image) => Ok((image, "relative colorimetric")),
        Err(_) => to_srgb_as(width, height, inks, &source, RenderingIntent::Perceptual)
            .map(|image| (image, "its perceptual table, the only one it has")),
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
            let rgb = convert(samples, |s, d| t.transform(s, d))?;
            ImageBuffer::<Rgb<u8>, _>::from_raw(width, height, rgb).map(DynamicImage::from)
        }
        Inks::Sixteen(samples) => {
            let t = source
                .create_transform_16bit(Layout::Rgba, &srgb, Layout::Rgb, options)
                .map_err(fail)?;
            let rgb = convert(samples, |s, d| t.transform(s, d))?;
            ImageBuffer::<Rgb<u16>, _>::from_raw(width, height, rgb).map(DynamicImage::from)
        }
    };
    image.ok_or_else(|| "fewer ink samples than the image's size".into())
}

fn cms(e: &CmsError) -> String {
    format!("the colour engine refused the profile: {e}")
}

/// Pixels converted per work item: a few hundred kilobytes of samples each.
const BLOCK: usize = 1 << 16;

/// Four samples a pixel to three, by `transform` over blocks of pixels on every core.
fn convert<T: Copy + Default + Send + Sync>(
    inks: &[T],
    transform: impl Fn(&[T], &mut [T]) -> Result<(), CmsError> + Sync,
) -> Result<Vec<T>, String> {
    let mut rgb = vec![T::default(); inks.len() / 4 * 3];
    rgb.par_chunks_mut(BLOCK * 3)
        .zip(inks.par_chunks(BLOCK * 4))
        .try_for_each(|(out, inks)| transform(&inks[..out.len() / 3 * 4], out))
        .map_err(|e| cms(&e))?;
    Ok(rgb)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_for_other_colours_or_none_at_all_is_an_error() {
        let inks = Inks::Eight(vec![0; 16]);
        assert!(to_srgb(2, 2, &inks, b"not a profile").is_err());
        let rgb = ColorProfile::new_srgb().encode().unwrap();
        let why = to_srgb(2, 2, &inks, &rgb).unwrap_err();
        assert!(why.contains("not for CMYK"), "{why}");
    }
}

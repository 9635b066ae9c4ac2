//! WebP through libwebp, which the `webp` crate's `libwebp-sys` builds from its own C source
//! (no system library). Lossy output (`--quality N`): the `image` crate writes WebP lossless
//! only, which stays the default; gray is written as RGB (WebP has no gray), alpha losslessly
//! beside the lossy colour, the ICC profile in an `ICCP` chunk. Input: a still image's pixels,
//! which libwebp decodes faster than the `image` crate (`docs/BENCHMARKS.md`); the header and
//! metadata are still the crate's.

use image::DynamicImage;

/// The effort libwebp spends (0 fastest to 6 smallest): its own default, as `cwebp` uses.
const METHOD: i32 = 4;

/// `image` (8-bit gray, gray with alpha, RGB or RGBA, as `codec::output_color` leaves it for
/// WebP) as a lossy WebP at `quality` (1 to 100), with `icc` where given.
pub fn encode_lossy(image: &DynamicImage, quality: u8, icc: Option<&[u8]>) -> Result<Vec<u8>, String> {
    let (w, h) = (image.width(), image.height());
    let colour;
    let image = match image {
        DynamicImage::ImageLuma8(_) => {
            colour = DynamicImage::ImageRgb8(image.to_rgb8());
            &colour
        }
        DynamicImage::ImageLumaA8(_) => {
            colour = DynamicImage::ImageRgba8(image.to_rgba8());
            &colour
        }
        other => other,
    };
    let encoder = match image {
        DynamicImage::ImageRgb8(i) => webp::Encoder::from_rgb(i.as_raw(), w, h),
        DynamicImage::ImageRgba8(i) => webp::Encoder::from_rgba(i.as_raw(), w, h),
        other => return Err(format!("lossy WebP takes 8-bit samples, not {:?}", other.color())),
    };
    let mut config = webp::WebPConfig::new().map_err(|()| "libwebp's configuration failed")?;
    config.quality = quality as f32;
    config.method = METHOD;
    // Alpha is kept exactly: the blur's alpha is part of the result, not a matte to approximate.
    config.alpha_quality = 100;
    config.thread_level = 1;
    let encoded = encoder
        .encode_advanced(&config)
        .map_err(|e| format!("libwebp: {e:?}"))?;
    let bytes = encoded.to_vec();
    match icc {
        Some(profile) => super::metadata::webp_icc(bytes, profile),
        None => Ok(bytes),
    }
}

/// The pixels of the still WebP `bytes`, whose header (read by the `image` crate) says `size`
/// and `alpha`: RGB or RGBA, as the crate decodes them. None where libwebp does not decode it
/// as that (an animation), or it would hand over another size.
pub fn decode(bytes: &[u8], size: (u32, u32), alpha: bool) -> Option<DynamicImage> {
    let decoded = webp::Decoder::new(bytes).decode()?;
    if (decoded.width(), decoded.height()) != size || decoded.is_alpha() != alpha {
        return None;
    }
    let (w, h) = size;
    match alpha {
        true => image::RgbaImage::from_raw(w, h, decoded.to_vec()).map(DynamicImage::ImageRgba8),
        false => image::RgbImage::from_raw(w, h, decoded.to_vec()).map(DynamicImage::ImageRgb8),
    }
}

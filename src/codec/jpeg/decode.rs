//! JPEG pixels through `libjpeg-turbo-rs`, a pure-Rust port of libjpeg-turbo with its SIMD
//! paths: it decodes a photo in about half the time of the `image` crate's decoder
//! (docs/BENCHMARKS.md, "JPEG codecs"). It takes the common layouts, 8-bit gray, YCbCr and
//! RGB; everything else (CMYK, YCCK, 12-bit, a file it refuses or decodes only with
//! warnings) is left to the `image` crate, whose decoder also reads the header, the metadata
//! and the orientation, so behaviour on unusual and damaged files stays the `image` crate's.

use image::{DynamicImage, GrayImage, RgbImage};
use libjpeg_turbo_rs::{ColorSpace, DecodeLimits, Decoder, PixelFormat};

/// The pixels of `bytes` as 8-bit gray or RGB, or None where the `image` crate should decode
/// them instead. `max_bytes` bounds the decoder's working memory.
pub fn decode_pixels(bytes: &[u8], max_bytes: u64) -> Option<DynamicImage> {
    let limits = DecodeLimits {
        max_memory: Some(max_bytes),
        ..DecodeLimits::default()
    };
    let mut decoder = Decoder::new_with_limits(bytes, limits).ok()?;
    if decoder.header().precision != 8 {
        return None;
    }
    let format = match decoder.jpeg_color_space() {
        ColorSpace::Grayscale => PixelFormat::Grayscale,
        ColorSpace::YCbCr | ColorSpace::Rgb => PixelFormat::Rgb,
        _ => return None,
    };
    decoder.set_output_format(format);
    decoder.set_stop_on_warning(true);
    let image = decoder.decode_image().ok()?;
    if !image.warnings.is_empty() || image.pixel_format != format {
        return None;
    }
    let (w, h) = (
        u32::try_from(image.width).ok()?,
        u32::try_from(image.height).ok()?,
    );
    match format {
        PixelFormat::Grayscale => GrayImage::from_raw(w, h, image.data).map(DynamicImage::from),
        _ => RgbImage::from_raw(w, h, image.data).map(DynamicImage::from),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn photo(w: u32, h: u32) -> RgbImage {
        RgbImage::from_fn(w, h, |x, y| {
            image::Rgb([
                (x * 255 / w) as u8,
                (y * 255 / h) as u8,
                ((x * 7 + y * 13) % 256) as u8,
            ])
        })
    }

    fn encode_with_image(img: &DynamicImage, quality: u8) -> Vec<u8> {
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_with_encoder(image::codecs::jpeg::JpegEncoder::new_with_quality(
            &mut out, quality,
        ))
        .unwrap();
        out.into_inner()
    }

    /// The same picture as the `image` crate's decoder, within the spread two conforming
    /// decoders' chroma upsampling and IDCT rounding allow.
    #[test]
    fn decodes_like_the_image_crate() {
        for img in [
            DynamicImage::from(photo(67, 45)),
            DynamicImage::from(DynamicImage::from(photo(33, 80)).to_luma8()),
        ] {
            let jpeg = encode_with_image(&img, 85);
            let ours = decode_pixels(&jpeg, 1 << 30).expect("a plain JPEG");
            let theirs = image::load_from_memory(&jpeg).unwrap();
            assert_eq!(ours.color(), theirs.color());
            assert_eq!(ours.dimensions(), theirs.dimensions());
            let worst = ours
                .as_bytes()
                .iter()
                .zip(theirs.as_bytes())
                .map(|(a, b)| a.abs_diff(*b))
                .max()
                .unwrap();
            assert!(worst <= 8, "{worst}");
        }
    }

    #[test]
    fn damaged_files_are_left_to_the_image_crate() {
        let jpeg = encode_with_image(&DynamicImage::from(photo(64, 64)), 90);
        let sos = jpeg.windows(2).position(|w| w == [0xFF, 0xDA]).unwrap();
        for cut in [10, sos, sos + 40, jpeg.len() / 2] {
            assert!(
                decode_pixels(&jpeg[..cut], 1 << 30).is_none(),
                "cut at {cut}"
            );
        }
        assert!(
            decode_pixels(&jpeg, 1000).is_none(),
            "over the memory limit"
        );
    }

    use image::GenericImageView as _;
    use proptest::prelude::*;

    fn seeds() -> Vec<Vec<u8>> {
        let img = DynamicImage::from(photo(40, 24));
        let rgb = img.to_rgb8();
        let progressive = libjpeg_turbo_rs::Encoder::new(&rgb, 40, 24, PixelFormat::Rgb)
            .quality(80)
            .progressive(true)
            .encode()
            .unwrap();
        vec![
            encode_with_image(&img, 90),
            encode_with_image(&DynamicImage::from(img.to_luma8()), 70),
            crate::codec::jpeg::encode(
                &rgb,
                (40, 24),
                crate::codec::jpeg::JpegColor::Rgb,
                75,
                None,
            )
            .unwrap(),
            progressive,
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        /// Damaged files (bytes overwritten, cut short, spliced) never panic the decoder, and
        /// what it accepts has the size its header declares.
        #[test]
        fn damaged_files_never_panic(
            which in 0usize..4,
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..12),
            cut in any::<prop::sample::Index>(),
            shorten in any::<bool>(),
        ) {
            let mut jpeg = seeds().swap_remove(which);
            for (at, byte) in edits {
                let i = at.index(jpeg.len());
                jpeg[i] = byte;
            }
            if shorten {
                jpeg.truncate(cut.index(jpeg.len()).max(2));
            }
            if let Some(img) = decode_pixels(&jpeg, 64 << 20) {
                let info = libjpeg_turbo_rs::Decoder::new(&jpeg).unwrap();
                let h = info.header();
                prop_assert_eq!((img.width(), img.height()), (h.width as u32, h.height as u32));
            }
        }
    }
}
